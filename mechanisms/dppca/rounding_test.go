package dppca

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// withinGamma reports whether |got − exact·scale| ≤ γ_h·abs·scale,
// evaluated exactly, and the ratio of the error to γ_h·abs·scale.
func withinGamma(got float64, exact, abs *big.Float, scale float64, h int) (bool, float64) {
	var e, b, s big.Float
	s.SetPrec(4096).SetFloat64(scale)
	e.SetPrec(4096).Mul(exact, &s)
	e.Sub(new(big.Float).SetPrec(4096).SetFloat64(got), &e)
	e.Abs(&e)
	b.SetPrec(4096).Mul(abs, &s)
	b.Mul(&b, new(big.Float).SetFloat64(rowpass.Gamma(h)))
	if b.Sign() == 0 {
		return e.Sign() == 0, 0
	}
	r, _ := new(big.Float).Quo(&e, &b).Float64()
	return e.Cmp(&b) <= 0, r
}

// hardRows returns m×d rows: coordinate 0 is 1 followed by 3·2^-54 terms,
// each of which a running sum at 1 rounds up by 2^-54 (so a running sum's
// error grows like m·2^-54 while Σ|t| stays ≈ 1); the other coordinates
// mix magnitudes 1e-8..1e8 with both signs, so that they cancel.
func hardRows(m, d int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := make([]float64, m*d)
	for i := range m {
		g[i*d] = 3 * 0x1p-54
		for j := 1; j < d; j++ {
			g[i*d+j] = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(17)-8))
		}
	}
	g[0] = 1
	return g
}

// naiveRunningSum is the accumulation the package used before Pairwise.
func naiveRunningSum(terms []float64, m, d int) []float64 {
	s := make([]float64, d)
	for i := range m {
		for j := range d {
			s[j] += terms[i*d+j]
		}
	}
	return s
}

// TestSumRowsExact checks Eq. 7's clipped sum against the exact sum of its
// reference terms c_i·g_i: every entry is within γ_h·Σ|c_i g_ik| for the
// h of rounding.go (with the actual depth, tighter than ojaRoundings), it
// is bit identical for every worker count, and the running sum it
// replaced breaks the same bound on the hard coordinate (so the check can
// fail).
func TestSumRowsExact(t *testing.T) {
	const d = 4
	for _, m := range []int{1, 255, 256, 257, 3000, 100000} {
		for _, beta := range []float64{0, 2} {
			g := hardRows(m, d, uint64(m))
			if beta > 0 {
				for i := 0; i < m; i += 7 {
					g[i*d+1] = 1e8 // clipped
				}
			}
			want, abs := exactSums(g, m, d, beta)
			h := 1 + rowpass.BlockRows - 1 + rowpass.Depth(m)
			var ref []float64
			for _, workers := range []int{1, 2, 3} {
				got := sumRows(g, m, d, beta, rowpass.Options{Workers: workers, MinRows: 1})
				if ref == nil {
					ref = got
				} else if !slices.Equal(got, ref) {
					t.Errorf("m=%d β=%v: %d workers give %v, 1 worker %v", m, beta, workers, got, ref)
				}
			}
			for j := range d {
				if ok, ratio := withinGamma(ref[j], want[j], abs[j], 1, h); !ok {
					t.Errorf("m=%d β=%v coordinate %d: error %.3g × γ_%d·Σ|t|, over the bound", m, beta, j, ratio, h)
				}
			}
			if beta == 0 && m == 100000 {
				naive := naiveRunningSum(g, m, d) // c_i = 1
				if ok, ratio := withinGamma(naive[0], want[0], abs[0], 1, h); ok {
					t.Errorf("the running sum is within the pairwise bound (%.3g of it): the test data no longer tell them apart", ratio)
				} else {
					t.Logf("m=%d: running-sum error %.3g × the pairwise bound γ_%d·Σ|t|", m, ratio, h)
				}
			}
		}
	}
}

// exactSums returns Σ_i c_i·g_ik and Σ_i |c_i·g_ik| exactly (big.Float
// with enough precision for any float64 sum), with c_i the clip factor the
// sum uses (the reference terms of rounding.go; 1 for beta = 0).
func exactSums(g []float64, m, d int, beta float64) (sum, abs []*big.Float) {
	sum, abs = make([]*big.Float, d), make([]*big.Float, d)
	for j := range d {
		sum[j], abs[j] = new(big.Float).SetPrec(4096), new(big.Float).SetPrec(4096)
	}
	var c, t big.Float
	for i := range m {
		c.SetPrec(4096).SetFloat64(clipFactor(g[i*d:(i+1)*d], beta))
		for j := range d {
			t.SetPrec(4096).SetFloat64(g[i*d+j])
			t.Mul(&t, &c)
			sum[j].Add(sum[j], &t)
			t.Abs(&t)
			abs[j].Add(abs[j], &t)
		}
	}
	return sum, abs
}

// TestTruncatedSumExact checks Algorithm 5's sum: the terms
// clamp(g − ḡ, −r, r) lie in [−r, r] (so Δ = 2r√d/m has no rounding in
// it), their Pairwise sum divided by m is within γ_h·Σ|t|/m of the exact
// mean for h = meanRoundings at the actual depth, the truncation count is
// right, and the result is bit identical for every worker count. The
// centres are large against r, the case where clamping to fl(ḡ ± r) would
// widen the interval.
func TestTruncatedSumExact(t *testing.T) {
	const d = 3
	centres := []float64{1e10, -3, 0}
	const r = 1.5e-6
	for _, m := range []int{1, 300, 70000} {
		rng := rand.New(rand.NewPCG(uint64(m), 9))
		g := make([]float64, m*d)
		for i := range m {
			for j := range d {
				g[i*d+j] = centres[j] + (rng.Float64()-0.5)*4*r*math.Max(1, math.Abs(centres[j])*1e-16/r)
			}
		}
		g[0] = 1e300 // overflow-free but far out: clamped to +r
		terms := make([]float64, m*d)
		trun := 0
		for i := range m {
			for j := range d {
				v := g[i*d+j] - centres[j]
				if v < -r || v > r {
					trun++
					v = math.Max(-r, math.Min(r, v))
				}
				terms[i*d+j] = v
			}
		}
		want, abs := exactSums(terms, m, d, 0)
		h := rowpass.BlockRows - 1 + rowpass.Depth(m) + 1
		var ref *truncSum
		for _, workers := range []int{1, 2, 3} {
			got := truncatedSum(g, m, d, centres, r, rowpass.Options{Workers: workers, MinRows: 1})
			if ref == nil {
				ref = got
			} else if !slices.Equal(got.sum, ref.sum) || got.trun != ref.trun {
				t.Errorf("m=%d: %d workers give %v, 1 worker %v", m, workers, got, ref)
			}
		}
		if ref.trun != trun {
			t.Errorf("m=%d: %d coordinates truncated, want %d", m, ref.trun, trun)
		}
		for j := range d {
			mean := ref.sum[j] / float64(m)
			if ok, ratio := withinGamma(mean, want[j], abs[j], 1/float64(m), h); !ok {
				t.Errorf("m=%d coordinate %d: mean error %.3g × γ_%d·Σ|t|/m, over the bound", m, j, ratio, h)
			}
		}
	}
}

// TestRoundingCharge: the rounding excess is charged, and raises the noise
// by a negligible fraction at the bench shapes (d = 10, n = 1e6, T = 10,
// ε = 0.8, δ = 1e-7): private Oja's std by ≈ 3.3e-6 (bounded by 1e-5 for
// any n ≤ MaxRows), Algorithm 5's by γ_h·m ≈ 1.5e-9 at the bench's
// half-batch m = 5e4 and ≤ 1e-5 at the largest half-batch MaxRows/(2T).
func TestRoundingCharge(t *testing.T) {
	const d, T, n = 10, 10, 1000000
	opt := Options{Eps: 0.8, Delta: 1e-7, Centred: true, KeepOrder: true, Gap: 0.5, Beta: 5.5, Steps: T}
	oja, err := PlanPrivateOja(opt, d)
	if err != nil {
		t.Fatal(err)
	}
	bare := noise.GaussianScale(2*opt.Beta*sensitivitySlack, oja.NoiseMultiplier, d)
	inc := oja.NoiseStd/bare - 1
	t.Logf("private Oja: excess %.3g (Δ = %v), noise std +%.3g", oja.RoundingExcess, 2*opt.Beta, inc)
	wantExcess := 2 * rowpass.Gamma(ojaRoundings) * float64(MaxRows/T) * opt.Beta
	if oja.RoundingExcess < wantExcess || inc <= 0 || inc > 1e-5 {
		t.Errorf("private Oja: excess %v (want ≥ %v), noise increase %v (want in (0, 1e-5])", oja.RoundingExcess, wantExcess, inc)
	}

	pl, err := PlanDPPCA(opt, d)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * rowpass.Gamma(meanRoundings) * math.Sqrt(d); pl.RoundingExcess < want || pl.mean.excess != pl.RoundingExcess {
		t.Errorf("DP-PCA: excess per unit r %v (params %v), want ≥ %v", pl.RoundingExcess, pl.mean.excess, want)
	}
	const r = 0.37 // the increase does not depend on r
	for _, c := range []struct {
		m   int
		max float64
	}{{n / T / 2, 1e-8}, {MaxRows / T / 2, 1e-5}} {
		exact := 2 * r * math.Sqrt(d) / float64(c.m)
		with := noise.GaussianScale((exact+pl.RoundingExcess*r)*sensitivitySlack, pl.NoiseMultiplier, d)
		without := noise.GaussianScale(exact*sensitivitySlack, pl.NoiseMultiplier, d)
		inc := with/without - 1
		t.Logf("Algorithm 5, m=%d: noise std +%.3g", c.m, inc)
		if inc <= 0 || inc > c.max {
			t.Errorf("Algorithm 5, m=%d: noise increase %v, want in (0, %v]", c.m, inc, c.max)
		}
	}
}

// TestGroupEstimatesLocal checks the premise of Algorithm 4's sensitivity
// argument under rounding (rounding.go): replacing one record changes at
// most one group estimate λ^(j), and every other one is bit identical,
// for every worker count, so the histogram counts move by at most 2.
func TestGroupEstimatesLocal(t *testing.T) {
	const m, d, k = 4000, 6, 50
	rng := rand.New(rand.NewPCG(3, 4))
	g := make([]float64, m*d)
	for i := range g {
		g[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4))
	}
	gp := slices.Clone(g)
	const changed = 1234 // record 1234: pair 617, group 617/40 = 15
	for j := range d {
		gp[changed*d+j] = 1e6 * float64(j+1)
	}
	p := eigenParams{hist: histParams{1, 1e-6}, groups: k}
	estimates := func(data []float64, workers int) []float64 {
		tr := &trace{}
		src := newSource(noise.NewSeeded(1), &testKnob{noiseScale: 1, trace: tr})
		topEigen(data, m, d, p, src, rowpass.Options{Workers: workers})
		return tr.groupEigen[0]
	}
	ref := estimates(g, 1)
	for _, workers := range []int{1, 2, 3} {
		a, b := estimates(g, workers), estimates(gp, workers)
		if !slices.Equal(a, ref) {
			t.Errorf("%d workers: group estimates differ from 1 worker's", workers)
		}
		var diff []int
		for j := range a {
			if a[j] != b[j] {
				diff = append(diff, j)
			}
		}
		if len(diff) != 1 || diff[0] != changed/2/(m/2/k) {
			t.Errorf("%d workers: replacing record %d changed groups %v, want exactly [%d]", workers, changed, diff, changed/2/(m/2/k))
		}
	}
}
