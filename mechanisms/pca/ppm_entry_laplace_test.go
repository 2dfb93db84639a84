package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

func TestPlanEntryLaplace(t *testing.T) {
	opt := EntryOptions{K: 2, Oversample: 1, Iters: 10, Eps: 2, Bound: 1, Change: 2, Laplace: true}
	pl, err := PlanPPMEntry(opt, 40)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Cost != event(MethodPPMEntry, accounting.Pure(2)) {
		t.Errorf("cost %+v, want Pure(2) labelled pca/ppm-entry", pl.Cost)
	}
	// ℓ1 per unit ‖X‖_∞: 2·p·Change = 2·3·2.
	if !pl.Laplace || pl.StepEps != 0.2 || pl.Sensitivity != 12 {
		t.Errorf("laplace=%v stepEps=%g sensitivity=%g, want true, 0.2, 12", pl.Laplace, pl.StepEps, pl.Sensitivity)
	}
	if pl.RoundingExcess <= 0 || pl.RoundingExcess > 1e-9*pl.Sensitivity {
		t.Errorf("rounding excess %g: want a tiny positive ℓ1 charge", pl.RoundingExcess)
	}
	lra, err := PlanLowRank(EntryOptions{K: 2, Iters: 10, Eps: 2, Bound: 1, Laplace: true}, 40)
	if err != nil {
		t.Fatal(err)
	}
	if lra.Releases != 11 || lra.StepEps != 2.0/11 || lra.Sensitivity != 8 {
		t.Errorf("lra: releases %d stepEps %g sensitivity %g, want 11, 2/11, 2·p·1 = 8", lra.Releases, lra.StepEps, lra.Sensitivity)
	}
	// The Gaussian plan scales its ℓ2 sensitivity with Change too.
	g, err := PlanPPMEntry(EntryOptions{K: 2, Oversample: 2, Iters: 10, Eps: 1, Delta: 1e-6, Bound: 1, Change: 2}, 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * math.Sqrt2 * 2; g.Sensitivity != want {
		t.Errorf("gaussian sensitivity with change 2: %g, want 2·√2·√p = %g", g.Sensitivity, want)
	}
	for _, tc := range []struct {
		opt  EntryOptions
		want string
	}{
		{EntryOptions{Eps: 1, Delta: 1e-6, Bound: 1, Laplace: true}, "pure ε-DP"},
		{EntryOptions{Eps: 1, Bound: 1, Laplace: true, Calibration: CalibPaper}, "basic composition"},
		{EntryOptions{Eps: 1, Bound: 1}, "delta"},
		{EntryOptions{Eps: 1, Delta: 1e-6, Bound: 1, Change: -1}, "change"},
		{EntryOptions{Eps: 1e-9, Bound: 1, Laplace: true}, "eps"},
	} {
		if _, err := PlanPPMEntry(tc.opt, 40); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.opt, err, tc.want)
		}
	}
}

// The Laplace variant's scale of each release follows ‖X_{ℓ−1}‖_∞, and at
// a generous ε it recovers the top eigenvectors of an incoherent matrix.
func TestPPMEntryLaplaceRecovers(t *testing.T) {
	const d, k, seeds = 60, 2, 9
	var errs []float64
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		q := randomOrtho(rng, d, d)
		a := symFromBasis(q, spectrum(rng, d, []float64{600, 450}, 1))
		for _, lr := range []bool{false, true} {
			opt := EntryOptions{K: k, Iters: 12, Eps: 4, Bound: 100, Laplace: true, Noise: noise.NewSeeded(seed)}
			var res *EntryResult
			var err error
			if lr {
				res, err = LowRank(context.Background(), a, opt)
			} else {
				res, err = PPMEntry(context.Background(), a, opt)
			}
			if err != nil {
				t.Fatal(err)
			}
			pl, _ := planEntry(res.Method, opt, d)
			for l, inf := range res.MaxAbs {
				if want := noise.LaplaceScale((pl.Sensitivity+pl.RoundingExcess)*inf*roundingSlack, pl.StepEps, d*pl.P); res.NoiseStds[l] != want {
					t.Fatalf("%s release %d: scale %g, want %g from ‖X‖_∞ = %g", res.Method, l, res.NoiseStds[l], want, inf)
				}
			}
			if res.Calibration != "laplace-basic" {
				t.Errorf("calibration %q, want laplace-basic", res.Calibration)
			}
			if !lr {
				errs = append(errs, SinThetaSq(mat.DenseCopyOf(q.Slice(0, d, 0, k)), res.Components))
			}
		}
	}
	// Tolerance: the Laplace scale is ≈ 2·p·‖X‖_∞·12/4 ≈ 4 (‖X‖_∞ ≈ 0.3),
	// so the d×p noise has spectral norm ≈ 4·√2·(√60+√2) ≈ 50 against an
	// eigengap of 150: sin² of order (50/150)²/… ≈ 0.01–0.1 per seed.
	if m := median(errs); m > 0.05 {
		t.Errorf("median sin²θ %.3g over %d seeds, want ≤ 0.05", m, seeds)
	} else {
		t.Logf("median sin²θ %.3g over %d seeds", m, seeds)
	}
}

// TestAuditEntryLaplace audits the Laplace variant on the worst case it
// can see at d = 1: A = [0] vs [1] (a diagonal entry, Change 1). A
// diagonal change moves A·X by half the symmetric-pair bound the plan
// charges, so the shipped mechanism's loss there is ε/2 and it must pass
// at its claim; the broken twin cuts the scale to a quarter (loss 2ε) and
// must be refuted.
func TestAuditEntryLaplace(t *testing.T) {
	testtier.Long(t)
	trials := 10000
	if long() {
		trials = 50000
	}
	const eps = 2.0
	opt := EntryOptions{Iters: 1, Eps: eps, Bound: 1, Laplace: true}
	plan, err := PlanPPMEntry(opt, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, broken := range []bool{false, true} {
		scale := 1.0
		if broken {
			scale = 0.25
		}
		mech := func(neighbour bool, trial int) float64 {
			a := mat.NewSymDense(1, []float64{0})
			if neighbour {
				a.SetSym(0, 0, 1)
			}
			tr := &trace{}
			pl := *plan
			pl.opt.Noise = noise.NewSeeded(auditSeed(9, neighbour, trial))
			pl.opt.knob = &testKnob{noiseScale: scale, trace: tr}
			if _, err := pl.Run(context.Background(), a); err != nil {
				t.Error(err)
				return 0
			}
			return tr.first[0] * tr.start[0]
		}
		res, err := audit.Run(audit.Config{Trials: trials, Alpha: 0.05}, mech)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ppm-entry laplace broken=%v: %v", broken, res)
		if err := res.Check(eps); (err != nil) != broken {
			if broken {
				t.Errorf("Laplace variant with a quarter of the noise: the audit did not refute ε=%v (lower bound %.3g)", eps, res.EpsLower)
			} else {
				t.Errorf("Laplace variant: %v", err)
			}
		}
	}
}
