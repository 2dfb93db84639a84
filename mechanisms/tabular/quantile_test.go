package tabular

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

func TestPlanQuantile(t *testing.T) {
	p, err := PlanQuantile(0, 100, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Grid != 1<<20 || p.Event != accounting.BoundedRange(1) || p.GridPoint(0) != 0 || p.GridPoint(p.Grid) != 100 || p.GridPoint(1<<19) != 50 {
		t.Errorf("plan %+v", p)
	}
	// bounds close together relative to their size: a coarser grid
	if p, _ := PlanQuantile(1e16, 1e16+64, 0.5, 1); p.Grid != 2 {
		t.Errorf("grid of [1e16, 1e16+64]: %d intervals, want 2 (ulp 2, 16 ulps per interval)", p.Grid)
	}
	for _, c := range []struct {
		lo, hi, q, eps float64
		want           error
	}{
		{0, 1, 0, 1, ErrQ}, {0, 1, 1, 1, ErrQ}, {0, 1, math.NaN(), 1, ErrQ}, {0, 1, -0.5, 1, ErrQ},
		{0, 1, 0.5, 0, ErrEps}, {0, 1, 0.5, math.NaN(), ErrEps},
		{1, 1, 0.5, 1, ErrBounds}, {0, 2e298, 0.5, 1, ErrBoundsRange},
	} {
		if _, err := PlanQuantile(c.lo, c.hi, c.q, c.eps); !errors.Is(err, c.want) {
			t.Errorf("PlanQuantile(%v, %v, %v, %v): %v, want %v", c.lo, c.hi, c.q, c.eps, err, c.want)
		}
	}
}

// The grid is strictly increasing from lo to hi for any bounds, so every
// grid point is a distinct output and each rank's points are contiguous.
func TestQuantileGridIncreasing(t *testing.T) {
	for _, b := range [][2]float64{{0, 100}, {-3.3, 7.77}, {1e16, 1e16 + 64}, {1e16, 1e16 + 2}, {1, math.Nextafter(1, 2)},
		{-1e298, 1e298}, {0, 5e-324}, {-1e-310, 1e-310}, {0.1, 0.3}, {-1e300 / 1e10, 1}} {
		p, err := PlanQuantile(b[0], b[1], 0.5, 1)
		if err != nil {
			t.Fatalf("%v: %v", b, err)
		}
		if p.GridPoint(0) != b[0] || p.GridPoint(p.Grid) != b[1] {
			t.Errorf("%v: grid ends %v, %v", b, p.GridPoint(0), p.GridPoint(p.Grid))
		}
		for k := 1; k <= p.Grid; k++ {
			if !(p.GridPoint(k) > p.GridPoint(k-1)) {
				t.Fatalf("%v: grid of %d intervals not increasing at %d: %v, %v", b, p.Grid, k, p.GridPoint(k-1), p.GridPoint(k))
			}
		}
	}
}

// R is a lower bound of e^(ε/2), tight for moderate ε.
func TestRatioBound(t *testing.T) {
	for _, c := range []struct{ eps, rel float64 }{{1e-9, 1e-15}, {0.01, 1e-15}, {0.5, 1e-15}, {1, 1e-15}, {2, 1e-14}, {10, 1e-7}} {
		p, err := PlanQuantile(0, 1, 0.5, c.eps)
		if err != nil {
			t.Fatal(err)
		}
		r, e := p.Ratio(), math.Exp(c.eps/2)
		if r > e*(1+4e-16) || r < e*(1-c.rel) {
			t.Errorf("ε=%v: R = %v, e^(ε/2) = %v", c.eps, r, e)
		}
	}
	for _, eps := range []float64{5e-324, 1e-300, 1e-40} {
		if r := ratioFor(eps); r != dyadicOne {
			t.Errorf("ε=%v: R = %+v, want 1 (below the 128-bit resolution)", eps, r)
		}
	}
	// huge ε: still a finite lower bound, computed at once
	if r := ratioFor(math.MaxFloat64); r.m < 1<<63 || r.e < 1000 {
		t.Errorf("ε=MaxFloat64: R = %+v", r)
	}
}

func (x dyadic) big() *big.Float {
	f := new(big.Float).SetPrec(256).SetUint64(x.m)
	return f.SetMantExp(f, int(x.e))
}

// divUp is x/r rounded up to 64 bits: at or above the exact quotient and
// less than an ulp above it.
func TestDyadicDivUp(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 10000 {
		x := dyadic{m: r.Uint64() | 1<<63, e: int64(r.IntN(200) - 100)}
		y := dyadic{m: r.Uint64() | 1<<63, e: int64(r.IntN(200) - 100)}
		if r.IntN(4) == 0 {
			y.m = x.m // the case x.m == r.m
		}
		q := x.divUp(y)
		exact := new(big.Float).SetPrec(512).Quo(x.big(), y.big())
		lower := q
		lower.m--
		if q.m < 1<<63 || q.big().Cmp(exact) < 0 || (q.m > 1<<63 && lower.big().Cmp(exact) >= 0) {
			t.Fatalf("%+v / %+v = %+v, exact %v", x, y, q, exact)
		}
	}
}

// The weights are non-increasing and fall by at most R per level: the
// property the privacy argument rests on.
func TestWeightsRatio(t *testing.T) {
	for _, eps := range []float64{1e-6, 0.01, 1, 30, 1e6} {
		r := ratioFor(eps)
		w := newWeights(r)
		prev := w.at(0).big()
		for d := 1; d <= 3000; d++ {
			cur := w.at(d).big()
			bound := new(big.Float).SetPrec(256).Mul(cur, r.big())
			if cur.Cmp(prev) > 0 || prev.Cmp(bound) > 0 {
				t.Fatalf("ε=%v, level %d: f = %v after %v (R = %v)", eps, d, cur, prev, r.big())
			}
			prev = cur
		}
	}
}

// distribution is the exponential mechanism's exact distribution over
// the grid, from the definitions (not the sampler's walk): rank r(g) =
// #{values ≤ g}, loss D(g) = ⌈|r(g) − q·n|⌉, probability ∝ f(D(g)).
func (p *QuantilePlan) distribution(vals []float64) []float64 {
	n := len(vals)
	qn := new(big.Rat).Mul(new(big.Rat).SetFloat64(p.Q), new(big.Rat).SetInt64(int64(n)))
	loss := make([]int, p.Grid+1)
	maxD := 0
	for k := range loss {
		g := p.GridPoint(k)
		r := 0
		for _, v := range vals {
			if Clamp(v, p.Lo, p.Hi) <= g {
				r++
			}
		}
		dist := new(big.Rat).Sub(new(big.Rat).SetInt64(int64(r)), qn)
		dist.Abs(dist)
		c := new(big.Int).Quo(dist.Num(), dist.Denom())
		if !dist.IsInt() {
			c.Add(c, big.NewInt(1))
		}
		loss[k] = int(c.Int64())
		maxD = max(maxD, loss[k])
	}
	w := newWeights(p.ratio)
	f := make([]*big.Float, maxD+1)
	for d := range f {
		f[d] = w.at(d).big()
	}
	total := new(big.Float).SetPrec(4096)
	for _, d := range loss {
		total.Add(total, f[d])
	}
	probs := make([]float64, len(loss))
	for k, d := range loss {
		probs[k], _ = new(big.Float).SetPrec(4096).Quo(f[d], total).Float64()
	}
	return probs
}

// smallGrid replaces the plan's grid by k intervals, so that exact
// distributions are small.
func smallGrid(p *QuantilePlan, k int) *QuantilePlan {
	c := *p
	c.Grid, c.step = k, (p.Hi-p.Lo)/float64(k)
	return &c
}

// The sampler draws from the mechanism's exact distribution, whatever its
// envelope (envBits 1 and 2 send most draws through the rejection step):
// over 40000 seeded draws every grid point's frequency is within five
// binomial standard errors (plus 2e-4) of its probability.
func TestSampleMatchesDistribution(t *testing.T) {
	testtier.Long(t)
	vals := []float64{1.3, 2.2, 2.2, 7.9, 9.1, 4.4, 4.4, 4.4, 12}
	for _, c := range []struct {
		q, eps  float64
		envBits int64
	}{{0.5, 1.5, cutBits}, {0.5, 1.5, 1}, {0.3, 0.2, 2}, {0.9, 6, 1}, {0.5, 4, cutBits}} {
		p0, err := PlanQuantile(0, 10, c.q, c.eps)
		if err != nil {
			t.Fatal(err)
		}
		p := smallGrid(p0, 20)
		want := p.distribution(vals)
		sorted := make([]float64, len(vals))
		for i, v := range vals {
			sorted[i] = Clamp(v, 0, 10)
		}
		sort.Float64s(sorted)
		s := noise.NewSeeded(uint64(c.envBits) + 7)
		bit := func() bool { return s.Bernoulli(1, 2) }
		const draws = 40000
		got := make([]float64, len(want))
		for range draws {
			got[p.sample(sorted, bit, c.envBits)]++
		}
		for k := range got {
			f, pk := got[k]/draws, want[k]
			if tol := 5*math.Sqrt(pk*(1-pk)/draws) + 2e-4; math.Abs(f-pk) > tol {
				t.Errorf("%+v: grid point %d (%v): frequency %.4f, probability %.4f", c, k, p.GridPoint(k), f, pk)
			}
		}
	}
}

// Empty data, one value, all values equal, q near 0 and ε at its extremes
// give a grid point without failing; with ε huge the draw is the best
// rank, with ε tiny (R = 1) the grid is uniform.
func TestQuantileEdgeCases(t *testing.T) {
	s := noise.NewSeeded(3)
	bit := func() bool { return s.Bernoulli(1, 2) }
	for _, vals := range [][]float64{nil, {5}, {3, 3, 3, 3}, {0, 0, 10, 10}} {
		for _, q := range []float64{1e-300, 0.5, 0.999} {
			for _, eps := range []float64{5e-324, 1, 1e6} {
				p, _ := PlanQuantile(0, 10, q, eps)
				k := p.Sample(vals, bit)
				if k < 0 || k > p.Grid {
					t.Errorf("%v q=%v ε=%v: grid index %d", vals, q, eps, k)
				}
			}
		}
	}
	p, _ := PlanQuantile(0, 10, 0.5, 1e6)
	vals := []float64{1, 2, 3, 4, 6, 7, 8, 9, 9.5, 9.9}
	for range 20 {
		// q·n = 5: rank 5, the grid points in [6, 7), is the only loss-0 rank
		if v := p.GridPoint(p.Sample(vals, bit)); !(v >= 6 && v < 7) {
			t.Fatalf("ε=1e6: %v, want a point of [6, 7)", v)
		}
	}
	p = smallGrid(p, 4)
	p.ratio = ratioFor(1e-300)
	counts := make([]int, 5)
	for range 5000 {
		counts[p.Sample(vals, bit)]++
	}
	for k, c := range counts {
		if c < 850 || c > 1150 { // 1000 expected, sd 28
			t.Errorf("R = 1: grid point %d drawn %d times of 5000, want about 1000", k, c)
		}
	}
}

// Accuracy: the median of 1001 values is found to within a few values'
// spacing at ε = 1, and user-level data use one mean per user.
func TestQuantileRun(t *testing.T) {
	ctx := context.Background()
	vals := make([]float64, 1001)
	for i := range vals {
		vals[i] = 0.1 * float64(i) // 0 … 100, median 50
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	p, _ := PlanQuantile(0, 100, 0.5, 1)
	s := noise.NewSeeded(8)
	far := 0
	for range 40 {
		v, err := p.Run(ctx, column(t, vals, nil, 0), false, s)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v-50) > 2 { // 20 ranks: probability about e^-10 per draw
			far++
		}
	}
	if far > 0 {
		t.Errorf("%d of 40 medians farther than 2 from 50", far)
	}
	// users: user u has rows {u, u+100}: means u + 50 for u = 0..9 → the
	// 0.5-quantile of 50..59 is near 55, far from the rows' 0.5-quantile.
	var uvals []float64
	var units []int32
	for u := range 10 {
		uvals = append(uvals, float64(u), float64(u)+100)
		units = append(units, int32(u), int32(u))
	}
	p, _ = PlanQuantile(0, 200, 0.5, 20)
	v, err := p.Run(ctx, column(t, uvals, units, 10), true, s)
	if err != nil || v < 52 || v > 58 {
		t.Errorf("user-level median %v (%v), want near 55", v, err)
	}
}
