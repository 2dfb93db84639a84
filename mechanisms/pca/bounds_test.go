package pca

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/extreme"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Project issue 10 for private_pca's methods npm, adaptive and gauss: a plan
// never panics (the noise package used to panic on extreme scales, and the
// panic reached cells before the charge), every analyst parameter outside
// its documented bounds is refused with a fixed message naming it, and a
// plan that is accepted runs without error on any data of any size: the
// plans take no row count, so the runs below use sizes on both sides of the
// 256-row block of the pairwise sums and rows holding ±MaxFloat64,
// subnormals, NaN and ±Inf.

// extremeRows returns n rows of d columns of every extreme kind.
func extremeRows(n, d int) *mat.Dense { return extreme.Rows(n, d, 0) }

// planNoPanic plans and turns a panic into a test failure.
func planNoPanic(t *testing.T, method string, opt Options, d int) (pl *Plan, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("PlanMethod(%s, %+v, %d) panicked: %v", method, opt, d, r)
		}
	}()
	return PlanMethod(method, opt, d)
}

// checkResult asserts a finite release with orthonormal columns.
func checkResult(t *testing.T, name string, res *Result, d, k int) {
	t.Helper()
	if r, c := res.Components.Dims(); r != d || c != k {
		t.Fatalf("%s: components %d×%d, want %d×%d", name, r, c, d, k)
	}
	var g mat.Dense
	g.Mul(res.Components.T(), res.Components)
	for i := range k {
		for j := range k {
			want := 0.0
			if i == j {
				want = 1
			}
			if v := g.At(i, j); !(math.Abs(v-want) < 1e-9) {
				t.Fatalf("%s: CᵀC[%d,%d] = %v", name, i, j, v)
			}
		}
	}
	for _, v := range append(append([]float64(nil), res.Values...), res.Thresholds...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: released a non-finite value %v", name, v)
		}
	}
}

// runSizes are the row counts each accepted plan runs on.
var runSizes = []int{1, 2, 7, 256, 257}

func TestPlanBoundsAndRuns(t *testing.T) {
	const d = 4
	nan, inf := math.NaN(), math.Inf(1)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	type tc struct {
		name string
		mod  func(*Options)
		want string // "" when accepted; else the exact message after "pca METHOD: "
	}
	var cases []tc
	for _, v := range []float64{MinEps, 0.05, 1, 40, MaxEps} {
		cases = append(cases, tc{"eps=" + g(v), func(o *Options) { o.Eps = v }, ""})
	}
	for _, v := range []float64{math.SmallestNonzeroFloat64, 1e-300, math.Nextafter(MinEps, 0), math.Nextafter(MaxEps, inf), 1e300, math.MaxFloat64} {
		cases = append(cases, tc{"eps=" + g(v), func(o *Options) { o.Eps = v }, fmt.Sprintf("eps=%v: use 1e-06 ≤ eps ≤ 1e+06", v)})
	}
	for _, v := range []float64{0, -1, nan, inf} {
		cases = append(cases, tc{"eps=" + g(v), func(o *Options) { o.Eps = v }, fmt.Sprintf("eps=%v: the privacy parameter eps must be a finite number > 0", v)})
	}
	for _, v := range []float64{MinDelta, 1e-9, 0.1, 0.999} {
		cases = append(cases, tc{"delta=" + g(v), func(o *Options) { o.Delta = v }, ""})
	}
	for _, v := range []float64{math.SmallestNonzeroFloat64, 1e-300, math.Nextafter(MinDelta, 0)} {
		cases = append(cases, tc{"delta=" + g(v), func(o *Options) { o.Delta = v }, fmt.Sprintf("delta=%v: use 1e-100 ≤ delta < 1", v)})
	}
	for _, v := range []float64{0, -1, nan, 1, inf, math.MaxFloat64} {
		cases = append(cases, tc{"delta=" + g(v), func(o *Options) { o.Delta = v }, fmt.Sprintf("delta=%v: delta must satisfy 0 < delta < 1 (e.g. 1e-6; choose δ without looking at the data)", v)})
	}
	for _, v := range []float64{0, MinClip, 1e-10, 1, 1e50, MaxClip} {
		cases = append(cases, tc{"clip=" + g(v), func(o *Options) { o.Clip = v }, ""})
	}
	for _, v := range []float64{math.SmallestNonzeroFloat64, 1.39e-271, math.Nextafter(MinClip, 0), math.Nextafter(MaxClip, inf), math.MaxFloat64, inf, nan, -1} {
		cases = append(cases, tc{"clip=" + g(v), func(o *Options) { o.Clip = v }, fmt.Sprintf("clip=%v: the row-norm bound must be a number in [1e-100, 1e+100]", v)})
	}
	for _, v := range []int{1, 2, MaxIters} {
		cases = append(cases, tc{"iters=" + strconv.Itoa(v), func(o *Options) { o.Iters = v }, ""})
	}
	for _, v := range []int{-1, MaxIters + 1, 1 << 20, math.MaxInt32, math.MaxInt} {
		cases = append(cases, tc{"iters=" + strconv.Itoa(v), func(o *Options) { o.Iters = v }, fmt.Sprintf("iters=%d: use 0 for the default or 1..10000", v)})
	}
	for _, v := range []int{-1, d + 1, math.MaxInt32, math.MaxInt} {
		cases = append(cases, tc{"k=" + strconv.Itoa(v), func(o *Options) { o.K = v }, fmt.Sprintf("k=%d components requested but d=4 columns: use 1 ≤ k ≤ d", v)})
	}
	cases = append(cases,
		tc{"add-remove", func(o *Options) { o.Neighbour = accounting.AddRemove }, ""},
		tc{"paper", func(o *Options) { o.Calibration = CalibPaper; o.Eps = 0.5 }, ""},
		tc{"paper, smallest budget", func(o *Options) { o.Calibration = CalibPaper; o.Eps, o.Delta = MinEps, MinDelta }, ""},
		tc{"smallest budget", func(o *Options) { o.Eps, o.Delta = MinEps, MinDelta }, ""},
		tc{"largest budget", func(o *Options) { o.Eps, o.Delta = MaxEps, 0.999 }, ""},
		tc{"largest budget, smallest clip", func(o *Options) { o.Eps, o.Delta, o.Clip = MaxEps, 0.999, MinClip }, ""},
		tc{"smallest budget, largest clip", func(o *Options) { o.Eps, o.Delta, o.Clip = MinEps, MinDelta, MaxClip }, ""},
		tc{"beta=NaN", func(o *Options) { o.Beta = nan }, "beta=NaN: the failure probability must be in (0, 1)"},
		tc{"gap=-Inf", func(o *Options) { o.Gap = -inf }, "gap=-Inf: the assumed relative eigengap must be in (0, 1] (0 for the default)"},
		tc{"public n -1", func(o *Options) { o.PublicN = -1 }, "public row count -1 must be in 0..2^30"},
	)
	for _, method := range Methods {
		for _, c := range cases {
			opt := Options{K: 1, Iters: 3, Eps: 1, Delta: 1e-6}
			if method == MethodGauss {
				opt.Iters = 0
			}
			c.mod(&opt)
			name := method + " " + c.name
			pl, err := planNoPanic(t, method, opt, d)
			want := c.want
			if want != "" {
				want = "pca " + method + ": " + want
			}
			// Method-specific refusals of values the common bounds accept.
			switch {
			case want == "" && method == MethodGauss && opt.Iters > 1:
				want = "pca gauss: Analyze Gauss is a single release; leave iters 0"
			case want == "" && method == MethodGauss && opt.Calibration == CalibPaper && opt.Eps >= 1:
				want = "pca gauss: paper calibration uses the classical Gaussian mechanism, proven only for eps < 1: use calibration zcdp"
			}
			if strings.HasPrefix(c.name, "iters=") && method == MethodGauss && opt.Iters > 1 && c.want != "" {
				want = "pca gauss: " + c.want // the common bound is checked first
			}
			if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
				t.Errorf("%s: PlanMethod error %v, want %q", name, err, want)
				continue
			}
			if err != nil {
				continue
			}
			if opt.Iters > 100 {
				continue // planned only: the sizes below would take too long at 10⁴ iterations
			}
			for _, n := range runSizes {
				run := *pl
				run.opt.Noise = noise.NewSeeded(uint64(n))
				res, err := run.Run(context.Background(), extremeRows(n, d))
				if err != nil {
					t.Fatalf("%s: a plan accepted failed on %d rows: %v", name, n, err)
				}
				checkResult(t, name, res, d, pl.K)
			}
		}
	}
}

// Every grid threshold the adaptive method's sparse-vector step can pick
// has a std the sampler accepts, computed when planning, for the extreme
// budgets: the run never calls the calibration itself.
func TestAdaptiveGridStdsChecked(t *testing.T) {
	for _, o := range []Options{
		{Eps: MinEps, Delta: MinDelta, Iters: MaxIters, Clip: MaxClip},
		{Eps: MaxEps, Delta: 0.999, Iters: 1, Clip: MinClip},
		{Eps: MinEps, Delta: MinDelta, Iters: 1, Calibration: CalibPaper},
	} {
		pl, err := planNoPanic(t, MethodAdaptive, o, 3)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		for k, std := range pl.gridStds {
			// (Δ + excess)·θ̂_k·(1 + 1e-9)·z ≤ std, and it is a valid scale.
			if need := (pl.Sensitivity + pl.RoundingExcess) * math.Ldexp(1, k-64) * pl.NoiseMultiplier; !(std >= need) || noise.CheckScale(std) != nil {
				t.Errorf("%+v: grid point %d: std %v (need ≥ %v, in the samplers' range)", o, k, std, need)
			}
		}
	}
}

// A kept row's contribution to the adaptive method's filtered sum has norm
// at most the threshold it was kept at, whatever its size: the sensitivity
// the Gaussian step is calibrated to (per unit of θ̂). Rows of norm near
// MaxFloat64 whose score is tiny broke it when the weight s·⟨s·a, x⟩ was
// formed after the dot product: it underflowed into the subnormals, whose
// absolute rounding (up to 2.5e-324) times ‖a‖ ≈ 1.6e308 gave a term of
// norm up to 4e-16, kept at θ̂ = 2^-56 ≈ 1.4e-17.
func TestAdaptiveTermWithinThreshold(t *testing.T) {
	const d = 3
	bad := 0
	for i := range 200 {
		// a = A·u for a unit u, x a unit vector with ⟨u, x⟩ = c small.
		phi := 0.1 + float64(i)*0.013
		u := []float64{math.Cos(phi), math.Sin(phi), 0}
		c := math.Ldexp(1+float64(i%17)/17, -50-i%30)
		x := []float64{-math.Sin(phi) * math.Sqrt(1-c*c), math.Cos(phi) * math.Sqrt(1-c*c), 0}
		for j := range x {
			x[j] += c * u[j]
		}
		A := math.MaxFloat64 / (1.1 + float64(i%5))
		data := mat.NewDense(1, d, []float64{A * u[0], A * u[1], A * u[2]})
		acc := prepareRows(data, 1, 1).apmPass(x)
		for b := 0; b <= gridTop; b++ {
			if acc.hist[b] == 0 {
				continue
			}
			var ss float64
			for _, v := range acc.sums[b*d : (b+1)*d] {
				ss += v * v
			}
			if theta := gridPoint(b); !(math.Sqrt(ss) <= theta*roundingSlack) {
				bad++
				if bad <= 3 {
					t.Errorf("row %d: kept at θ̂ = %g with a term of norm %g", i, theta, math.Sqrt(ss))
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 200 rows exceed their threshold", bad)
	}
}
