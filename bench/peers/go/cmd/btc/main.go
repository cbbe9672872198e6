// Command btc is Binary Task Creation on goroutines, the Go peer of
// build/bench/btc: a full binary tree of goroutines of depth d.
package main

import (
	"flag"
	"sync"

	"swarm.bench/peers/go/benchlib"
)

func btc(d int) int64 {
	if d == 0 {
		return 1
	}
	var a, b int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { a = btc(d - 1); wg.Done() }()
	go func() { b = btc(d - 1); wg.Done() }()
	wg.Wait()
	return a + b
}

func main() {
	d := flag.Int("d", 20, "depth")
	args := benchlib.Parse()
	var leaves int64
	times, minflt := benchlib.TimeReps(args, func() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { leaves = btc(*d); wg.Done() }()
		wg.Wait()
	})
	benchlib.Print(benchlib.Result{
		Bench: "btc", Params: []benchlib.Field{{Key: "d", Value: *d}},
		Workers: args.Workers, Reps: args.Reps, Tasks: uint64(2)<<*d - 1,
		Times: times, Result: leaves, Correct: benchlib.Bool(leaves == int64(1)<<*d),
		Minflt: minflt,
	})
}
