package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// The plan spends exactly ρ*: the candidate runs' ρ plus the selection's
// ε²/8 add up to ρ* (from below, within the 1e-12 margin), the charged
// event is ρ* at the target, and every candidate's T follows its guess.
func TestAutoGapPlanBudget(t *testing.T) {
	for _, c := range []struct {
		opt   Options
		iters []int
	}{
		{Options{Eps: 1, Delta: 1e-6, PublicN: 100000, AutoGap: true}, nil},
		{Options{Eps: 2, Delta: 1e-5, Iters: 20, AutoGap: true, Neighbour: accounting.AddRemove}, []int{10, 20, 49, 104}},
	} {
		pl, err := PlanAdaptive(c.opt, 20)
		if err != nil {
			t.Fatal(err)
		}
		rho := accounting.RhoForTarget(c.opt.Eps, c.opt.Delta)
		if pl.Cost.Rho != rho || pl.Rho != rho {
			t.Errorf("cost ρ=%v, plan ρ=%v, want ρ*=%v", pl.Cost.Rho, pl.Rho, rho)
		}
		spent := pl.SelectEps * pl.SelectEps / 8
		total := 0
		for i, cand := range pl.Candidates {
			spent += cand.Rho
			total += cand.Iters
			if cand.Gap != AutoGaps[i] {
				t.Errorf("candidate %d: κ=%v, want %v", i, cand.Gap, AutoGaps[i])
			}
			want := cand.Iters
			if c.iters != nil {
				want = c.iters[i]
			} else {
				want = int(defaultAPMIters(c.opt.PublicN, c.opt.Eps, 0.05, cand.Gap))
			}
			if cand.Iters != want {
				t.Errorf("candidate κ=%v: T=%d, want %d", cand.Gap, cand.Iters, want)
			}
			// Each run splits its own ρ over its T iterations.
			if got := float64(cand.Iters) * (cand.SVTEps*cand.SVTEps/2 + 1/(2*cand.NoiseMultiplier*cand.NoiseMultiplier)); math.Abs(got-cand.Rho) > 1e-9*cand.Rho {
				t.Errorf("candidate κ=%v: its iterations spend ρ=%v, its share is %v", cand.Gap, got, cand.Rho)
			}
		}
		if !(spent <= rho && spent >= rho*(1-1e-9)) {
			t.Errorf("runs and selection spend ρ=%v, charged %v", spent, rho)
		}
		if want := selectShare * rho; math.Abs(pl.SelectEps*pl.SelectEps/8-want) > 1e-9*want {
			t.Errorf("selection spends %v, want the share %v", pl.SelectEps*pl.SelectEps/8, want)
		}
		if pl.Iters != total {
			t.Errorf("Iters=%d, want the candidates' total %d", pl.Iters, total)
		}
	}
}

// Every invalid use of gap="auto" fails when planning, with a message
// saying what to change.
func TestAutoGapPlanRefuses(t *testing.T) {
	base := Options{Eps: 1, Delta: 1e-6, PublicN: 10000, AutoGap: true}
	for _, c := range []struct {
		name, method, want string
		edit               func(*Options)
	}{
		{"paper", MethodAdaptive, "zcdp", func(o *Options) { o.Calibration = CalibPaper }},
		{"numeric gap too", MethodAdaptive, "leave the numeric gap", func(o *Options) { o.Gap = 0.3 }},
		{"npm", MethodNPM, "adaptive method only", func(o *Options) {}},
		{"no n, no iters", MethodAdaptive, "needs iters", func(o *Options) { o.PublicN = 0 }},
		{"too many iterations", MethodAdaptive, "above", func(o *Options) { o.PublicN, o.Iters = 0, MaxIters }},
		{"k=2", MethodAdaptive, "one component", func(o *Options) { o.K = 2 }},
	} {
		opt := base
		c.edit(&opt)
		_, err := PlanMethod(c.method, opt, 5)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// residualLosses has sensitivity 1 on neighbouring data sets under both
// relations, whatever the rows (extreme norms, non-finite values, rows on
// and off the candidate directions); the broken twin (a loss unit of half
// a row, knob scoreBits − 1) exceeds it, so the check can fail.
func TestAutoGapLossSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	const d, m = 4, 3
	maxMove := func(bits int) int64 {
		worst := int64(0)
		for trial := range 300 {
			n := 1 + rng.IntN(40)
			data := mat.NewDense(n, d, nil)
			for i := range n {
				for j := range d {
					data.Set(i, j, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(7)-3)))
				}
			}
			xs := make([][]float64, m)
			for j := range xs {
				xs[j] = randomOrtho(rng, d, 1).RawMatrix().Data
			}
			if trial%3 == 0 { // a candidate along an extreme row: residual 0 or 1
				copy(xs[0], []float64{1, 0, 0, 0})
			}
			extreme := [][]float64{{0, 1e300, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 1}, {math.NaN(), 1, 0, 0}, {0, 0, 0, 0}}
			row := extreme[rng.IntN(len(extreme))]
			if rng.IntN(2) == 0 {
				row = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			}
			var neighbour *mat.Dense
			switch trial % 2 {
			case 0: // add a row
				neighbour = mat.NewDense(n+1, d, nil)
				neighbour.Slice(0, n, 0, d).(*mat.Dense).Copy(data)
				neighbour.SetRow(n, row)
			default: // replace a row
				neighbour = mat.DenseCopyOf(data)
				neighbour.SetRow(rng.IntN(n), row)
			}
			clip := []float64{1, 0.01, 100}[trial%3]
			l, _, err := residualLosses(context.Background(), newClipped(rows.FromDense(data), clip, 1, 1), xs, bits)
			if err != nil {
				t.Fatal(err)
			}
			lp, _, err := residualLosses(context.Background(), newClipped(rows.FromDense(neighbour), clip, 1, 1), xs, bits)
			if err != nil {
				t.Fatal(err)
			}
			for j := range l {
				if l[j] < 0 || lp[j] < 0 {
					t.Fatalf("negative loss %v, %v", l, lp)
				}
				worst = max(worst, l[j]-lp[j], lp[j]-l[j])
			}
		}
		return worst
	}
	if w := maxMove(scoreBits); w > 1 {
		t.Errorf("a loss moved by %d between neighbours, sensitivity 1 claimed", w)
	}
	if w := maxMove(scoreBits - 1); w <= 1 {
		t.Errorf("the broken twin (half-row loss unit) never moved a loss by more than 1: the check cannot fail")
	}
}

// The loss is the residual energy: for rows on the axes it counts the rows
// off the candidate direction exactly.
func TestAutoGapLossValue(t *testing.T) {
	data := mat.NewDense(5, 2, []float64{1, 0, 1, 0, 1, 0, 0, 1, 0.6, 0.8})
	xs := [][]float64{{1, 0}, {0, 1}}
	l, _, err := residualLosses(context.Background(), newClipped(rows.FromDense(data), 1, 1, 1), xs, scoreBits)
	if err != nil {
		t.Fatal(err)
	}
	// along e1: 1 (row e2) + 0.64 → 1; along e2: 3 + 0.36 → 3.
	if l[0] != 1 || l[1] != 3 {
		t.Errorf("losses %v, want [1 3]", l)
	}
}

// Selection statistics. On a spiked model whose gap (κ = 0.2) is smaller
// than the two largest guesses, the runs of those guesses stop before
// converging (iters = 4 gives T = 2, 4, 10, 21), while the two smaller
// guesses converge, and their losses are lower by 5–15 units. With a large
// budget (ε_sel ≈ 9.8: a candidate 2 units worse than another is drawn at
// most e^-9.8 times as often) the selection must pick a guess ≤ 0.25 (the
// grid point closest to the true gap, or the finer one) and a run whose
// loss is within 1 of the smallest, each in at least 18 of 20 seeded runs
// (20 of 20 observed).
func TestAutoGapSelectsConvergedRun(t *testing.T) {
	const n, d, seeds = 4000, 8, 20
	good, best := 0, 0
	for s := range seeds {
		rng := rand.New(rand.NewPCG(uint64(s), 99))
		data, _ := spikedRows(rng, n, d, []float64{0.25})
		clip := 3 * math.Sqrt(float64(d))
		tr := &trace{}
		opt := withKnob(Options{Eps: 200, Delta: 1e-6, Iters: 4, AutoGap: true, Clip: clip, Workers: 1,
			Noise: noise.NewSeeded(uint64(s) + 1000)}, testKnob{noiseScale: 1, trace: tr})
		pl, err := PlanAdaptive(opt, d)
		if err != nil {
			t.Fatal(err)
		}
		if pl.SelectEps < 9 {
			t.Fatalf("ε_sel = %v, the tolerances assume ≥ 9", pl.SelectEps)
		}
		res, err := pl.Run(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		if res.Gap != AutoGaps[tr.selected] || res.Cost != pl.Cost {
			t.Fatalf("result κ=%v cost %v, selected %d of plan cost %v", res.Gap, res.Cost, tr.selected, pl.Cost)
		}
		if res.Gap <= 0.25 {
			good++
		}
		if tr.losses[tr.selected] <= slices.Min(tr.losses)+1 {
			best++
		}
		t.Logf("seed %d: losses %v, selected κ=%v", s, tr.losses, res.Gap)
	}
	if good < 18 || best < 18 {
		t.Errorf("selected a guess ≤ 0.25 in %d/%d runs and a loss within 1 of the best in %d/%d; want ≥ 18 each", good, seeds, best, seeds)
	}
}

// Audit of the selection: the exponential mechanism on the residual loss
// of two fixed directions e1, e2, on the worst replace-one pair (50 rows
// e1 and 50 rows e2, then one e1 replaced by e2: one loss rises by 1 and
// the other falls by 1). As shipped it is not refuted at its claimed
// ε_sel (pure DP); the broken twin whose loss unit is half a row
// (sensitivity 2 treated as 1) is.
func TestAutoGapSelectionAudit(t *testing.T) {
	testtier.Long(t)
	trials := 10000
	if long() {
		trials = 40000
	}
	// Eps chosen so that ε_sel = √(8·0.1·ρ*) ≈ 2.
	pl, err := PlanAdaptive(Options{Eps: 21.6, Delta: 1e-6, Iters: 1, AutoGap: true, Workers: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	claim := pl.SelectEps
	if claim < 1.5 || claim > 2.5 {
		t.Fatalf("ε_sel = %v, the audit is set up for about 2", claim)
	}
	rowsOf := func(e1, e2 int) *mat.Dense {
		m := mat.NewDense(e1+e2, 2, nil)
		for i := range e1 + e2 {
			if i < e1 {
				m.Set(i, 0, 1)
			} else {
				m.Set(i, 1, 1)
			}
		}
		return m
	}
	dA, dB := rowsOf(50, 50), rowsOf(49, 51)
	xs := [][]float64{{1, 0}, {0, 1}}
	for _, broken := range []bool{false, true} {
		bits := 0
		if broken {
			bits = scoreBits - 1
		}
		mech := func(neighbour bool, trial int) float64 {
			c := *pl
			c.opt.Noise = noise.NewSeeded(auditSeed(77, neighbour, trial))
			c.opt.knob = &testKnob{lossShift: bits}
			data := dA
			if neighbour {
				data = dB
			}
			j, err := c.selectRun(context.Background(), rows.FromDense(data), xs)
			if err != nil {
				t.Error(err)
			}
			return float64(j)
		}
		res, err := audit.Run(audit.Config{Trials: trials, Alpha: 0.05, Delta: 0}, mech)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("broken=%v: %v", broken, res)
		if err := res.Check(claim); (err != nil) != broken {
			if broken {
				t.Errorf("the half-unit loss was not refuted at ε=%v (lower bound %.3g)", claim, res.EpsLower)
			} else {
				t.Errorf("selection: %v", err)
			}
		}
	}
}

// The selection's work does not depend on the losses: on data sets of the
// same size whose losses are as far apart as they can be (every row on
// the first direction, every row on the second, half and half, and a
// replace-one neighbour of the first), it takes the same number of weight
// steps, the loss bound from the row count. (Select's walk takes at least
// the best loss in steps: 0, 0, 500 and 1 here.)
func TestAutoGapSelectionWorkIsDataIndependent(t *testing.T) {
	const n = 1000
	pl, err := PlanAdaptive(Options{Eps: 1, Delta: 1e-6, Iters: 1, AutoGap: true, Workers: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	rowsOf := func(e1 int) *mat.Dense {
		m := mat.NewDense(n, 2, nil)
		for i := range n {
			if i < e1 {
				m.Set(i, 0, 1)
			} else {
				m.Set(i, 1, 1)
			}
		}
		return m
	}
	xs := [][]float64{{1, 0}, {0, 1}}
	var steps []int64
	selectWorkHook = func(s int64) { steps = append(steps, s) }
	defer func() { selectWorkHook = nil }()
	var losses [][]int64
	for _, e1 := range []int{n, 0, n / 2, n - 1} {
		tr := &trace{}
		c := *pl
		c.opt.Noise = noise.NewSeeded(uint64(e1))
		c.opt.knob = &testKnob{trace: tr}
		if _, err := c.selectRun(context.Background(), rows.FromDense(rowsOf(e1)), xs); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, tr.losses)
	}
	if len(steps) != 4 {
		t.Fatalf("%d selections seen, want 4", len(steps))
	}
	for i, s := range steps {
		if s != n {
			t.Errorf("data set %d (losses %v): %d weight steps, want %d for every data set of %d rows", i, losses[i], s, n, n)
		}
	}
	if losses[0][0] != 0 || losses[1][0] != n || losses[2][0] != n/2 {
		t.Errorf("losses %v: the data sets do not span the loss range", losses)
	}
}
