package release

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// lastStepModel is pca.ValueError in the data's units (std and excess
// times clip²), its 95 % half-width pca.NoiseNormHalfWidth plus the
// excess, and it survives the ledger's JSON.
func TestLastStepModel(t *testing.T) {
	e := pca.ValueError{Rows: 10, Cols: 3, Std: 2, Excess: 1e-6}
	for _, clip := range []float64{1, 3} {
		m := lastStepModel(e, clip)
		c2 := clip * clip
		want := pca.NoiseNormHalfWidth(10, 3, 2*c2, 0.95) + 1e-6*c2
		if m.Kind != ErrLastStep || m.Dim != 10 || m.Cols != 3 || m.Scale != 2*c2 || m.Excess != 1e-6*c2 || math.Abs(m.HalfWidth95-want) > 1e-12*want {
			t.Errorf("clip %v: %+v, want std %v, h95 %v", clip, m, 2*c2, want)
		}
		h99, err := m.ValueHalfWidth(0.99)
		if err != nil || !(h99 > m.HalfWidth95) {
			t.Errorf("clip %v: 99 %% half-width %v (%v), want above the 95 %% one %v", clip, h99, err, m.HalfWidth95)
		}
		b, _ := json.Marshal(map[string]any{ErrorParam: m})
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got, ok := ErrorOf(back); !ok || got != m {
			t.Errorf("clip %v: read back %+v, want %+v", clip, got, m)
		}
	}
	for _, tc := range []struct {
		name  string
		m     ErrorModel
		level float64
	}{
		{"level 1", lastStepModel(e, 1), 1},
		{"level 0", lastStepModel(e, 1), 0},
		{"no columns", ErrorModel{Kind: ErrLastStep, Dim: 3, Scale: 1}, 0.95},
		{"no rows", ErrorModel{Kind: ErrLastStep, Cols: 3, Scale: 1}, 0.95},
		{"negative scale", ErrorModel{Kind: ErrLastStep, Dim: 3, Cols: 1, Scale: -1}, 0.95},
		{"a Laplace model", ErrorModel{Kind: ErrLaplace, Scale: 1}, 0.95},
		{"no interval", noIntervalModel("why"), 0.95},
	} {
		if h, err := tc.m.ValueHalfWidth(tc.level); err == nil || !math.IsNaN(h) {
			t.Errorf("%s: ValueHalfWidth = %v, %v; want NaN and an error", tc.name, h, err)
		}
	}
	// The gauss model answers ValueHalfWidth with its spectral one.
	g := spectralModel(5, 2, 0)
	if h, err := g.ValueHalfWidth(0.95); err != nil || h != g.HalfWidth95 {
		t.Errorf("spectral: ValueHalfWidth = %v, %v; want %v", h, err, g.HalfWidth95)
	}
}

// TestScoreGap: the formula (table), and its level checked exactly: for
// score vectors of 200 users over C candidates, the exponential
// mechanism's probability of a choice more than the 95 % gap below the
// best is ≤ 5 %, and near it in the worst case (every other candidate
// just beyond the gap), so the bound is not needlessly loose.
func TestScoreGap(t *testing.T) {
	for _, tc := range []struct {
		c     int
		eps   float64
		level float64
		want  float64
	}{
		{1, 1, 0.95, 2 * math.Log(20)},
		{200, 1, 0.95, 2 * (math.Log(200) + math.Log(20))},
		{200, 0.5, 0.95, 4 * (math.Log(200) + math.Log(20))},
		{10, 2, 0.99, math.Log(10) + math.Log(100)},
	} {
		m := selectionModel(tc.c, tc.eps)
		got, err := m.ScoreGap(tc.level)
		if err != nil || math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("C=%d ε′=%v level %v: ScoreGap = %v (%v), want %v", tc.c, tc.eps, tc.level, got, err, tc.want)
		}
	}
	if _, err := selectionModel(5, 1).ScoreGap(1); err == nil {
		t.Error("level 1: no error")
	}
	if _, err := (ErrorModel{Kind: ErrLastStep}).ScoreGap(0.95); err == nil {
		t.Error("a last-step model: no error")
	}
	// The mechanism: P[c] ∝ exp(ε′·Q_c/2), Q in users.
	miss := func(q []float64, eps, gap float64) float64 {
		top := slices.Max(q)
		var all, bad float64
		for _, v := range q {
			w := math.Exp(eps * (v - top) / 2)
			all += w
			if v < top-gap {
				bad += w
			}
		}
		return bad / all
	}
	r := rand.New(rand.NewPCG(28, 3))
	for _, c := range []int{2, 10, 200} {
		for _, eps := range []float64{0.3, 1, 4} {
			m := selectionModel(c, eps)
			gap := m.ScoreGap95
			for range 200 {
				q := make([]float64, c)
				for i := range q {
					q[i] = float64(r.IntN(201))
				}
				if p := miss(q, eps, gap); p > 0.05 {
					t.Fatalf("C=%d ε′=%v scores %v: P(gap > %v) = %v > 5 %%", c, eps, q, gap, p)
				}
			}
			// Worst case: one best, the others just beyond the gap.
			q := make([]float64, c)
			for i := 1; i < c; i++ {
				q[i] = -gap * (1 + 1e-9)
			}
			// Each of the C − 1 weighs α/C of the best's: P = (C − 1)(α/C)
			// / (1 + (C − 1)α/C) ≥ α(1 − 1/C)/(1 + α).
			p := miss(q, eps, gap)
			low := 0.05 * (1 - 1/float64(c)) / 1.05
			if p > 0.05 || p < low*(1-1e-6) {
				t.Errorf("C=%d ε′=%v: worst-case P(gap > %v) = %v, want in [%v, 0.05]", c, eps, gap, p, low)
			}
		}
	}
}

// Every private_pca method, private_fedrep and private_classify_jl plan
// carries an ErrorModel: gauss its spectral one, npm and adaptive (also
// centred, and gap="auto") the last step's, the direction-only methods and
// the representations none with a reason, the classifier pool its score
// gap.
func TestPlanErrorModels(t *testing.T) {
	env := &Local{}
	rows := ledger.Schema{Name: "t", Columns: []string{"a", "b", "c", "d"}, D: 4, Clip: 1, Unit: "row", Neighbour: "replace-one",
		Accountant: "zcdp", Center: "none", PublicN: 100000}
	users := rows
	users.Unit, users.UserColumn, users.Label = "user", "u", "y"
	mx := ledger.Schema{Name: "mx", Kind: ledger.KindMatrix, Neighbour: ledger.NeighbourEntry, Accountant: "zcdp",
		Matrix: &ledger.MatrixShape{Rows: 20, Cols: 20, Symmetric: true, EntryBound: 1}}
	for _, tc := range []struct {
		fn   string
		sc   ledger.Schema
		vals map[string]any
		kind string
		dim  int
		cols int
	}{
		{"private_pca", rows, map[string]any{"method": "gauss", "k": 2}, ErrSpectral, 4, 0},
		{"private_pca", rows, map[string]any{"method": "npm", "k": 2}, ErrLastStep, 4, 2},
		{"private_pca", rows, map[string]any{"method": "npm", "k": 1, "center": true}, ErrLastStep, 4, 1},
		{"private_pca", rows, map[string]any{"method": "adaptive", "k": 1, "iters": 3}, ErrLastStep, 4, 1},
		{"private_pca", rows, map[string]any{"method": "adaptive", "k": 1, "gap": "auto"}, ErrLastStep, 4, 1},
		{"private_pca", rows, map[string]any{"method": "dppca", "k": 1}, ErrNone, 0, 0},
		{"private_pca", rows, map[string]any{"method": "oja", "k": 1}, ErrNone, 0, 0},
		{"private_pca", rows, map[string]any{"method": "federated", "k": 1, "iters": 3}, ErrNone, 0, 0},
		{"private_fedrep", users, map[string]any{"k": 2}, ErrNone, 0, 0},
		{"private_classify_jl", users, map[string]any{"k": 2, "candidates": 50, "delta": 0.0}, ErrSelection, 0, 0},
		{"private_classify_jl", users, map[string]any{"k": 2, "variant": "fedrep-jl"}, ErrNone, 0, 0},
		{"private_pca", mx, map[string]any{"method": "ppm-entry", "k": 2}, ErrNone, 0, 0},
		{fnLowRank, mx, map[string]any{"k": 2}, ErrNone, 0, 0},
	} {
		vals := map[string]any{"delta": 1e-6}
		for k, v := range tc.vals {
			vals[k] = v
		}
		p, err := tabPlan(t, env, tc.fn, tc.sc, vals)
		if err != nil {
			t.Errorf("%s %v: %v", tc.fn, tc.vals, err)
			continue
		}
		m, ok := ErrorOf(p.Params)
		if !ok || m.Kind != tc.kind || m.Dim != tc.dim || m.Cols != tc.cols {
			t.Errorf("%s %v: error model %+v (%v), want kind %q, %d×%d", tc.fn, tc.vals, m, ok, tc.kind, tc.dim, tc.cols)
			continue
		}
		switch m.Kind {
		case ErrNone:
			if m.Why == "" {
				t.Errorf("%s %v: no reason", tc.fn, tc.vals)
			}
		case ErrSelection:
			if m.Candidates != 50 || !(m.ScoreGap95 > 0) {
				t.Errorf("%s %v: %+v", tc.fn, tc.vals, m)
			}
		default:
			if !(m.HalfWidth95 > 0) {
				t.Errorf("%s %v: 95 %% half-width %v", tc.fn, tc.vals, m.HalfWidth95)
			}
		}
	}
}
