package fedrep

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// crafted is a user whose messages are chosen by the test. The coordinator's
// guarantee must hold for any user messages (it clips them), so crafted
// users realise the worst case exactly.
type crafted struct {
	z    *mat.SymDense
	grad *mat.Dense
}

func (c crafted) Answer(_ context.Context, req Request) (Reply, error) {
	if req.Step == StepInit {
		return Reply{Z: c.z}, nil
	}
	return Reply{Grad: c.grad}, nil
}

// sequential is a minimal in-process transport without goroutines: the
// audit runs hundreds of thousands of tiny protocols, and the coordinator
// cannot tell it from federated.Local.
type sequential []federated.Provider[Request, Reply]

func (s sequential) Providers() int { return len(s) }
func (s sequential) Round(ctx context.Context, req Request, recv func(int, Reply) error) error {
	for i, p := range s {
		rep, err := p.Answer(ctx, req)
		if err != nil {
			return err
		}
		if err := recv(i, rep); err != nil {
			return err
		}
	}
	return nil
}

// auditRelease audits one noisy average of the coordinator ("init" or
// "step"). On D user 0 sends +bound·E, on D′ it sends −100·bound·E, which
// clipping turns into −bound·E; the other users send 0. The averages then
// differ by exactly the replace-one sensitivity 2·bound/n along E, and the
// statistic is the coordinate of the observed noisy average along E.
func auditRelease(t *testing.T, step string, eps, delta, noiseScale float64, trials int) (audit.Result, float64) {
	t.Helper()
	const n, d, k = 10, 2, 1
	const psi, psiInit = 2.0, 3.0
	opt := Options{K: k, Iters: 1, Eta: 0.5, Psi: psi, PsiInit: psiInit, Eps: eps, Delta: delta}
	claimed := eps
	if step == "step" {
		opt.Start = mat.NewDense(d, k, []float64{0, 1})
	} else {
		// The initialisation alone is μ_init = √f·μ*-GDP.
		claimed = accounting.GDPEps(math.Sqrt(DefaultInitFrac)*accounting.MuForTarget(eps, delta), delta)
	}
	users := func(sign float64) []federated.Provider[Request, Reply] {
		ps := make([]federated.Provider[Request, Reply], n)
		for i := range ps {
			c := crafted{z: mat.NewSymDense(d, nil), grad: mat.NewDense(d, k, nil)}
			if i == 0 {
				s := 1.0
				if sign < 0 {
					s = -100
				}
				c.z.SetSym(0, 0, s*psiInit)
				c.grad.Set(0, 0, s*psi)
			}
			ps[i] = c
		}
		return ps
	}
	onD, onDp := users(1), users(-1)
	pl, err := PlanRun(opt, d, n)
	if err != nil {
		t.Fatal(err)
	}
	res, err := audit.Run(audit.Config{Trials: trials, Alpha: 0.05, Delta: delta}, func(neighbour bool, trial int) float64 {
		ps, tag := onD, uint64(0)
		if neighbour {
			ps, tag = onDp, 1
		}
		var stat float64
		trialPlan := *pl // the plan is immutable; each trial gets its own noise
		trialPlan.opt.Noise = noise.NewSeeded(tag<<40 | uint64(trial))
		trialPlan.opt.knob = &testKnob{noiseScale: noiseScale, observe: func(s string, _ int, m *mat.Dense) {
			if s == step {
				stat = m.At(0, 0)
			}
		}}
		if _, err := trialPlan.Coordinate(context.Background(), sequential(ps)); err != nil {
			panic(err)
		}
		return stat
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, claimed
}

// Both noisy releases of Private FedRep pass the audit at their claimed ε,
// and the deliberately broken variant with half the noise is caught. 40000
// runs per neighbour (the audit resolves ε up to about 9).
func TestAuditFedRep(t *testing.T) {
	testtier.Long(t)
	const delta, trials = 1e-5, 40000
	// The overall ε of each audit is chosen so that the audited release
	// itself claims about ε = 2 (the initialisation gets μ_init = √0.2·μ*).
	for _, c := range []struct {
		step string
		eps  float64
	}{{"step", 2}, {"init", 5}} {
		step, eps := c.step, c.eps
		good, claimed := auditRelease(t, step, eps, delta, 1, trials)
		if err := good.Check(claimed); err != nil {
			t.Errorf("%s: correct mechanism refuted: %v", step, err)
		}
		// Informative: with a tight Gaussian release and this many runs the
		// bound lands between about 40% and 70% of the claim; below a third
		// the statistic would be too weak to catch anything.
		if good.EpsLower < claimed/3 {
			t.Errorf("%s: the audit found only ε ≥ %.3g of the claimed %.3g; the statistic is too weak", step, good.EpsLower, claimed)
		}
		broken, _ := auditRelease(t, step, eps, delta, 0.5, trials)
		if err := broken.Check(claimed); err == nil {
			t.Errorf("%s: the audit missed the broken variant (noise halved): %v", step, broken)
		}
		t.Logf("%s (claimed ε=%.3g): correct %v", step, claimed, good)
		t.Logf("%s: broken %v", step, broken)
	}
}
