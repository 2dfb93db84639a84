package fedrep

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg/exact"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
)

// fixedTransport answers every round with the same per-user messages.
type fixedTransport struct {
	z    []*mat.SymDense
	grad []*mat.Dense
}

func (f *fixedTransport) Providers() int { return len(f.z) }

func (f *fixedTransport) Round(_ context.Context, req Request, recv func(int, Reply) error) error {
	for i := range f.z {
		rep := Reply{Grad: f.grad[i]}
		if req.Step == StepInit {
			rep = Reply{Z: f.z[i]}
		}
		if err := recv(i, rep); err != nil {
			return err
		}
	}
	return nil
}

// averageRoundings is the rounding budget of an average the tests observe:
// the sum's sumRoundings (what sumExcess charges) and the product with
// fl(1/n) (2 roundings), which comes after the noise in a private run.
const averageRoundings = sumRoundings + 2

// TestAveragesWithinBudget runs the coordinator without noise on fixed
// messages (norms spread over many magnitudes, most clipped) and checks the
// averages it releases against exact big.Float averages of the clipped
// messages with the rounding budget sumExcess charges (plus the division).
func TestAveragesWithinBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 41))
	const n, d, k = 3001, 4, 2
	const psi, psiInit = 10.0, 5.0
	tr := &fixedTransport{z: make([]*mat.SymDense, n), grad: make([]*mat.Dense, n)}
	init, step := exact.New(d*d), exact.New(d*k)
	for i := range n {
		mag := math.Exp(3 * rng.NormFloat64())
		z := mat.NewSymDense(d, nil)
		for a := range d {
			for b := a; b < d; b++ {
				z.SetSym(a, b, mag*rng.NormFloat64())
			}
		}
		g := mat.NewDense(d, k, nil)
		for j := range d * k {
			g.RawMatrix().Data[j] = mag * rng.NormFloat64()
		}
		tr.z[i], tr.grad[i] = z, g
		cz := clipFactor(mat.Norm(z, 2), psiInit)
		for a := range d {
			for b := a; b < d; b++ {
				init.Add(a*d+b, cz, z.At(a, b))
			}
		}
		cg := clipFactor(mat.Norm(g, 2), psi)
		for j, v := range g.RawMatrix().Data {
			step.Add(j, cg, v)
		}
	}
	init.Quo(n)
	step.Quo(n)
	pl, err := PlanRun(Options{K: k, Iters: 1, Eta: 0.5, Psi: psi, PsiInit: psiInit, Eps: 1, Delta: 1e-6}, d, n)
	if err != nil {
		t.Fatal(err)
	}
	var gotInit, gotStep []float64
	pl.opt.knob = &testKnob{observe: func(s string, _ int, m *mat.Dense) {
		data := append([]float64(nil), m.RawMatrix().Data...)
		if s == "init" {
			for a := range d { // compare the upper triangle, which is what is summed
				for b := range a {
					data[a*d+b] = 0
				}
			}
			gotInit = data
		} else {
			gotStep = data
		}
	}}
	if _, err := pl.Coordinate(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	gamma := rowpass.Gamma(averageRoundings)
	for _, tc := range []struct {
		name string
		got  []float64
		want *exact.Sums
	}{{"init", gotInit, init}, {"step", gotStep, step}} {
		bad, worst := tc.want.Within(tc.got, gamma)
		if bad >= 0 {
			t.Errorf("%s: entry %d exceeds γ_%d times its majorant", tc.name, bad, averageRoundings)
		}
		t.Logf("%s: largest error/Σ|majorant| = %.3g (γ_%d = %.3g)", tc.name, worst, averageRoundings, gamma)
	}
}

// TestRoundingExcessSmall reports the noise increase the rounding charge
// costs at the benchmark shape (mechanisms/bench fedrep-fig1: d = 50, k = 2,
// 20000 users, T = 5, ψ = 10, ψ_init = 5) and keeps it below 0.1%. The
// excess is 2·γ_h·MaxUsers·ψ on a sensitivity of 2ψ (ψ under add/remove):
// γ_h·2^30 ≈ 280·2^-53·2^30 ≈ 3.3e-5 (6.7e-5 under add/remove), whatever n.
func TestRoundingExcessSmall(t *testing.T) {
	for _, nb := range []accounting.Neighbour{accounting.ReplaceOne, accounting.AddRemove} {
		for _, eps := range []float64{1, 8} {
			pl, err := PlanRun(Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 5, Eps: eps, Delta: 1e-6, Neighbour: nb}, 50, 20000)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct {
				name         string
				sens, excess float64
			}{{"init", pl.InitSensitivity, pl.InitRoundingExcess}, {"step", pl.StepSensitivity, pl.StepRoundingExcess}} {
				rel := r.excess / r.sens
				if eps == 1 {
					t.Logf("%v %s: excess %.3g on sensitivity %.3g: noise +%.3g%%", nb, r.name, r.excess, r.sens, 100*rel)
				}
				if !(rel > 0 && rel < 1e-3) {
					t.Errorf("%v ε=%v %s: rounding excess %v is %.3g of the sensitivity, want in (0, 1e-3)", nb, eps, r.name, r.excess, rel)
				}
			}
		}
	}
	if _, err := PlanRun(Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 5, Eps: 1, Delta: 1e-6}, 50, MaxUsers+1); err == nil {
		t.Error("PlanRun accepted more than MaxUsers users")
	}
}

// TestStepAverageRoundUp: one user's gradient entry 10 followed by 3000
// entries of 3/4 of its ulp, each of which a running sum rounds up. The
// coordinator's average stays within the charged budget; the running sum
// the coordinator used before breaks it (so the check can fail).
func TestStepAverageRoundUp(t *testing.T) {
	const n, d, k = 3001, 2, 1
	tr := &fixedTransport{z: make([]*mat.SymDense, n), grad: make([]*mat.Dense, n)}
	want := exact.New(d * k)
	naive := 0.0
	for i := range n {
		v := 0.75 * 0x1p-49 // ulp(10) = 2^-49
		if i == 0 {
			v = 10
		}
		tr.z[i] = mat.NewSymDense(d, nil)
		tr.grad[i] = mat.NewDense(d, k, []float64{v, 0})
		want.Add(0, v)
		naive += v
	}
	want.Quo(n)
	pl, err := PlanRun(Options{K: k, Iters: 1, Eta: 0.5, Psi: 10, Eps: 1, Delta: 1e-6, Start: mat.NewDense(d, k, []float64{1, 0})}, d, n)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	pl.opt.knob = &testKnob{observe: func(s string, _ int, m *mat.Dense) {
		got = append([]float64(nil), m.RawMatrix().Data...)
	}}
	if _, err := pl.Coordinate(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	gamma := rowpass.Gamma(averageRoundings)
	if bad, worst := want.Within(got, gamma); bad >= 0 {
		t.Errorf("coordinator average: error/Σ|majorant| %.3g exceeds γ_%d = %.3g", worst, averageRoundings, gamma)
	}
	if bad, worst := want.Within([]float64{naive * (1 / float64(n)), 0}, gamma); bad < 0 {
		t.Errorf("running sum: error/Σ|majorant| %.3g within γ_%d: the input is not adversarial", worst, averageRoundings)
	}
}
