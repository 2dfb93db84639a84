package federated

import (
	"context"
	"math"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/extreme"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Project issue 10 for DPS-PCA: PlanPCA never panics, and a plan it accepts
// runs without error on providers of any size holding any values (the plan
// takes no row count; the runs below use 1, 2 and 257 rows per provider,
// one or three providers, and rows holding ±MaxFloat64, values whose
// squares overflow, subnormals, NaN and ±Inf).

// extremeProviders returns n providers of rows rows each.
func extremeProviders(t *testing.T, n, rows, d int) []Provider[PCARequest, PCAReply] {
	t.Helper()
	ps := make([]Provider[PCARequest, PCAReply], n)
	for j := range n {
		x := extreme.Rows(rows, d, j)
		p, err := NewPCAProvider(x, noise.NewSeeded(uint64(100*n+j)))
		if err != nil {
			t.Fatal(err)
		}
		ps[j] = p
	}
	return ps
}

func TestPlanBoundsAndRuns(t *testing.T) {
	const d = 5
	nan, inf := math.NaN(), math.Inf(1)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	type tc struct {
		name string
		mod  func(*PCAOptions)
		ok   bool
	}
	var cases []tc
	for _, v := range []float64{MinEps, 0.05, 1, 40, MaxEps} {
		cases = append(cases, tc{"eps=" + g(v), func(o *PCAOptions) { o.Eps = v }, true})
	}
	for _, v := range []float64{0, -1, nan, inf, math.SmallestNonzeroFloat64, 1e-300, math.Nextafter(MinEps, 0), math.Nextafter(MaxEps, inf), math.MaxFloat64} {
		cases = append(cases, tc{"eps=" + g(v), func(o *PCAOptions) { o.Eps = v }, false})
	}
	for _, v := range []float64{MinDelta, 1e-9, 0.999} {
		cases = append(cases, tc{"delta=" + g(v), func(o *PCAOptions) { o.Delta = v }, true})
	}
	for _, v := range []float64{0, -1, nan, 1, inf, math.SmallestNonzeroFloat64, math.Nextafter(MinDelta, 0)} {
		cases = append(cases, tc{"delta=" + g(v), func(o *PCAOptions) { o.Delta = v }, false})
	}
	for _, v := range []float64{0, MinInitFrac, 0.5, MaxInitFrac} {
		cases = append(cases, tc{"init_frac=" + g(v), func(o *PCAOptions) { o.InitFrac = v }, true})
	}
	for _, v := range []float64{-0.5, nan, inf, 1e-300, math.Nextafter(MinInitFrac, 0), math.Nextafter(MaxInitFrac, 1), 1} {
		cases = append(cases, tc{"init_frac=" + g(v), func(o *PCAOptions) { o.InitFrac = v }, false})
	}
	for _, v := range []int{0, 1, 50} {
		cases = append(cases, tc{"iters=" + strconv.Itoa(v), func(o *PCAOptions) { o.Iters = v }, true})
	}
	for _, v := range []int{-1, MaxIters + 1, math.MaxInt32, math.MaxInt} {
		cases = append(cases, tc{"iters=" + strconv.Itoa(v), func(o *PCAOptions) { o.Iters = v }, false})
	}
	for _, v := range []int{0, 1, 2, d} {
		cases = append(cases, tc{"k=" + strconv.Itoa(v), func(o *PCAOptions) { o.K, o.Sparsity = v, d }, true})
	}
	for _, v := range []int{-1, d + 1, math.MaxInt} {
		cases = append(cases, tc{"k=" + strconv.Itoa(v), func(o *PCAOptions) { o.K = v }, false})
	}
	for _, v := range []int{1, 3, d} {
		cases = append(cases, tc{"sparsity=" + strconv.Itoa(v), func(o *PCAOptions) { o.Sparsity = v }, true})
	}
	for _, v := range []int{0, -1, d + 1, math.MaxInt} {
		cases = append(cases, tc{"sparsity=" + strconv.Itoa(v), func(o *PCAOptions) { o.Sparsity = v }, false})
	}
	cases = append(cases,
		tc{"zcdp", func(o *PCAOptions) { o.Calibration = CalibZCDP }, true},
		tc{"paper", func(o *PCAOptions) { o.Calibration = CalibPaper; o.Eps = 0.5 }, true},
		tc{"paper, smallest budget", func(o *PCAOptions) { o.Calibration = CalibPaper; o.Eps, o.Delta = MinEps, MinDelta }, true},
		tc{"smallest budget", func(o *PCAOptions) { o.Eps, o.Delta, o.InitFrac = MinEps, MinDelta, MinInitFrac }, true},
		tc{"largest budget", func(o *PCAOptions) { o.Eps, o.Delta, o.InitFrac = MaxEps, 0.999, MaxInitFrac }, true},
		tc{"public start", func(o *PCAOptions) { o.Start = mat.NewDense(d, 1, []float64{1, 0, 0, 0, 0}) }, true},
	)
	for _, c := range cases {
		opt := PCAOptions{K: 1, Sparsity: 3, Iters: 2, Eps: 1, Delta: 1e-6}
		c.mod(&opt)
		var pl *PCAPlan
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: PlanPCA panicked: %v", c.name, r)
				}
			}()
			pl, err = PlanPCA(opt, d)
		}()
		if (err == nil) != c.ok {
			t.Errorf("%s: PlanPCA error %v, want ok=%v", c.name, err, c.ok)
			continue
		}
		if err != nil {
			if want := "federated dpspca: "; len(err.Error()) <= len(want) || err.Error()[:len(want)] != want {
				t.Errorf("%s: error %q does not name the mechanism", c.name, err)
			}
			continue
		}
		for _, n := range []int{1, 3} {
			for _, rows := range []int{1, 2, 257} {
				res, err := pl.Coordinate(context.Background(), NewLocal(extremeProviders(t, n, rows, d)))
				if err != nil {
					t.Fatalf("%s: a plan accepted failed with %d providers of %d rows: %v", c.name, n, rows, err)
				}
				k := pl.K
				var gram mat.Dense
				gram.Mul(res.Q.T(), res.Q)
				for i := range k {
					for j := range k {
						want := 0.0
						if i == j {
							want = 1
						}
						if v := gram.At(i, j); !(math.Abs(v-want) < 1e-9) {
							t.Fatalf("%s: QᵀQ[%d,%d] = %v", c.name, i, j, v)
						}
					}
				}
			}
		}
	}
}

// A row beyond the norm bound counts as zero: without it, s² = 1/‖a‖²
// fell into the subnormals, whose absolute rounding let one row's term
// exceed norm 1 (up to 2 near ‖a‖ ≈ 6e161), above the sensitivity the
// noise covers. Every row's contribution to the diagonal stays within the
// unit ball.
func TestProviderRowTermsWithinUnitBall(t *testing.T) {
	for i := range 400 {
		nrm := math.Ldexp(1, 450+i/4) * (1 + float64(i%4)/4)
		x := mat.NewDense(1, 2, []float64{nrm * 0.6, nrm * 0.8})
		p, err := NewPCAProvider(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		diag := answer(t, p, PCARequest{Step: StepDiag})
		if n := math.Hypot(diag[0], diag[1]); !(n <= 1+1e-12) {
			t.Errorf("row of norm %g: diagonal term of norm %v > 1", nrm, n)
		}
		q := mat.NewDense(2, 1, []float64{0.6, 0.8})
		prod := answer(t, p, PCARequest{Step: StepProduct, Q: q})
		if n := math.Hypot(prod[0], prod[1]); !(n <= 1+1e-12) {
			t.Errorf("row of norm %g: product term of norm %v > 1", nrm, n)
		}
	}
}
