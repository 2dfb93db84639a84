package interp

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestExecuteLatency measures the in-process round trip of a trivial cell
// (median of 200) and of a bare yaegi Eval of the same code as the
// baseline, and checks the engine's overhead stays small.
func TestExecuteLatency(t *testing.T) {
	e := newEngine(t)
	run(t, e, "x := 1")
	median := func(f func()) time.Duration {
		d := make([]time.Duration, 200)
		for i := range d {
			t0 := time.Now()
			f()
			d[i] = time.Since(t0)
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	cell := median(func() {
		if r := e.Execute(context.Background(), engineReq("x + 1"), &recOutput{}); r.Value == nil {
			t.Fatal("no value")
		}
	})
	base := median(func() {
		if _, err := e.yi.EvalWithContext(context.Background(), "x + 1"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("trivial cell \"x + 1\": engine median %v, bare yaegi EvalWithContext median %v (%.1fx)", cell, base, float64(cell)/float64(base))
	if cell > 20*time.Millisecond {
		t.Errorf("a trivial cell takes %v (median of 200); want well under 20 ms", cell)
	}
}

func BenchmarkExecuteTrivial(b *testing.B) {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	out := &recOutput{}
	for i := 0; i < b.N; i++ {
		e.Execute(context.Background(), engineReq("1 + 1"), out)
	}
}

func BenchmarkBareYaegiEval(b *testing.B) {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		e.yi.EvalWithContext(context.Background(), "1 + 1")
	}
}

func BenchmarkNew(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := New(Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
