// Package benchlib is the Go peer's copy of bench/common/bench.{h,c}: the
// common flags (-w, --reps, --warmup), the timing loop (warm-up, timed
// repetitions, minor faults from getrusage) and the one-JSON-object-per-line
// output of issue 3. Keep it in step with the C version.
//
// -w W sets runtime.GOMAXPROCS(W), Go's documented knob for the number of
// OS threads running Go code at once. GOGC and the rest are left to the
// environment, as a Go user would.
package benchlib

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"syscall"
	"time"
)

// Args are the flags every program takes.
type Args struct {
	Workers int
	Reps    int
	Warmup  int
}

// Parse registers the common flags, parses the command line (the size flags
// must be registered on flag.CommandLine before), checks and applies -w.
func Parse() Args {
	var a Args
	flag.IntVar(&a.Workers, "w", 0, "workers: GOMAXPROCS (default: all CPUs)")
	flag.IntVar(&a.Reps, "reps", 5, "timed repetitions")
	flag.IntVar(&a.Warmup, "warmup", 1, "untimed repetitions first")
	flag.Parse()
	if a.Workers < 0 || a.Reps < 1 || a.Warmup < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "need -w >= 0, --reps >= 1, --warmup >= 0 and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	if a.Workers == 0 {
		a.Workers = runtime.NumCPU()
	}
	runtime.GOMAXPROCS(a.Workers)
	return a
}

func minflt() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return int64(ru.Minflt)
}

// TimeReps runs fn Warmup times untimed, then Reps times timed; returns the
// durations in seconds and the minor faults of the timed repetitions.
func TimeReps(a Args, fn func()) ([]float64, int64) {
	for i := 0; i < a.Warmup; i++ {
		fn()
	}
	times := make([]float64, a.Reps)
	f0 := minflt()
	for i := range times {
		t0 := time.Now()
		fn()
		times[i] = time.Since(t0).Seconds()
	}
	return times, minflt() - f0
}

// Field is one extra output field, in order.
type Field struct {
	Key   string
	Value interface{}
}

// Result holds the fields every program prints.
type Result struct {
	Bench   string
	Params  []Field
	Workers int
	Reps    int
	Tasks   uint64
	Times   []float64
	Result  int64
	Correct *bool // nil: no reference for these parameters
	Minflt  int64
}

func object(fields []Field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key)
		b.Write(k)
		b.WriteByte(':')
		if x, ok := f.Value.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			b.WriteString("null")
			continue
		}
		if raw, ok := f.Value.(json.RawMessage); ok {
			b.Write(raw)
			continue
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			panic(err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Print writes r and then the extra fields as one JSON line on stdout.
func Print(r Result, extra ...Field) {
	t := append([]float64(nil), r.Times...)
	sort.Float64s(t)
	n := len(t)
	med := t[n/2]
	if n%2 == 0 {
		med = 0.5 * (t[n/2-1] + t[n/2])
	}
	var correct interface{}
	if r.Correct != nil {
		correct = *r.Correct
	}
	fields := []Field{
		{"bench", r.Bench}, {"system", "go"},
		{"params", json.RawMessage(object(r.Params))},
		{"workers", r.Workers}, {"reps", r.Reps}, {"tasks", r.Tasks},
		{"seconds_median", med}, {"seconds_min", t[0]}, {"seconds_max", t[n-1]},
		{"ns_per_task", 1e9 * med / float64(r.Tasks)},
		{"result", r.Result}, {"correct", correct}, {"minflt", r.Minflt},
		{"go_version", runtime.Version()},
	}
	fields = append(fields, extra...)
	os.Stdout.Write(append(object(fields), '\n'))
}

// Bool returns a pointer to b (for Result.Correct).
func Bool(b bool) *bool { return &b }
