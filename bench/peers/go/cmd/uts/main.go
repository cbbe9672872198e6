// Command uts is Unbalanced Tree Search on goroutines, the Go peer of
// build/bench/uts: one goroutine per node; a node computes its children's
// descriptors, starts a goroutine for each, waits (sync.WaitGroup) and sums.
package main

import (
	"sync"

	"swarm.bench/peers/go/benchlib"
)

type task struct {
	node     benchlib.UTSNode
	nodes    int64
	maxDepth int
}

var params *benchlib.UTSParams

func walk(t *task) {
	t.nodes, t.maxDepth = 1, t.node.Height
	k := params.NumChildren(&t.node)
	if k == 0 {
		return
	}
	child := make([]task, k)
	var wg sync.WaitGroup
	wg.Add(k)
	for i := range child {
		c := &child[i]
		params.Child(&t.node, i, &c.node)
		go func() { walk(c); wg.Done() }()
	}
	wg.Wait()
	for i := range child {
		t.nodes += child[i].nodes
		if child[i].maxDepth > t.maxDepth {
			t.maxDepth = child[i].maxDepth
		}
	}
}

func main() {
	params = benchlib.UTSFlags()
	args := benchlib.Parse()
	var root task
	times, minflt := benchlib.TimeReps(args, func() {
		root = task{node: params.Root()}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { walk(&root); wg.Done() }()
		wg.Wait()
	})
	ref := params.Reference()
	var correct *bool
	extra := []benchlib.Field{{Key: "max_depth", Value: root.maxDepth}}
	if ref != nil {
		correct = benchlib.Bool(root.nodes == ref.Nodes && root.maxDepth == ref.MaxDepth)
		extra = append(extra, benchlib.Field{Key: "reference_nodes", Value: ref.Nodes},
			benchlib.Field{Key: "reference_max_depth", Value: ref.MaxDepth})
	}
	benchlib.Print(benchlib.Result{
		Bench: "uts", Params: params.ParamsFields(), Workers: args.Workers,
		Reps: args.Reps, Tasks: uint64(root.nodes), Times: times,
		Result: root.nodes, Correct: correct, Minflt: minflt,
	}, extra...)
}
