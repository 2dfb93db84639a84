package tabular

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// refSample is the quantile's sampler as it was before the streaming run
// (issue 25.5): sort the clamped values, give rank i the grid points in
// [x_i, x_{i+1}), and walk the ranks 0..n by increasing loss. The
// histogram sampler must draw the same grid point from the same bits.
func (p *QuantilePlan) refSample(sorted []float64, bit func() bool, envBits int64) int {
	n := len(sorted)
	t := new(big.Rat).SetFloat64(p.Q)
	t.Mul(t, new(big.Rat).SetInt64(int64(n)))
	flb := new(big.Int).Quo(t.Num(), t.Denom())
	fl, isInt := int(flb.Int64()), t.IsInt()
	ce := fl
	if !isInt {
		ce++
	}
	first := make([]int32, n+2)
	for i, v := range sorted {
		first[i+1] = int32(p.below(v))
	}
	first[n+1] = int32(p.Grid + 1)
	var lv []level
	var rank []int
	visit := func(d, i int) {
		if c := int64(first[i+1] - first[i]); c > 0 {
			lv, rank = append(lv, level{d: d, count: c}), append(rank, i)
		}
	}
	for d := 0; ; d++ {
		left, right := ce-d, fl+d
		if left < 0 && right > n {
			break
		}
		if d >= 1 && left >= 0 {
			visit(d, left)
		}
		if (d >= 1 || isInt) && right <= n {
			visit(d, right)
		}
	}
	i, off := sampleLevels(walkWeights(p.ratio, lv), lv, bit, envBits)
	return int(first[rank[i]]) + int(off)
}

// The streaming sampler (a histogram over the grid, no sort) draws exactly
// what the sort-based one drew, bit for bit, on ties, spread and
// concentrated data, q·n integer or not, small and full grids.
func TestQuantileHistogramMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	for c := range 300 {
		lo, hi := 0.0, 10.0
		q := []float64{0.5, 0.25, 0.1, 0.9, 0.75}[c%5]
		eps := []float64{0.1, 1, 8}[c%3]
		p, err := PlanQuantile(lo, hi, q, eps)
		if err != nil {
			t.Fatal(err)
		}
		if c%2 == 0 {
			p = smallGrid(p, 1+rng.IntN(40))
		}
		n := rng.IntN(60)
		vals := make([]float64, n)
		for i := range vals {
			switch c % 4 {
			case 0:
				vals[i] = rng.Float64() * 10
			case 1:
				vals[i] = float64(rng.IntN(4)) // ties
			case 2:
				vals[i] = 3 + rng.Float64()*1e-9 // concentrated
			default:
				vals[i] = rng.Float64()*14 - 2 // clamped
			}
			vals[i] = Clamp(vals[i], lo, hi)
		}
		sort.Float64s(vals)
		seed := rng.Uint64()
		envBits := []int64{1, 2, cutBits}[c%3]
		b1, b2 := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		got := p.sample(vals, func() bool { return b1.IntN(2) == 1 }, envBits)
		want := p.refSample(vals, func() bool { return b2.IntN(2) == 1 }, envBits)
		if got != want {
			t.Fatalf("case %d (n=%d, q=%v, grid %d): histogram sampler drew %d, sort-based %d", c, n, q, p.Grid, got, want)
		}
	}
}

// The run's memory does not grow with the number of rows: it bins every
// value on the public grid as it reads it. 20× the rows allocate less than
// 1 MiB more (the sort-based run held a float64 per row: 3 MiB more here).
func TestQuantileRunMemoryIndependentOfN(t *testing.T) {
	ctx := context.Background()
	p, _ := PlanQuantile(0, 100, 0.5, 1)
	alloc := func(n int) uint64 {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i%1000) / 10
		}
		src := column(t, vals, nil, 0)
		s := noise.NewSeeded(1)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := p.Run(ctx, src, false, s); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(10_000), alloc(200_000)
	if large > small+1<<20 {
		t.Errorf("Run allocated %d bytes on 10k rows and %d on 200k: memory grows with n", small, large)
	}
}

// BenchmarkQuantileRun times a quantile on 3·10⁵ rows whose values are
// concentrated (all within one grid interval) or spread over the bounds,
// the two ends of the data-dependent work the sort-based run had (about
// 2× apart). docs/threat-model.md quotes it:
//
//	go test -tags duckdb_arrow ./mechanisms/tabular -run '^$' -bench QuantileRun -count 5
func BenchmarkQuantileRun(b *testing.B) {
	const n = 300_000
	rng := rand.New(rand.NewPCG(3, 5))
	for _, c := range []struct {
		name string
		f    func() float64
	}{
		{"concentrated", func() float64 { return 50 + rng.Float64()*1e-5 }},
		{"spread", func() float64 { return rng.Float64() * 100 }},
	} {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = c.f()
		}
		src := column(b, vals, nil, 0)
		p, _ := PlanQuantile(0, 100, 0.5, 1)
		s := noise.NewSeeded(1)
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := p.Run(context.Background(), src, false, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// below computes the first grid point at or above v; it agrees with a
// binary search over the grid on random values, on every grid point and
// its float64 neighbours, for grids of every size and awkward bounds.
func TestQuantileBelowMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, b := range [][2]float64{{0, 100}, {-3.3, 7.77}, {1e16, 1e16 + 64}, {1e16, 1e16 + 2}, {1, math.Nextafter(1, 2)},
		{-1e298, 1e298}, {0, 5e-324}, {-1e-310, 1e-310}, {0.1, 0.3}, {-1e300 / 1e10, 1}} {
		p, err := PlanQuantile(b[0], b[1], 0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		search := func(v float64) int {
			return sort.Search(p.Grid+1, func(k int) bool { return p.GridPoint(k) >= v })
		}
		check := func(v float64) {
			v = Clamp(v, p.Lo, p.Hi)
			if got, want := p.below(v), search(v); got != want {
				t.Fatalf("%v: below(%v) = %d, binary search %d", b, v, got, want)
			}
		}
		for k := 0; k <= p.Grid; k += 1 + k/1000 {
			g := p.GridPoint(k)
			check(g)
			check(math.Nextafter(g, math.Inf(1)))
			check(math.Nextafter(g, math.Inf(-1)))
		}
		for range 20000 {
			check(b[0] + rng.Float64()*(b[1]-b[0]))
		}
	}
}
