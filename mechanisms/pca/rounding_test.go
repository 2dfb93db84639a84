package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg/exact"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// roundingNeighbours builds add/remove neighbours D ⊂ D' (d = 2) on which
// a running sum of C₁₁ = Σ a₁² breaks the sensitivity 1: 4095 rows e₁ bring
// the partial sum to 4095 (ulp 2^-41) in D and, with the extra row e₁, to
// 4096 (ulp 2^-40) in D'; then m rows of term δ ≈ 0.6·2^-40 each round to
// +2^-41 in D (a loss of 0.1·2^-40) and to +2^-40 in D' (a gain of
// 0.4·2^-40), so the computed sums differ by 1 + m·2^-41.
func roundingNeighbours(m int) (d0, d1 *mat.Dense, delta float64) {
	a1 := math.Sqrt(0.6 * 0x1p-40)
	var rows0 [][2]float64
	for i := 0; i < 4095; i++ {
		rows0 = append(rows0, [2]float64{1, 0})
	}
	rows1 := append(append([][2]float64(nil), rows0...), [2]float64{1, 0})
	for i := 0; i < m; i++ {
		rows0 = append(rows0, [2]float64{a1, 0})
		rows1 = append(rows1, [2]float64{a1, 0})
	}
	toDense := func(rs [][2]float64) *mat.Dense {
		x := mat.NewDense(len(rs), 2, nil)
		for i, r := range rs {
			x.SetRow(i, r[:])
		}
		return x
	}
	return toDense(rows0), toDense(rows1), a1 * a1
}

// naiveC11 is the running sum the package used before rowpass.Pairwise
// (one shard, rows in order).
func naiveC11(x *mat.Dense) float64 {
	r := prepareRows(x, 1, 1)
	s := 0.0
	for i := 0; i < r.n; i++ {
		v := r.scale[i] * r.row(i)[0]
		s += v * v
	}
	return s
}

func TestNeighbourRoundingWithinChargedSensitivity(t *testing.T) {
	const m = 20000
	d0, d1, delta := roundingNeighbours(m)
	if q := delta / 0x1p-40; !(q > 0.5 && q < 0.75) {
		t.Fatalf("construction: δ = %v·2^-40, want in (0.5, 0.75)", q)
	}
	const sens = 1 // add/remove, gauss and npm with p = 1, adaptive per θ
	// The old running sum exceeds the sensitivity by far more than 1e-9.
	naive := math.Abs(naiveC11(d1) - naiveC11(d0))
	if naive <= sens*roundingSlack {
		t.Fatalf("running sum: neighbour difference %v within Δ(1+1e-9): the construction does not exhibit the gap", naive)
	}
	t.Logf("running sum: neighbour difference 1 + %.3g", naive-1)

	gp, err := PlanAnalyzeGauss(Options{Eps: 1, Delta: 1e-6, Neighbour: accounting.AddRemove}, 2)
	if err != nil {
		t.Fatal(err)
	}
	np, err := PlanNoisyPower(Options{Eps: 1, Delta: 1e-6, Iters: 1, Neighbour: accounting.AddRemove}, 2)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := PlanAdaptive(Options{Eps: 1, Delta: 1e-6, Iters: 1, Neighbour: accounting.AddRemove}, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(2, 1, []float64{1, 0})
	for _, workers := range []int{1, 2} {
		r0, r1 := prepareRows(d0, 1, workers), prepareRows(d1, 1, workers)
		r0.pass.MinRows, r1.pass.MinRows = 1, 1 // several shards even here
		upper := func(c *mat.SymDense) []float64 { return []float64{c.At(0, 0), c.At(0, 1), c.At(1, 1)} }
		g0, g1 := upper(r0.gram(context.Background())), upper(r1.gram(context.Background()))
		c0, c1 := r0.covTimes(x).RawMatrix().Data, r1.covTimes(x).RawMatrix().Data
		a0, a1 := r0.apmPass([]float64{1, 0}), r1.apmPass([]float64{1, 0})
		v0, v1 := make([]float64, 2), make([]float64, 2)
		bucketSum(v0, a0.sums, 2, 0, gridTop+1)
		bucketSum(v1, a1.sums, 2, 0, gridTop+1)
		for _, tc := range []struct {
			name     string
			got      float64
			plan     *Plan
			expected float64 // the exact difference
		}{
			{"gram", floats.Distance(g0, g1, 2), gp, 1},
			{"covTimes", floats.Distance(c0, c1, 2), np, 1},
			{"apmPass", floats.Distance(v0, v1, 2), ap, 1},
		} {
			charged := (tc.plan.Sensitivity + tc.plan.RoundingExcess) * roundingSlack
			if tc.got > charged {
				t.Errorf("workers=%d %s: neighbour difference %v exceeds the charged sensitivity %v", workers, tc.name, tc.got, charged)
			}
			// Pairwise keeps this construction far inside even the old
			// slack; a regression to a running sum would not.
			if tc.got > tc.expected*roundingSlack {
				t.Errorf("workers=%d %s: neighbour difference 1 + %.3g exceeds Δ(1+1e-9)", workers, tc.name, tc.got-1)
			}
		}
	}
}

// within fails t unless every entry of got is within γ times its
// majorant of the exact sum.
func within(t *testing.T, name string, got []float64, sums *exact.Sums, gamma float64) {
	t.Helper()
	bad, worst := sums.Within(got, gamma)
	if bad >= 0 {
		t.Errorf("%s: entry %d exceeds γ = %.3g times its majorant", name, bad, gamma)
	}
	t.Logf("%s: largest error/Σ|majorant| = %.3g (bound γ = %.3g)", name, worst, gamma)
}

// TestSumErrorBounds checks every released sum against exact big.Float
// sums of its reference terms, entry by entry, with the rounding budgets
// that sumExcess charges.
func TestSumErrorBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	const n, d = 3000, 5
	random := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			random.Set(i, j, rng.NormFloat64()*math.Exp(3*rng.NormFloat64()))
		}
	}
	// Cancelling rows: ±(1, 1, …) halves with tiny perturbations.
	cancel := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			v := 1 + float64(j)*1e-9*rng.NormFloat64()
			if (i+j)%2 == 1 {
				v = -v
			}
			if i%5 == 4 {
				v *= 1e-8
			}
			cancel.Set(i, j, v)
		}
	}
	d0, _, _ := roundingNeighbours(8000)
	for name, data := range map[string]*mat.Dense{"random": random, "cancel": cancel, "round-up": d0} {
		_, dd := data.Dims()
		r := prepareRows(data, 0.5, 2)
		r.pass.MinRows = 1
		x := randomOrtho(rand.New(rand.NewPCG(12, 12)), dd, min(2, dd))
		p := x.RawMatrix().Cols
		xv := mat.Col(nil, 0, x)

		// Gram: t = (s·a)(s·a)ᵀ, majorant |t|.
		gExact := exact.New(dd * dd)
		// C·X: t = s²(aᵀx_j)a_k, majorant s²|a_k|(|a|ᵀ|x_j|).
		cExact := exact.New(dd * p)
		// Adaptive (all buckets): t = c·a with c = fl(s·⟨s·a, x⟩).
		aExact := exact.New(dd)
		for i := 0; i < r.n; i++ {
			s, a := r.scale[i], r.row(i)
			if s == 0 {
				continue
			}
			for j := 0; j < dd; j++ {
				for k := j; k < dd; k++ {
					gExact.Add(j*dd+k, s, s, a[j], a[k])
				}
			}
			for j := 0; j < p; j++ {
				for k := 0; k < dd; k++ {
					for l := 0; l < dd; l++ {
						cExact.Add(k*p+j, s, s, a[k], a[l], x.At(l, j))
					}
				}
			}
			c := s * (s * floats.Dot(a, xv))
			for k := 0; k < dd; k++ {
				aExact.Add(k, c, a[k])
			}
		}
		gram := r.gram(context.Background())
		gGot := make([]float64, dd*dd)
		for j := 0; j < dd; j++ {
			for k := j; k < dd; k++ {
				gGot[j*dd+k] = gram.At(j, k)
			}
		}
		within(t, name+"/gram", gGot, gExact, rowpass.Gamma(gaussRoundings))
		within(t, name+"/covTimes", r.covTimes(x).RawMatrix().Data, cExact, rowpass.Gamma(npmRoundings(dd)))
		y := mat.NewDense(dd, p, nil)
		y.Mul(gram, x)
		within(t, name+"/gram·X", y.RawMatrix().Data, cExact, rowpass.Gamma(npmRoundings(dd)))
		acc := r.apmPass(xv)
		v := make([]float64, dd)
		bucketSum(v, acc.sums, dd, 0, gridTop+1)
		within(t, name+"/apmPass", v, aExact, rowpass.Gamma(apmRoundings))
	}
}

// TestRoundingExcessSmall reports the noise increase the charge costs for
// the realistic shapes and keeps it below 0.1%.
func TestRoundingExcessSmall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		opt    Options
		d      int
	}{
		{"npm d=100 p=5 replace-one", MethodNPM, Options{K: 5, Iters: 10}, 100},
		{"npm d=100 p=5 add/remove", MethodNPM, Options{K: 5, Iters: 10, Neighbour: accounting.AddRemove}, 100},
		{"npm d=1000 p=10", MethodNPM, Options{K: 10, Iters: 10}, 1000},
		{"gauss d=31", MethodGauss, Options{}, 31},
		{"gauss d=31 add/remove", MethodGauss, Options{Neighbour: accounting.AddRemove}, 31},
		{"adaptive d=20", MethodAdaptive, Options{Iters: 10}, 20},
		{"adaptive d=20 add/remove", MethodAdaptive, Options{Iters: 10, Neighbour: accounting.AddRemove}, 20},
	} {
		tc.opt.Eps, tc.opt.Delta = 1, 1e-6
		pl, err := PlanMethod(tc.method, tc.opt, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		rel := pl.RoundingExcess / pl.Sensitivity
		t.Logf("%s: rounding excess %.3g on sensitivity %.3g: noise +%.3g%%", tc.name, pl.RoundingExcess, pl.Sensitivity, 100*rel)
		if !(rel > 0 && rel < 1e-3) {
			t.Errorf("%s: rounding excess %v is %.3g of the sensitivity, want in (0, 1e-3)", tc.name, pl.RoundingExcess, rel)
		}
	}
}

func TestRunRefusesMoreThanMaxRows(t *testing.T) {
	// A zero-column view with MaxRows+1 rows cannot be built cheaply, so
	// check the limit with a matrix header only. SetRawMatrix does not
	// check the backing slice, and checkSource reads only the dimensions
	// (a matrix knows its row count, so it is refused before any pass).
	big := &mat.Dense{}
	big.SetRawMatrix(blas64.General{Rows: MaxRows + 1, Cols: 1, Stride: 1, Data: make([]float64, 1)})
	if err := checkSource(MethodNPM, rows.FromDense(big), 1); err == nil {
		t.Error("checkSource accepted more than MaxRows rows")
	}
	if err := checkSource(MethodNPM, rows.FromDense(mat.NewDense(3, 1, nil)), 1); err != nil {
		t.Errorf("checkSource refused 3 rows: %v", err)
	}
	pl, err := PlanNoisyPower(Options{Eps: 1, Delta: 1e-6, Iters: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Run(context.Background(), big); err == nil || !strings.Contains(err.Error(), "more than pca.MaxRows") {
		t.Errorf("Run on MaxRows+1 rows: %v", err)
	}
}
