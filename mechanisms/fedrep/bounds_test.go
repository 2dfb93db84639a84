package fedrep

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Project issue 10: everything that can fail must fail before the charge,
// from public facts only, for every number of users n from 1 to MaxUsers;
// after the charge a run always returns a release. The runtime plans with
// the public n, charges, then runs on exactly n users. The tests below
// check, for every analyst parameter at its extremes, that PlanRun fails
// for every n of boundsN with the same message or succeeds for all of them
// with the same noise, and that a plan it accepts runs without error on n
// users holding extreme records (the small n for real, with a seeded
// sampler).

// boundsN are the user counts tried: both sides of a batch-rule and
// transport-block boundary (50, 51), and the limit.
var boundsN = []int{1, 2, 50, 51, 1000, MaxUsers}

// runN are the counts run for real (1000 users with T up to 1000 rounds
// would take too long on two cores; 51 already spans several transport
// blocks).
var runN = map[int]bool{1: true, 2: true, 50: true, 51: true}

// extremeUsers returns n users of d features holding records that stress
// every step: values near ±MaxFloat64 (their Z_i and gradients overflow and
// are dropped), subnormal values, zeros, and ordinary values.
func extremeUsers(t *testing.T, n, d int) []federated.Provider[Request, Reply] {
	t.Helper()
	kinds := []func(i, j int) float64{
		func(i, j int) float64 { return math.MaxFloat64 / float64(1+i+j) },                           // overflow
		func(i, j int) float64 { return -math.SmallestNonzeroFloat64 * float64(1+(i+j)%3) },          // subnormal
		func(int, int) float64 { return 0 },                                                          // zero
		func(i, j int) float64 { return math.Sin(float64(3*i + 7*j + 1)) },                           // ordinary
		func(i, j int) float64 { return 1e154 * math.Cos(float64(i+j)) },                             // squares overflow
		func(i, j int) float64 { return math.Pow(-1, float64(i)) * math.Ldexp(1, -500+10*(i+j)%40) }, // tiny and wide
	}
	ps := make([]federated.Provider[Request, Reply], n)
	for u := range n {
		kind := kinds[u%len(kinds)]
		m := MinRecords + u%3
		x := mat.NewDense(m, d, nil)
		y := make([]float64, m)
		for i := range m {
			for j := range d {
				x.Set(i, j, kind(i+u, j))
			}
			y[i] = kind(i, d+u)
		}
		usr, err := NewUserSeeded(x, y, uint64(u)+1)
		if err != nil {
			t.Fatal(err)
		}
		ps[u] = usr
	}
	return ps
}

// checkRelease asserts that a run's release is a finite d×k matrix with
// orthonormal columns.
func checkRelease(t *testing.T, name string, res *Result, d, k int) {
	t.Helper()
	if r, c := res.U.Dims(); r != d || c != k {
		t.Fatalf("%s: U is %d×%d, want %d×%d", name, r, c, d, k)
	}
	var g mat.Dense
	g.Mul(res.U.T(), res.U)
	for i := range k {
		for j := range k {
			want := 0.0
			if i == j {
				want = 1
			}
			if v := g.At(i, j); !(math.Abs(v-want) < 1e-9) {
				t.Fatalf("%s: UᵀU[%d,%d] = %v, want %v", name, i, j, v, want)
			}
		}
	}
}

// planEveryN plans opt for every n of boundsN and checks the rule: all fail
// with one message, or all succeed with the same noise (finite, > 0). It
// returns the error (nil if all succeed) and the plans by n.
func planEveryN(t *testing.T, name string, opt Options, d int) (error, map[int]*Plan) {
	t.Helper()
	plans := map[int]*Plan{}
	var firstErr error
	for i, n := range boundsN {
		pl, err := PlanRun(opt, d, n)
		if i == 0 {
			firstErr = err
		}
		switch {
		case (err == nil) != (firstErr == nil):
			t.Fatalf("%s: PlanRun fails for n=%d (%v) but not for n=%d (%v): the failure reveals n", name, n, err, boundsN[0], firstErr)
		case err != nil && err.Error() != firstErr.Error():
			t.Fatalf("%s: the error depends on n: %q (n=%d) vs %q (n=%d)", name, err, n, firstErr, boundsN[0])
		case err == nil:
			plans[n] = pl
		}
	}
	if firstErr != nil {
		return firstErr, nil
	}
	p1 := plans[boundsN[0]]
	for n, pl := range plans {
		if pl.StepStd != p1.StepStd || pl.InitStd != p1.InitStd {
			t.Errorf("%s: n=%d: noise stds on the sums %v, %v differ from n=1's %v, %v", name, n, pl.StepStd, pl.InitStd, p1.StepStd, p1.InitStd)
		}
		stds := []float64{pl.StepStd, pl.StepAverageStd}
		if pl.InitFromData {
			stds = append(stds, pl.InitStd, pl.InitAverageStd)
		}
		for _, s := range stds {
			if !(s > 0) || math.IsInf(s, 0) {
				t.Errorf("%s: n=%d: a noise std is %v, want finite and > 0", name, n, s)
			}
		}
		// The sampler accepts the stds it will be given.
		if noise.CheckScale(pl.StepStd) != nil || noise.CheckScale(pl.InitStd) != nil {
			t.Errorf("%s: n=%d: std %v or %v outside the samplers' range", name, n, pl.StepStd, pl.InitStd)
		}
	}
	return nil, plans
}

// runPlans runs each accepted plan with a small n on extreme users.
func runPlans(t *testing.T, name string, plans map[int]*Plan, d, k int) {
	t.Helper()
	for n, pl := range plans {
		if !runN[n] {
			continue
		}
		run := *pl
		run.opt.Noise = noise.NewSeeded(uint64(n))
		res, err := run.Coordinate(context.Background(), federated.NewLocal(extremeUsers(t, n, d)))
		if err != nil {
			t.Fatalf("%s: a plan accepted for n=%d failed after its charge: %v", name, n, err)
		}
		checkRelease(t, name, res, d, k)
	}
}

// TestPsiBoundsIndependentOfN is the regression test of the FedRep break:
// the runtime planned with n = 1, charged, and planned again with the real
// n, whose noise std ∝ ψ/n fell below the sampler's minimum for tiny ψ
// (e.g. 1.39e-271), so whether the call failed after its charge told a
// bisection over ψ the number of users.
func TestPsiBoundsIndependentOfN(t *testing.T) {
	const d, k = 3, 1
	refused := "must be a number in [1e-100, 1e+100]"
	for _, c := range []struct {
		psi float64
		ok  bool
	}{
		{math.SmallestNonzeroFloat64, false},
		{1.39e-271, false},
		{1e-200, false},
		{math.Nextafter(MinClip, 0), false},
		{MinClip, true},
		{1e-10, true},
		{1, true},
		{1e50, true},
		{MaxClip, true},
		{math.Nextafter(MaxClip, math.Inf(1)), false},
		{math.MaxFloat64, false},
		{math.Inf(1), false},
		{math.NaN(), false},
		{0, false},
		{-1, false},
	} {
		for _, which := range []string{"psi", "psi_init"} {
			opt := Options{K: k, Iters: 2, Eta: 0.5, Psi: 1, PsiInit: 1, Eps: 1, Delta: 1e-6}
			if which == "psi" {
				opt.Psi = c.psi
			} else {
				opt.PsiInit = c.psi
			}
			name := which + "=" + fmtFloat(c.psi)
			err, plans := planEveryN(t, name, opt, d)
			if c.ok != (err == nil) {
				t.Fatalf("%s: PlanRun error %v, want ok=%v", name, err, c.ok)
			}
			if err != nil {
				if want := "fedrep: " + which + "="; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), refused) {
					t.Errorf("%s: error %q, want %q…%q", name, err, want, refused)
				}
				continue
			}
			runPlans(t, name, plans, d, k)
		}
	}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestParameterBoundsIndependentOfN: every other analyst parameter at its
// extremes (0, negative, NaN, ±Inf, MaxFloat64, the smallest float, huge
// integers, just inside and just outside each documented bound) either
// fails PlanRun for every n with one message naming the parameter, or is
// accepted for every n with the same noise and runs on extreme users.
func TestParameterBoundsIndependentOfN(t *testing.T) {
	const d = 3
	nan, inf := math.NaN(), math.Inf(1)
	base := Options{K: 1, Iters: 2, Eta: 0.5, Psi: 1, PsiInit: 1, Eps: 1, Delta: 1e-6}
	type tc struct {
		name string
		mod  func(*Options)
		want string // "" when accepted; else the start of the error
	}
	floatCases := func(param string, set func(*Options, float64), ok, bad []float64, want string) []tc {
		var out []tc
		for _, v := range ok {
			out = append(out, tc{param + "=" + fmtFloat(v), func(o *Options) { set(o, v) }, ""})
		}
		for _, v := range bad {
			out = append(out, tc{param + "=" + fmtFloat(v), func(o *Options) { set(o, v) }, want})
		}
		return out
	}
	var cases []tc
	cases = append(cases, floatCases("eta", func(o *Options, v float64) { o.Eta = v },
		[]float64{MinEta, 0.5, 2.5, 1e10, MaxEta},
		[]float64{0, -1, nan, inf, -inf, math.SmallestNonzeroFloat64, math.Nextafter(MinEta, 0), math.Nextafter(MaxEta, inf), math.MaxFloat64},
		"fedrep: eta=")...)
	cases = append(cases, floatCases("eps", func(o *Options, v float64) { o.Eps = v },
		[]float64{MinEps * 100, 0.05, 1, 40, MaxEps},
		[]float64{0, -1, nan, inf, math.SmallestNonzeroFloat64, 1e-300, math.Nextafter(MinEps, 0), math.Nextafter(MaxEps, inf), 1e300, math.MaxFloat64},
		"fedrep: eps=")...)
	cases = append(cases, floatCases("delta", func(o *Options, v float64) { o.Delta = v },
		[]float64{MinDelta, 1e-9, 0.1, 0.999},
		[]float64{0, -1, nan, inf, 1, math.SmallestNonzeroFloat64, 1e-300, math.Nextafter(MinDelta, 0), math.MaxFloat64},
		"fedrep: delta=")...)
	cases = append(cases, floatCases("init_frac", func(o *Options, v float64) { o.InitFrac = v },
		[]float64{0, MinInitFrac, 0.2, MaxInitFrac},
		[]float64{-0.5, nan, inf, math.SmallestNonzeroFloat64, 1e-300, math.Nextafter(MinInitFrac, 0), math.Nextafter(MaxInitFrac, 1), 1, 2},
		"fedrep: init fraction ")...)
	intCases := func(param string, set func(*Options, int), ok, bad []int, want string) []tc {
		var out []tc
		for _, v := range ok {
			out = append(out, tc{param + "=" + strconv.Itoa(v), func(o *Options) { set(o, v) }, ""})
		}
		for _, v := range bad {
			out = append(out, tc{param + "=" + strconv.Itoa(v), func(o *Options) { set(o, v) }, want})
		}
		return out
	}
	cases = append(cases, intCases("iters", func(o *Options, v int) { o.Iters = v },
		[]int{1, 5, MaxIters}, []int{0, -1, MaxIters + 1, 1 << 20, math.MaxInt32, math.MaxInt}, "fedrep: iters=")...)
	cases = append(cases, intCases("k", func(o *Options, v int) { o.K = v },
		[]int{1, d}, []int{0, -1, d + 1, math.MaxInt32, math.MaxInt}, "fedrep: k=")...)
	cases = append(cases, intCases("batch", func(o *Options, v int) { o.Batch = v },
		[]int{0, 1, 2, 1000, MaxBatch}, []int{-1, MaxBatch + 1, math.MaxInt}, "fedrep: batch=")...)
	cases = append(cases,
		tc{"neighbour add-remove", func(o *Options) { o.Neighbour = accounting.AddRemove }, ""},
		tc{"neighbour 7", func(o *Options) { o.Neighbour = 7 }, "fedrep: invalid neighbour relation 7"},
		tc{"calibration zcdp", func(o *Options) { o.Calibration = CalibZCDP }, ""},
		tc{"calibration 7", func(o *Options) { o.Calibration = 7 }, "fedrep: invalid calibration 7"},
		tc{"public start", func(o *Options) { o.Start = mat.NewDense(d, 1, []float64{1, 0, 0}) }, ""},
		tc{"public start, tiny eps", func(o *Options) { o.Start = mat.NewDense(d, 1, []float64{1, 0, 0}); o.Eps = MinEps }, ""},
		tc{"bad start", func(o *Options) { o.Start = mat.NewDense(d, 1, []float64{nan, 0, 0}) }, "fedrep: public start holds a non-finite value"},
		tc{"eps=1e-6", func(o *Options) { o.Eps = MinEps }, ""},
		tc{"eps=1e-6, delta=1e-100, init_frac=0.001", func(o *Options) { o.Eps, o.Delta, o.InitFrac = MinEps, MinDelta, MinInitFrac }, ""},
		tc{"eps=1e-6, psi=1e100", func(o *Options) { o.Eps, o.Psi, o.Start = MinEps, MaxClip, mat.NewDense(d, 1, []float64{0, 1, 0}) }, ""},
		tc{"extremes together", func(o *Options) {
			o.Eps, o.Delta, o.Eta, o.Iters, o.Psi, o.PsiInit, o.InitFrac = MaxEps, MinDelta, MaxEta, 7, MinClip, MaxClip, MaxInitFrac
		}, ""},
		tc{"extremes together 2", func(o *Options) {
			o.Eps, o.Delta, o.Eta, o.Iters, o.Psi, o.PsiInit, o.InitFrac = 0.3, 0.999, MinEta, 3, MaxClip, MinClip, MinInitFrac
		}, ""},
	)
	for _, c := range cases {
		opt := base
		c.mod(&opt)
		err, plans := planEveryN(t, c.name, opt, d)
		if (err == nil) != (c.want == "") || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%s: PlanRun error %v, want %q", c.name, err, c.want)
			continue
		}
		if err == nil {
			runPlans(t, c.name, plans, d, opt.K)
		}
	}
	// The smallest budget is too small for the initialisation of d = 1000
	// features: its multiplier 1/(μ*·√0.001) ≈ 6.4e8 (μ* ≈ 4.9e-8 at
	// ε = 1e-6, δ = 1e-100) times √(d(d+1)/2) ≈ 707 exceeds 2^37 ≈ 1.4e11.
	// Refused for every n alike.
	opt := base
	opt.Eps, opt.Delta, opt.InitFrac = MinEps, MinDelta, MinInitFrac
	err, _ := planEveryN(t, "d=1000, tiny budget", opt, 1000)
	if want := "fedrep: the initialisation's noise multiplier"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("d=1000, tiny budget: error %v, want %q", err, want)
	}
}
