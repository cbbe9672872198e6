// Command nqueens is N-Queens on goroutines, the Go peer of
// build/bench/nqueens: one goroutine per legal placement, each with its own
// copy of the board; the parent waits (sync.WaitGroup) and sums.
package main

import (
	"flag"
	"sync"

	"swarm.bench/peers/go/benchlib"
)

const maxN = 20

type task struct {
	n, row    int
	board     [maxN]int8
	solutions int64
	tasks     uint64
}

func ok(board *[maxN]int8, row, col int) bool {
	for r := 0; r < row; r++ {
		c := int(board[r])
		if c == col || c-col == row-r || col-c == row-r {
			return false
		}
	}
	return true
}

func solve(t *task) {
	t.solutions, t.tasks = 0, 1
	if t.row == t.n {
		t.solutions = 1
		return
	}
	// One allocation per child (it escapes to its goroutine), not an
	// array of n per parent: most columns are not legal placements.
	children := make([]*task, 0, t.n)
	var wg sync.WaitGroup
	for col := 0; col < t.n; col++ {
		if !ok(&t.board, t.row, col) {
			continue
		}
		c := &task{n: t.n, row: t.row + 1}
		copy(c.board[:t.row], t.board[:t.row])
		c.board[t.row] = int8(col)
		children = append(children, c)
		wg.Add(1)
		go func() { solve(c); wg.Done() }()
	}
	wg.Wait()
	for _, c := range children {
		t.solutions += c.solutions
		t.tasks += c.tasks
	}
}

var reference = []int64{1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200,
	73712, 365596, 2279184, 14772512, 95815104, 666090624, 4968057848,
	39029188884}

func main() {
	n := flag.Int("n", 12, "board size")
	args := benchlib.Parse()
	if *n < 1 || *n > maxN {
		panic("-n must be in 1..20")
	}
	var root task
	times, minflt := benchlib.TimeReps(args, func() {
		root = task{n: *n}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { solve(&root); wg.Done() }()
		wg.Wait()
	})
	benchlib.Print(benchlib.Result{
		Bench: "nqueens", Params: []benchlib.Field{{Key: "n", Value: *n}},
		Workers: args.Workers, Reps: args.Reps, Tasks: root.tasks, Times: times,
		Result: root.solutions, Correct: benchlib.Bool(root.solutions == reference[*n]),
		Minflt: minflt,
	})
}
