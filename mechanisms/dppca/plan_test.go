package dppca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// TestBudgetTable is spec §8 item 6 / §7: the per-step budgets of the
// paper calibration and the analytic one sum to the target.
func TestBudgetTable(t *testing.T) {
	const eps, delta, d, T = 0.8, 1e-7, 10, 10
	pl, err := PlanDPPCA(Options{Eps: eps, Delta: delta, Steps: T, PaperSplit: true}, d)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"Algorithm 4 ε", pl.EigenEps, eps / 2},
		{"Algorithm 4 δ", pl.EigenDelta, delta / 2},
		{"Algorithm 5 coordinate ε", pl.HistEps, eps / (8 * math.Sqrt(2*d*math.Log(8/delta)))},
		{"Algorithm 5 coordinate δ", pl.HistDelta, delta / (8 * d)},
		{"Algorithm 5 Gaussian multiplier (ε/4, δ/4)", pl.NoiseMultiplier, math.Sqrt(2*math.Log(1.25/(delta/4))) / (eps / 4)},
		{"groups", float64(pl.Groups), math.Ceil(2 + 4*math.Log(1/(delta/2*0.01/(2*T)))/(eps/2))},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-12*math.Abs(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if pl.Cost.Kind != accounting.ApproxDP || pl.Cost.Eps != eps || pl.Cost.Delta != delta {
		t.Errorf("cost %v, want approx (%v, %v) for the whole run", pl.Cost, eps, delta)
	}
	if err := pl.Cost.Validate(); err != nil {
		t.Error(err)
	}

	// Analytic: d coordinate histograms (δ_h, ε_h²/2)-approximately zCDP
	// plus the conversion slack give (ε/4, δ/4); the Gaussian is (ε/4, δ/4)
	// in exact GDP; Algorithm 4 keeps (ε/2, δ/2).
	for _, e := range []float64{0.8, 3} {
		pa, err := PlanDPPCA(Options{Eps: e, Delta: delta, Calibration: CalibAnalytic, PaperSplit: true}, d)
		if err != nil {
			t.Fatal(err)
		}
		histRho := d * pa.HistEps * pa.HistEps / 2
		if got := accounting.ZCDPToEps(histRho, delta/4-d*pa.HistDelta); got > e/4*(1+1e-9) {
			t.Errorf("ε=%v: coordinate histograms compose to ε=%v > ε/4", e, got)
		}
		if got := accounting.GDPEps(1/pa.NoiseMultiplier, delta/4); got > e/4*(1+1e-9) {
			t.Errorf("ε=%v: Gaussian costs ε=%v > ε/4 at δ/4", e, got)
		}
		if pa.EigenEps != e/2 || !strings.Contains(pa.Note, "beyond the paper") {
			t.Errorf("ε=%v: analytic plan %+v", e, pa)
		}
		if e == 0.8 && pa.NoiseMultiplier >= pl.NoiseMultiplier {
			t.Errorf("analytic multiplier %v is not below the paper's %v", pa.NoiseMultiplier, pl.NoiseMultiplier)
		}
	}

	full, _ := PlanDPPCA(Options{Eps: eps, Delta: delta}, d)
	if full.EigenEps != eps || full.EigenDelta != delta || full.Cost.Eps != eps || full.Cost.Delta != delta {
		t.Errorf("whole-budget halves (the default): Algorithm 4 ε %v, δ %v, cost %v", full.EigenEps, full.EigenDelta, full.Cost)
	}
	// Algorithm 5's Gaussian gets half of the whole step: (ε/2, δ/2).
	if want := math.Sqrt(2*math.Log(1.25/(delta/2))) / (eps / 2); math.Abs(full.NoiseMultiplier-want) > 1e-12*want {
		t.Errorf("whole-budget halves: Gaussian multiplier %v, want %v", full.NoiseMultiplier, want)
	}
}

// TestPlanErrors: bad input is refused before any data is read, with the
// message meant for it (another refusal would also be an error, so the text
// is what the test checks), saying what to do.
func TestPlanErrors(t *testing.T) {
	base := Options{Eps: 0.5, Delta: 1e-7}
	with := func(f func(*Options)) Options { o := base; f(&o); return o }
	const deltaAdvice = "delta must satisfy 0 < delta < 1 (e.g. 1e-6; choose δ without looking at the data)"
	cases := []struct {
		name   string
		opt    Options
		d      int
		want   string
		prefix bool // want is a prefix: the rest holds computed values
	}{
		{"no eps", with(func(o *Options) { o.Eps = 0 }), 3, "dppca dppca: eps=0: the privacy parameter eps must be a finite number > 0", false},
		{"delta 1", with(func(o *Options) { o.Delta = 1 }), 3, "dppca dppca: delta=1: " + deltaAdvice, false},
		{"eps beyond paper", with(func(o *Options) { o.Eps = 0.9 }), 3, "dppca: eps=0.9: the paper's guarantee (Theorem 5.1) needs eps < 0.9; lower eps or use CalibAnalytic (beyond the paper, valid for every eps)", false},
		{"add/remove", with(func(o *Options) { o.Neighbour = accounting.AddRemove }), 3, "dppca dppca: neighbour relation add-remove is not supported: DP-PCA partitions rows by position, which is private only under replace-one with n public (spec §1); use accounting.ReplaceOne", false},
		{"d=0", base, 0, "dppca dppca: the data need at least one column, got d=0", false},
		{"steps", with(func(o *Options) { o.Steps = -1 }), 3, "dppca dppca: steps=-1: use 0 for the default (10) or 1..10000", false},
		{"mean length", with(func(o *Options) { o.Mean = []float64{1} }), 3, "dppca dppca: the public mean has 1 entries but the data have d=3 columns", false},
		{"mean and centred", with(func(o *Options) { o.Mean = []float64{0, 0, 0}; o.Centred = true }), 3, "dppca dppca: give either Centred or a public Mean, not both", false},
		{"zeta", with(func(o *Options) { o.Zeta = 2 }), 3, "dppca dppca: zeta=2: the failure probability must be in [1e-100, 1)", false},
		{"negative gap", with(func(o *Options) { o.Gap = -1 }), 3, "dppca dppca: gap=-1 must be a finite number ≥ 0 (0 for the default)", false},
		{"delta above 1/n", with(func(o *Options) { o.PublicN = 1e8; o.Delta = 1e-6 }), 3, "dppca: delta=1e-06 exceeds 1/n = 1e-08 for the public n=100000000 (Theorem 5.1 needs delta ≤ 1/n); lower delta or use CalibAnalytic", false},
		{"infeasible n", with(func(o *Options) { o.PublicN = 100000 }), 10, "dppca: n=100000 rows are too few for eps=0.5, delta=1e-07, d=10, T=10: DP-PCA needs about n ≥ ", true},
		{"tiny eps", with(func(o *Options) { o.Eps = 1e-12 }), 3, "dppca dppca: eps=1e-12: use 1e-06 ≤ eps ≤ 1e+06", false},
		// At ε = 1e-6 Algorithm 4 needs ⌈2 + 4·ln(1/(δ₄ζ₄))/ε₄⌉ =
		// ⌈2 + 4e6·ln(2e10)⌉ ≈ 9.488e7 groups (ε₄ = 1e-6, δ₄ = 1e-7,
		// ζ₄ = 5e-4): far more rows than MaxRows.
		{"smallest eps", with(func(o *Options) { o.Eps = 1e-6 }), 3, "dppca: eps=1e-06, delta=1e-07, T=10 need 9487", true},
	}
	for _, tc := range cases {
		_, err := PlanDPPCA(tc.opt, tc.d)
		if err == nil || (tc.prefix && !strings.HasPrefix(err.Error(), tc.want)) || (!tc.prefix && err.Error() != tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"private Oja without Beta", func() error { _, err := PlanPrivateOja(Options{Eps: 0.5, Delta: 1e-7, Gap: 1}, 3); return err }(),
			"dppca oja: give Beta, a public bound on ‖A_i w‖ = ‖x‖·|xᵀw| (at most the squared row norm), the clip threshold of Eq. 7"},
		{"private Oja at ε=1, paper", func() error { _, err := PlanPrivateOja(Options{Eps: 1, Delta: 1e-7, Gap: 1, Beta: 1}, 3); return err }(),
			"dppca oja: eps=1: the paper's Gaussian mechanism (Lemma 2.4) needs eps < 1; use CalibAnalytic (beyond the paper)"},
		{"private Oja, tiny Beta", func() error {
			_, err := PlanPrivateOja(Options{Eps: 0.5, Delta: 1e-7, Gap: 1, Beta: 1e-300}, 3)
			return err
		}(), "dppca oja: beta=1e-300: the gradient bound must be in [1e-100, 1e+100]"},
		{"Oja without Gap", func() error { _, err := Oja(context.Background(), mat.NewDense(10, 2, nil), Options{}); return err }(),
			"dppca oja-nonprivate: give Gap, a public hint of the eigengap λ1 − λ2, for the learning rate"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestFeasibility: the n the refusal names is enough (spec §8 end), and a
// plan made with it runs without skipping for lack of data.
func TestFeasibility(t *testing.T) {
	for _, opt := range []Options{
		{Eps: 0.8, Delta: 1e-7, Steps: 10, Centred: true},
		{Eps: 0.5, Delta: 1e-6, Steps: 20},
		{Eps: 2, Delta: 1e-6, Steps: 5, Calibration: CalibAnalytic},
	} {
		for _, d := range []int{10, 100} {
			pl, err := PlanDPPCA(opt, d)
			if err != nil {
				t.Fatal(err)
			}
			need := pl.NeededN
			o := opt
			o.PublicN = need
			if o.Calibration == CalibPaper && o.Delta > 1/float64(need) {
				continue
			}
			if _, err := PlanDPPCA(o, d); err != nil {
				t.Errorf("d=%d %+v: the named n=%d is refused: %v", d, opt, need, err)
			}
			o.PublicN = need * 9 / 10
			_, err = PlanDPPCA(o, d)
			if err == nil || !strings.Contains(err.Error(), "needs about n ≥") {
				t.Errorf("d=%d: 90%% of the needed n accepted: %v", d, err)
			}
			t.Logf("ε=%v δ=%v T=%d d=%d: DP-PCA needs n ≥ %d", opt.Eps, opt.Delta, opt.Steps, d, need)
		}
	}
	// The spec's example: ε=0.8, d=10 needs n ≈ 0.85M (centred, T=10,
	// the paper's split); the whole-budget halves need about half.
	pl, _ := PlanDPPCA(Options{Eps: 0.8, Delta: 1e-7, Centred: true, PaperSplit: true}, 10)
	if pl.NeededN < 400000 || pl.NeededN > 1000000 {
		t.Errorf("ε=0.8, d=10: needed n %d, spec §8 estimates about 0.85M", pl.NeededN)
	}
	if full, _ := PlanDPPCA(Options{Eps: 0.8, Delta: 1e-7, Centred: true}, 10); full.NeededN > pl.NeededN*6/10 {
		t.Errorf("ε=0.8, d=10: the whole-budget halves need n %d, the paper's split %d", full.NeededN, pl.NeededN)
	}
}

// TestRunRefusesWithoutData: nil data, wrong width, a cancelled context.
func TestRunRefuses(t *testing.T) {
	pl, err := PlanDPPCA(Options{Eps: 0.5, Delta: 1e-7}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Run(context.Background(), nil); err == nil || err.Error() != "dppca dppca: no data matrix" {
		t.Errorf("nil data: %v", err)
	}
	if _, err := pl.Run(context.Background(), mat.NewDense(5, 2, nil)); err == nil || err.Error() != "dppca dppca: the data have 2 columns but the plan was made for d=3" {
		t.Errorf("wrong width: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pl.Run(ctx, mat.NewDense(1000000, 3, nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	var nilPlan *Plan
	if _, err := nilPlan.Run(context.Background(), mat.NewDense(5, 3, nil)); err == nil || err.Error() != "dppca: Run needs a plan from PlanDPPCA or PlanPrivateOja" {
		t.Errorf("nil plan: %v", err)
	}
}

// TestTooFewRowsPadded: a run on fewer rows than its minibatches need pads
// them with zero records instead of failing, so that neither an error nor
// the shape of the result depends on n (the "failure bit"); with exactly
// MinRows rows nothing is padded.
func TestTooFewRowsPadded(t *testing.T) {
	const d = 3
	plans := map[string]func() (*Plan, error){
		"dppca pairs": func() (*Plan, error) { return PlanDPPCA(Options{Eps: 0.5, Delta: 1e-7, Steps: 4}, d) },
		"dppca centred": func() (*Plan, error) {
			return PlanDPPCA(Options{Eps: 2, Delta: 1e-6, Steps: 3, Centred: true, Calibration: CalibAnalytic}, d)
		},
		"oja pairs": func() (*Plan, error) {
			return PlanPrivateOja(Options{Eps: 0.5, Delta: 1e-7, Steps: 7, Beta: 1, Gap: 0.1}, d)
		},
		"oja centred": func() (*Plan, error) {
			return PlanPrivateOja(Options{Eps: 2, Delta: 1e-6, Steps: 5, Beta: 1, Gap: 0.1, Centred: true, Calibration: CalibAnalytic}, d)
		},
	}
	for name, mk := range plans {
		pl, err := mk()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pl.MinRows < pl.Steps || pl.NeededN < pl.MinRows {
			t.Errorf("%s: MinRows %d, NeededN %d, steps %d", name, pl.MinRows, pl.NeededN, pl.Steps)
		}
		if !strings.Contains(pl.Note, fmt.Sprintf("fewer than %d rows are padded", pl.MinRows)) {
			t.Errorf("%s: the note does not state the padding: %s", name, pl.Note)
		}
		var shapes []string
		for _, n := range []int{0, 1, 2, 7, pl.MinRows/2 + 1, pl.MinRows - 1, pl.MinRows} {
			if n > pl.MinRows {
				continue
			}
			x := mat.NewDense(max(n, 1), d, nil)
			if n == 0 {
				x = &mat.Dense{}
			}
			for i := range n {
				x.Set(i, i%d, float64(1+i%5))
			}
			res, err := pl.Run(context.Background(), x)
			if err != nil {
				t.Fatalf("%s, n=%d: %v", name, n, err)
			}
			if r, c := res.Components.Dims(); r != d || c != 1 {
				t.Fatalf("%s, n=%d: components %d×%d", name, n, r, c)
			}
			if nrm := mat.Norm(res.Components, 2); math.Abs(nrm-1) > 1e-9 {
				t.Errorf("%s, n=%d: component norm %v", name, n, nrm)
			}
			// Everything but the values is the same whatever n.
			shapes = append(shapes, fmt.Sprintf("%s|%d|%d|%d|%d|%d|%s", res.Method, res.Steps, res.Batch, res.Records, len(res.Eigenvalues), len(res.NoiseStd), res.Note))
		}
		for i, s := range shapes {
			if s != shapes[0] {
				t.Errorf("%s: result shape %d differs:\n%s\n%s", name, i, s, shapes[0])
			}
		}
	}
}

// ExamplePlanDPPCA prints "groups: 121 rows needed: 227600" for ε = 0.8,
// δ = 1e-7, d = 10, T = 10, centred rows, paper calibration, each half
// of a minibatch at the whole (ε, δ). Both follow from the spec alone
// (dppca.md §4 "Optional", §5 and §8), computed here independently:
// k = ⌈2 + 4·ln(1/(δ₄ζ₄))/ε₄⌉ with (ε₄, δ₄) = (ε, δ), ζ₄ = ζ/(2T);
// Algorithm 5's d histograms at ε_h = (ε/2)/(2√(2d·ln(2/(δ/2)))),
// δ_h = (δ/2)/(2d) (advanced composition, Lemma B.4); a minibatch needs
// B ≥ 4·k·b_min (b_min = 4d) and ⌊B/2⌋/2 ≥ 1 + (2/ε_h)(ln(2/δ_h) +
// ln(2dT/ζ)); n = B·T.
func TestExamplePlanDPPCAValues(t *testing.T) {
	const eps, delta, d, T, zeta = 0.8, 1e-7, 10, 10, 0.01
	k := math.Ceil(2 + 4*math.Log(1/(delta*(zeta/(2*T))))/eps)
	eh := (eps / 2) / (2 * math.Sqrt(2*d*math.Log(2/(delta/2))))
	dh := (delta / 2) / (2 * d)
	thr := 1 + (2/eh)*(math.Log(2/dh)+math.Log(2*d*T/zeta))
	needB := math.Max(4*k*4*d, 2*math.Ceil(2*thr))
	pl, err := PlanDPPCA(Options{Eps: eps, Delta: delta, Centred: true, PublicN: 1000000}, d)
	if err != nil {
		t.Fatal(err)
	}
	if float64(pl.Groups) != k || k != 121 {
		t.Errorf("groups %d, spec formula %v (the example prints 121)", pl.Groups, k)
	}
	if want := needB * T; float64(pl.NeededN) != want || want != 227600 {
		t.Errorf("rows needed %d, spec formula %v (the example prints 227600)", pl.NeededN, want)
	}
	if math.Abs(pl.HistEps-eh) > 1e-15*eh || math.Abs(pl.HistDelta-dh) > 1e-15*dh {
		t.Errorf("histogram budget (%v, %v), spec (%v, %v)", pl.HistEps, pl.HistDelta, eh, dh)
	}
}

// TestHalvesAreDisjoint: the whole-budget default is sound only because
// Algorithms 4 and 5 read disjoint records, each made of its own rows, under
// a data-independent assignment (PlanDPPCA). Every data row must therefore
// be read at most once in a run: by pairs or single rows, shuffled or not,
// padded or not.
func TestHalvesAreDisjoint(t *testing.T) {
	data, err := synth.Gaussian(3, 20000, 3, []float64{1, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 4
	for _, c := range []struct {
		name string
		opt  Options
		n    int
	}{
		{"pairs, shuffled", Options{}, 20000},
		{"centred, shuffled", Options{Centred: true}, 20000},
		{"centred, in order", Options{Centred: true, KeepOrder: true}, 20000},
		{"pairs, padded", Options{}, 40},
	} {
		opt := c.opt
		opt.Eps, opt.Delta, opt.Calibration, opt.Steps, opt.Workers = 8, 1e-3, CalibAnalytic, steps, 1
		tr := &trace{}
		opt.Noise, opt.knob = noise.NewSeeded(7), &testKnob{noiseScale: 1, trace: tr}
		res, err := Run(context.Background(), firstRows(data.X, c.n), opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// Both halves of every step must have run, or the check is empty.
		if res.Skipped != 0 || len(tr.reads) != 2*steps {
			t.Fatalf("%s: %d steps skipped, %d half-minibatches read; want 0 and %d", c.name, res.Skipped, len(tr.reads), 2*steps)
		}
		seen := map[int]int{}
		for call, read := range tr.reads {
			for _, r := range read {
				if prev, ok := seen[r]; ok {
					t.Fatalf("%s: row %d read by half-minibatch %d and again by %d", c.name, r, prev, call)
				}
				seen[r] = call
			}
		}
		if len(seen) == 0 {
			t.Errorf("%s: the trace recorded no rows", c.name)
		}
	}
}
