package jlclass

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// auditPool audits the pool's selection end to end from the users'
// records: 20 candidates in R^(2×1), the first along e₁ and the others
// along e₂, scored with a margin θ = 0.5 so that a user's one record
// scores G exactly on the candidates it is not orthogonal to. On D user 0
// holds z = e₁ (score G on candidate 0 only), on D′ z = e₂ (G on all the
// others); the other users hold zero records (score 0 everywhere). This is
// the worst case of the mechanism's factor 2: the selected candidate's
// score rises by G while every other's falls by G, so P_D[0]/P_D′[0]
// approaches e^ε. The statistic is "candidate 0 was selected".
func auditPool(t *testing.T, eps float64, epsScale uint64, trials int) audit.Result {
	t.Helper()
	const n, K = 5, 20
	opt := Options{K: 1, Rho: 1, Candidates: K, Clip: 1, Eps: eps, ScoreMargin: 0.5}
	pl, err := PlanRun(opt, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	pl.opt.knob = &testKnob{epsScale: epsScale}
	pub := &Public{}
	for c := range K {
		m := mat.NewDense(2, 1, nil)
		m.Set(min(c, 1), 0, 1)
		pub.Candidates = append(pub.Candidates, m)
	}
	users := func(first []float64) []*User {
		us := make([]*User, n)
		for i := range us {
			z := mat.NewDense(1, 2, nil)
			if i == 0 {
				z.SetRow(0, first)
			}
			u, err := NewUser(z, []float64{1})
			if err != nil {
				t.Fatal(err)
			}
			us[i] = u
		}
		return us
	}
	totD, err := Totals(context.Background(), pub, users([]float64{1, 0}), pl.Theta)
	if err != nil {
		t.Fatal(err)
	}
	totDp, err := Totals(context.Background(), pub, users([]float64{0, 1}), pl.Theta)
	if err != nil {
		t.Fatal(err)
	}
	if totD[0] != ScoreScale || totD[1] != 0 || totDp[0] != 0 || totDp[1] != ScoreScale {
		t.Fatalf("crafted totals %v / %v", totD[:2], totDp[:2])
	}
	res, err := audit.Run(audit.Config{Trials: trials, Alpha: 0.05}, func(neighbour bool, trial int) float64 {
		tot, tag := totD, uint64(0)
		if neighbour {
			tot, tag = totDp, 1
		}
		p := *pl
		p.opt.Noise = noise.NewSeeded(tag<<40 | uint64(trial))
		if p.SelectFromTotals(tot) == 0 {
			return 1
		}
		return 0
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The pool passes the audit at its claimed pure ε, and the broken twin
// that forgets the exponential mechanism's factor 2 (it runs at 2ε′) is
// caught. 40000 runs per neighbour.
func TestAuditPool(t *testing.T) {
	testtier.Long(t)
	const eps, trials = 2, 40000
	good := auditPool(t, eps, 1, trials)
	if err := good.Check(eps); err != nil {
		t.Errorf("correct mechanism refuted: %v", err)
	}
	// Informative: with 20 candidates the true ratio is e^1.89; the bound
	// should find most of it.
	if good.EpsLower < eps/2 {
		t.Errorf("the audit found only ε ≥ %.3g of the claimed %v; the statistic is too weak", good.EpsLower, eps)
	}
	broken := auditPool(t, eps, 2, trials)
	if err := broken.Check(eps); err == nil {
		t.Errorf("the audit missed the broken twin (ε doubled): %v", broken)
	}
	t.Logf("correct %v", good)
	t.Logf("broken %v", broken)
}
