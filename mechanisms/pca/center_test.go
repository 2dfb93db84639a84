package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowstest"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// offsetRows draws n rows μ + g·e2 + 0.2·z (g, z standard normal) with
// μ = 3·e1: the top direction of the second moment Σ aaᵀ is the mean's,
// e1 (eigenvalue ≈ 9n), while the covariance's is e2 (≈ n against 0.04n).
func offsetRows(rng *rand.Rand, n, d int) (*mat.Dense, []float64) {
	mu := make([]float64, d)
	mu[0] = 3
	x := mat.NewDense(n, d, nil)
	for i := range n {
		g := rng.NormFloat64()
		for j := range d {
			v := mu[j] + 0.2*rng.NormFloat64()
			if j == 1 {
				v += g
			}
			x.Set(i, j, v)
		}
	}
	return x, mu
}

// TestCenterRecoversCentredComponent is the seeded accuracy test of
// centring: on data whose mean is far from the origin, the uncentred
// methods find the mean's direction e1, and the centred ones find the
// covariance's top direction e2, with a mean close to the true one and
// (gauss) an explained-variance ratio near the true 1/(1 + 4·0.04).
func TestCenterRecoversCentredComponent(t *testing.T) {
	t.Parallel()
	const n, d = 20000, 5
	x, mu := offsetRows(rand.New(rand.NewPCG(28, 5)), n, d)
	e2 := mat.NewDense(d, 1, nil)
	e2.Set(1, 0, 1)
	for _, method := range Methods {
		for _, center := range []bool{false, true} {
			opt := Options{K: 1, Eps: 1, Delta: 1e-6, Clip: 6, Center: center, Noise: noise.NewSeeded(7)}
			if method != MethodGauss {
				opt.Iters = 10
			}
			res, err := Run(context.Background(), method, x, opt)
			if err != nil {
				t.Fatalf("%s center=%v: %v", method, center, err)
			}
			cos := math.Abs(res.Components.At(1, 0))
			sin2 := SinThetaSq(e2, res.Components)
			t.Logf("%s center=%v: |⟨v, e2⟩| = %.3f, sin²θ to the centred top = %.3g, ratio %v", method, center, cos, sin2, res.ExplainedVarianceRatio)
			if !center {
				if cos > 0.5 || res.Center != nil {
					t.Errorf("%s uncentred: |⟨v, e2⟩| = %.3f, want the mean's direction (< 0.5); center %v, want nil", method, cos, res.Center)
				}
				continue
			}
			if cos < 0.95 {
				t.Errorf("%s centred: |⟨v, e2⟩| = %.3f, want ≥ 0.95", method, cos)
			}
			dist := 0.0
			for j := range mu {
				dist += (res.Center[j] - mu[j]) * (res.Center[j] - mu[j])
			}
			if math.Sqrt(dist) > 0.05 {
				t.Errorf("%s centred: the private mean %v is %.3g from %v, want ≤ 0.05", method, res.Center, math.Sqrt(dist), mu)
			}
			if method == MethodGauss {
				want := 1 / (1 + 4*0.04) // var 1 (+0.04) on e2 over the trace 1 + 5·0.04
				if r := res.ExplainedVarianceRatio; len(r) != 1 || math.Abs(r[0]-want) > 0.05 {
					t.Errorf("gauss centred: explained-variance ratio %v, want ≈ %.3f", r, want)
				}
			}
		}
	}
}

// TestCenterBudgetSplit checks the centred plans' pricing: the same cost
// event as the uncentred plan, the mean's ρ_c = share·ρ and the method's
// noise calibrated to the rest, so that ρ_c + ρ_run = ρ exactly. A plan
// that gave the method the whole ρ (the share not taken) would spend
// more than it charges.
func TestCenterBudgetSplit(t *testing.T) {
	t.Parallel()
	const d = 6
	for _, calib := range []Calibration{CalibZCDP, CalibGDP} {
		for _, method := range Methods {
			for _, share := range []float64{0, 0.25, 0.5} {
				opt := Options{K: 1, Iters: 4, Eps: 0.8, Delta: 1e-6, Calibration: calib, Center: true, CenterShare: share}
				if method == MethodGauss {
					opt.Iters = 0
				}
				pl, err := PlanMethod(method, opt, d)
				if err != nil {
					t.Fatalf("%s %v share %v: %v", method, calib, share, err)
				}
				opt.Center, opt.CenterShare = false, 0
				base, err := PlanMethod(method, opt, d)
				if err != nil {
					t.Fatal(err)
				}
				if pl.Cost != base.Cost || pl.Rho != base.Rho {
					t.Errorf("%s %v: centred cost %+v (ρ %v), uncentred %+v (ρ %v): want the same event", method, calib, pl.Cost, pl.Rho, base.Cost, base.Rho)
				}
				f := share
				if f == 0 {
					f = DefaultCenterShare
				}
				if pl.CenterShare != f || math.Abs(pl.CenterRho-f*pl.Rho) > 1e-12*pl.Rho {
					t.Errorf("%s %v: share %v, mean ρ %v, want %v and %v", method, calib, pl.CenterShare, pl.CenterRho, f, f*pl.Rho)
				}
				// The method's own ρ from its multiplier: Iters/(2z²) for
				// npm and gauss; adaptive's Gaussian part is (1−svtShare)
				// of it.
				run := float64(pl.Iters) / (2 * pl.NoiseMultiplier * pl.NoiseMultiplier)
				if method == MethodAdaptive {
					run /= 1 - svtShare
				}
				if got := run + pl.CenterRho; math.Abs(got-pl.Rho) > 1e-9*pl.Rho {
					t.Errorf("%s %v share %v: method ρ %v + mean ρ %v = %v, want the plan's ρ %v", method, calib, f, run, pl.CenterRho, got, pl.Rho)
				}
			}
		}
	}
}

// TestCenterMeanNoise checks the mean's noise: the std of each of the d+1
// coordinates (Σ s·a, n) is the sensitivity (2 under replace-one, √2
// under add-remove) times √(1/(2ρ_c)), up to the rounding excess.
func TestCenterMeanNoise(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		nb   accounting.Neighbour
		sens float64
	}{{accounting.ReplaceOne, 2}, {accounting.AddRemove, math.Sqrt2}} {
		pl, err := PlanMethod(MethodGauss, Options{Eps: 1, Delta: 1e-6, Neighbour: c.nb, Center: true}, 4)
		if err != nil {
			t.Fatal(err)
		}
		got := pl.CenterStd / math.Sqrt(1/(2*pl.CenterRho))
		if math.Abs(got-c.sens) > 1e-3 {
			t.Errorf("%v: the mean's std is %v per unit multiplier, want the sensitivity %v", c.nb, got, c.sens)
		}
	}
}

// TestCenterRefusals: centring is refused, before anything is charged,
// where its budget split or its rows are not defined.
func TestCenterRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method string
		opt    Options
		want   string
	}{
		{MethodGauss, Options{Eps: 0.5, Delta: 1e-6, Center: true, Calibration: CalibPaper}, "calibration zcdp"},
		{MethodAdaptive, Options{Eps: 1, Delta: 1e-6, Iters: 3, Center: true, AutoGap: true}, "gap=\"auto\""},
		{MethodNPM, Options{Eps: 1, Delta: 1e-6, Iters: 3, Center: true, CenterShare: 0.6}, "center share"},
		{MethodNPM, Options{Eps: 1, Delta: 1e-6, Iters: 3, Center: true, CenterShare: -0.1}, "center share"},
		{MethodNPM, Options{Eps: 1, Delta: 1e-6, Iters: 3, CenterShare: 0.2}, "with Center only"},
	} {
		if _, err := PlanMethod(c.method, c.opt, 4); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: error %v, want one naming %q", c.method, c.opt, err, c.want)
		}
	}
}

// TestShiftedSource checks the centring map: every row minus μ, the same
// rows through every batch size, and no stored norms handed on.
func TestShiftedSource(t *testing.T) {
	t.Parallel()
	x := mat.NewDense(3, 2, []float64{1, 2, 3, 4, math.NaN(), 6})
	s := &shifted{src: rows.FromDense(x), mu: []float64{1, 1}}
	got, err := rows.Collect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 1, 2, 3, math.NaN(), 5}
	for i, w := range want {
		g := got.Matrix().RawMatrix().Data[i]
		if g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
			t.Errorf("entry %d: %v, want %v", i, g, w)
		}
	}
	if s.HasNorms() {
		t.Error("a shifted source must not claim stored norms: they are the unshifted rows'")
	}
}

// TestCenterSensitivity checks both releases of a centred run on
// neighbouring data sets, without noise: the mean's (Σ s·a, n) moves by at
// most centerSensitivity, whatever the changed row's norm (its rows are
// clipped like the method's), and gauss's noised coordinates v(C) of the
// centred rows move by at most gaussSensitivity, although a centred row
// a − μ can be longer than the clip (each is clipped again).
func TestCenterSensitivity(t *testing.T) {
	t.Parallel()
	const d, clip = 3, 2.0
	base := [][]float64{{1.8, 0, 0}, {1.9, 0.1, 0}, {1.7, 0, 0.2}, {1.85, 0.05, 0}}
	for _, c := range []struct {
		nb       accounting.Neighbour
		from, to []float64 // the row changed (nil: added or removed)
	}{
		{accounting.ReplaceOne, []float64{1.8, 0, 0}, []float64{-1e6, 0, 0}},
		{accounting.ReplaceOne, []float64{1.8, 0, 0}, []float64{-2, 0, 0}},
		{accounting.AddRemove, nil, []float64{-1e6, 3, 0}},
		{accounting.AddRemove, nil, []float64{0, -2, 0}},
	} {
		release := func(rowsIn [][]float64) (mean, gram []float64) {
			x := mat.NewDense(len(rowsIn), d, nil)
			for i, r := range rowsIn {
				x.SetRow(i, r)
			}
			tr := &trace{}
			opt := withKnob(Options{Eps: 1, Delta: 1e-6, Clip: clip, Neighbour: c.nb, Center: true, Noise: noise.NewSeeded(1)}, testKnob{noiseScale: 0, trace: tr})
			if _, err := AnalyzeGauss(context.Background(), x, opt); err != nil {
				t.Fatal(err)
			}
			return tr.center, tr.first
		}
		// The mean is released from the data, so neighbours get different
		// means; the method's sensitivity is for a fixed public shift, so
		// the second release is compared under the first data set's mean:
		// Gram of the rows centred by one μ, through the method's own
		// clipping, as the run computes it.
		d1 := append([][]float64(nil), base...)
		d2 := append([][]float64(nil), base...)
		if c.from != nil {
			d2[0] = c.to
		} else {
			d2 = append(d2, c.to)
		}
		m1, _ := release(d1)
		m2, _ := release(d2)
		if dist := l2(m1, m2); dist > centerSensitivity(c.nb)*(1+1e-9) {
			t.Errorf("%v %v → %v: the mean's release moved by %v, more than %v", c.nb, c.from, c.to, dist, centerSensitivity(c.nb))
		}
		mu := []float64{clip * m1[0] / m1[d], clip * m1[1] / m1[d], clip * m1[2] / m1[d]}
		g1 := centredGram(t, d1, mu, clip)
		g2 := centredGram(t, d2, mu, clip)
		if dist := l2(g1, g2); dist > gaussSensitivity(c.nb)*(1+1e-9) {
			t.Errorf("%v %v → %v: the centred covariance moved by %v, more than %v", c.nb, c.from, c.to, dist, gaussSensitivity(c.nb))
		}
	}
}

// centredGram is v(C) of the rows centred by mu and clipped as a run
// clips them (the shifted source through the method's row rule).
func centredGram(t *testing.T, rowsIn [][]float64, mu []float64, clip float64) []float64 {
	d := len(mu)
	x := mat.NewDense(len(rowsIn), d, nil)
	for i, r := range rowsIn {
		x.SetRow(i, r)
	}
	// A source that stores its rows' norms, as the data engine's row cache
	// does: the shifted rows must not be scaled by them.
	src := &rowstest.Jitter{D: rows.FromDense(x), Seed: 3, Norms: true}
	c, err := newClipped(&shifted{src: src, mu: mu}, clip, 1, 1).gram(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for i := range d {
		out = append(out, c.At(i, i))
		for j := i + 1; j < d; j++ {
			out = append(out, math.Sqrt2*c.At(i, j))
		}
	}
	return out
}

func l2(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// The engine path of centred Analyze Gauss (CenterOfSum on the clipped
// rows' sums, then RunGram on the second moment of the rows shifted by
// that mean) releases, with the same seeded noise, what RunSource releases
// from the rows, up to the sums' rounding; and each step refuses a plan it
// does not fit.
func TestCenterOfSum(t *testing.T) {
	t.Parallel()
	const n, d, clip = 300, 3, 4.0
	x, _ := offsetRows(rand.New(rand.NewPCG(5, 6)), n, d)
	plan := func(center bool) *Plan {
		pl, err := PlanAnalyzeGauss(Options{K: 2, Eps: 1, Delta: 1e-6, Clip: clip, Center: center, Noise: noise.NewSeeded(9)}, d)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	want, err := plan(true).Run(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	// The clipped rows' sum in units of the clip, as an engine returns it.
	src := rows.FromDense(x)
	sum := make([]float64, d)
	for i := range n {
		a := x.RawRowView(i)
		s, _ := rowScale(a, clip)
		for j, v := range a {
			sum[j] += s * v
		}
	}
	pl := plan(true)
	cr, err := pl.CenterOfSum(sum, n)
	if err != nil {
		t.Fatal(err)
	}
	mu := cr.Mean()
	for j := range mu {
		if math.Abs(mu[j]-want.Center[j]) > 1e-9 {
			t.Fatalf("centre %v from the sums, %v from the rows", mu, want.Center)
		}
	}
	g, err := newClipped(&shifted{src: src, mu: mu}, clip, 1, 1).gram(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := pl.RunGram(context.Background(), g, cr)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want.Values {
		if math.Abs(got.Values[j]-want.Values[j]) > 1e-6*math.Abs(want.Values[j]) {
			t.Errorf("eigenvalue %d: %v on the engine path, %v from the rows", j, got.Values[j], want.Values[j])
		}
	}
	if len(got.Center) != d || got.Center[0] != mu[0] {
		t.Errorf("the release's centre is %v, want %v", got.Center, mu)
	}

	// Refusals: a centred plan needs its mean, an uncentred one none; the
	// sums must have the plan's dimension.
	zero := mat.NewSymDense(d, nil)
	for name, f := range map[string]func() error{
		"centred without a mean": func() error { _, err := plan(true).RunGram(context.Background(), zero, nil); return err },
		"uncentred with a mean":  func() error { _, err := plan(false).RunGram(context.Background(), zero, cr); return err },
		"a mean of another d": func() error {
			_, err := plan(true).RunGram(context.Background(), zero, &CenterRelease{mean: mu[:2]})
			return err
		},
		"uncentred CenterOfSum": func() error { _, err := plan(false).CenterOfSum(sum, n); return err },
		"sums of another d":     func() error { _, err := plan(true).CenterOfSum(sum[:2], n); return err },
		"a negative count":      func() error { _, err := plan(true).CenterOfSum(sum, -1); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
