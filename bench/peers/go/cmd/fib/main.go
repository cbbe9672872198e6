// Command fib is fib(n) on goroutines, the Go peer of build/bench/fib: every
// call is a goroutine (both children started with `go`, then a
// sync.WaitGroup wait; the root too), so tasks = calls = 2*F(n+1)-1.
package main

import (
	"flag"
	"sync"

	"swarm.bench/peers/go/benchlib"
)

func fib(n int) int64 {
	if n < 2 {
		return int64(n)
	}
	var a, b int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { a = fib(n - 1); wg.Done() }()
	go func() { b = fib(n - 2); wg.Done() }()
	wg.Wait()
	return a + b
}

func reference(n int) int64 {
	a, b := int64(0), int64(1)
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

func main() {
	n := flag.Int("n", 30, "fib(n)")
	args := benchlib.Parse()
	var result int64
	times, minflt := benchlib.TimeReps(args, func() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { result = fib(*n); wg.Done() }()
		wg.Wait()
	})
	calls := uint64(2*reference(*n+1) - 1)
	benchlib.Print(benchlib.Result{
		Bench: "fib", Params: []benchlib.Field{{Key: "n", Value: *n}},
		Workers: args.Workers, Reps: args.Reps, Tasks: calls, Times: times,
		Result: result, Correct: benchlib.Bool(result == reference(*n)),
		Minflt: minflt,
	}, benchlib.Field{Key: "n", Value: *n}, benchlib.Field{Key: "threads", Value: calls})
}
