package rowpass

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		n       int
		opt     Options
		nShards int
	}{
		{0, Options{Workers: 4}, 0},
		{-3, Options{Workers: 4}, 0},
		{10, Options{Workers: 4}, 1},                // below MinRows: inline
		{4095, Options{Workers: 4}, 1},              // 4095/2048 = 1 shard
		{4096, Options{Workers: 4}, 2},              // two shards of 2048
		{100000, Options{Workers: 4}, 4},            // capped by Workers
		{100, Options{Workers: 3, MinRows: 1}, 3},   // explicit MinRows
		{7, Options{Workers: 10, MinRows: 1}, 7},    // never more shards than rows
		{100, Options{Workers: 1, MinRows: 1}, 1},   // one worker
		{100, Options{Workers: 2, MinRows: 200}, 1}, // MinRows larger than n
	}
	for _, tt := range tests {
		s := Split(tt.n, tt.opt)
		if len(s) != tt.nShards {
			t.Errorf("Split(%d, %+v): %d shards, want %d", tt.n, tt.opt, len(s), tt.nShards)
			continue
		}
		next := 0
		for i, r := range s {
			if r.Lo != next || r.Hi <= r.Lo {
				t.Errorf("Split(%d, %+v): shard %d = %+v, want contiguous non-empty from %d", tt.n, tt.opt, i, r, next)
			}
			if size := r.Hi - r.Lo; size < tt.n/len(s) || size > tt.n/len(s)+1 {
				t.Errorf("Split(%d, %+v): shard %d has %d rows, unbalanced", tt.n, tt.opt, i, size)
			}
			next = r.Hi
		}
		if len(s) > 0 && next != tt.n {
			t.Errorf("Split(%d, %+v) ends at %d", tt.n, tt.opt, next)
		}
	}
}

// sumPass adds the float rows [lo,hi) of xs into a one-element accumulator.
func sumPass(xs []float64, opt Options) float64 {
	acc := Reduce(len(xs), opt, func() *float64 { return new(float64) },
		func(a *float64, lo, hi int) {
			for _, x := range xs[lo:hi] {
				*a += x
			}
		},
		func(into, from *float64) { *into += *from })
	return *acc
}

func TestReduceDeterministicAndCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 100003)
	exact := 0.0
	for i := range xs {
		xs[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6))
		exact += xs[i]
	}
	for _, w := range []int{1, 2, 3, 8} {
		opt := Options{Workers: w, MinRows: 100}
		first := sumPass(xs, opt)
		for rep := 0; rep < 20; rep++ {
			if got := sumPass(xs, opt); math.Float64bits(got) != math.Float64bits(first) {
				t.Fatalf("workers=%d: run %d gave %v, first run %v: not bit identical", w, rep, got, first)
			}
		}
		if math.Abs(first-exact) > 1e-9*math.Abs(exact)+1e-6 {
			t.Errorf("workers=%d: sum %v, want %v", w, first, exact)
		}
	}
}

func TestReduceIntegerIdenticalAcrossWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buckets := make([]uint8, 50000)
	for i := range buckets {
		buckets[i] = uint8(rng.IntN(65))
	}
	hist := func(w int) [65]int {
		h := Reduce(len(buckets), Options{Workers: w, MinRows: 10}, func() *[65]int { return new([65]int) },
			func(a *[65]int, lo, hi int) {
				for _, b := range buckets[lo:hi] {
					a[b]++
				}
			},
			func(into, from *[65]int) {
				for i := range into {
					into[i] += from[i]
				}
			})
		return *h
	}
	want := hist(1)
	total := 0
	for _, c := range want {
		total += c
	}
	if total != len(buckets) {
		t.Fatalf("histogram total %d, want %d", total, len(buckets))
	}
	for _, w := range []int{2, 3, 7} {
		if got := hist(w); got != want {
			t.Errorf("workers=%d: histogram differs from workers=1", w)
		}
	}
}

func TestReduceEmpty(t *testing.T) {
	calls := 0
	got := Reduce(0, Options{}, func() *int { v := 7; return &v },
		func(*int, int, int) { calls++ }, func(*int, *int) { calls++ })
	if *got != 7 || calls != 0 {
		t.Errorf("empty Reduce: got %d with %d calls, want fresh accumulator and no calls", *got, calls)
	}
}

func TestForVisitsEveryRowOnce(t *testing.T) {
	n := 9999
	seen := make([]int, n)
	For(n, Options{Workers: 4, MinRows: 1}, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			seen[i]++
		}
	})
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("row %d visited %d times", i, c)
		}
	}
}

func TestForPanicReachesCaller(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "boom") {
			t.Errorf("recovered %v, want the worker's panic", r)
		}
	}()
	For(100, Options{Workers: 2, MinRows: 1}, func(shard, lo, hi int) {
		if shard == 1 {
			panic("boom")
		}
	})
	t.Error("For returned normally after a worker panicked")
}
