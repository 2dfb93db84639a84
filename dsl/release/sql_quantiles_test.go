package release

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// Three quantiles of one column on an add-remove dataset are released
// jointly: one histogram in the statement, each draw at ε·S/L (S the
// pooled share, L = 2 depths), the receipt says so, and each column's
// rank bound adds up the two draws on its path. Under replace-one, with
// two levels, or over two columns, each quantile keeps its own draw.
func TestSQLJointQuantilesPlan(t *testing.T) {
	t.Parallel()
	env := &Local{}
	plan := func(nb, q string, delta float64) *Plan {
		ref := sqlPeopleRef()
		ref.Schema.Neighbour = nb
		ref.Schema.Bounds["income"] = [2]float64{0, 1e5}
		p, err := env.Plan(Call{Func: FnSQL, Dataset: ref, Args: memArgs(FnSQL, map[string]any{"query": q, "eps": 1.0, "delta": delta})})
		if err != nil {
			t.Fatalf("%s %s: %v", nb, q, err)
		}
		return p
	}
	const three = "SELECT QUANTILE(age, 0.9) AS p90, MEDIAN(age) AS med, QUANTILE(age, 0.1) AS p10, COUNT(*) AS n FROM people"
	p := plan("add-remove", three, 0)
	// Shares: a quarter of ε each (four aggregates), pooled 3/4 over
	// L = 2 depths.
	want := 1.0 * 3 * tabular.MeanRoundDown / 4 / 2
	if !strings.Contains(p.Noise, "released jointly with the 3 quantiles of its column by recursive splitting (2 depths") || strings.Count(p.Noise, "released jointly") != 3 {
		t.Errorf("explain: %s", p.Noise)
	}
	errs := ErrorsOf(p.Params)
	for _, c := range []string{"p90", "med", "p10"} {
		m := errs[c]
		if m.Depth != 2 || m.Kind != ErrExponential {
			t.Errorf("%s: error model %+v, want depth 2", c, m)
		}
		one, err := noise.RankErrorBound(m.Candidates, m.WeightRatio, 1-0.05/2)
		if err != nil || m.RankError95 != 2*one {
			t.Errorf("%s: rank bound %d, want 2·%d (%v)", c, m.RankError95, one, err)
		}
		r := math.Log(m.WeightRatio) * 2 // the weight ratio is e^(ε/2)
		if math.Abs(r-want) > 1e-9 {
			t.Errorf("%s: per-draw ε %v, want %v", c, r, want)
		}
	}
	for _, c := range []struct{ nb, q string }{
		{"replace-one", three},
		{"add-remove", "SELECT QUANTILE(age, 0.1) AS a, MEDIAN(age) AS b FROM people"},
		{"add-remove", "SELECT QUANTILE(age, 0.1) AS a, MEDIAN(age) AS b, QUANTILE(income, 0.9) AS c FROM people"},
		{"add-remove", "SELECT QUANTILE(age, 0.1) AS a, MEDIAN(age) AS b, MEDIAN(age) AS c FROM people"},
	} {
		if p := plan(c.nb, c.q, 0); strings.Contains(p.Noise, "jointly") {
			t.Errorf("%s %s: released jointly: %s", c.nb, c.q, p.Noise)
		}
	}
	// User-level data: a user's rows can fall in several intervals of a
	// depth, so each quantile keeps its own draw.
	ref := sqlPeopleRef()
	ref.Schema.Neighbour, ref.Schema.Unit, ref.Schema.UserColumn = "add-remove", "user", "uid"
	ref.Schema.Columns = append(ref.Schema.Columns, "uid")
	if p, err := env.Plan(Call{Func: FnSQL, Dataset: ref, Args: memArgs(FnSQL, map[string]any{"query": three, "eps": 1.0, "delta": 0.0})}); err != nil || strings.Contains(p.Noise, "jointly") {
		t.Errorf("user-level: %v, released jointly: %v", err, p != nil && strings.Contains(p.Noise, "jointly"))
	}
	// Gaussian (zCDP) queries pool ρ: each draw at √(8·S·ρ/L).
	g := plan("add-remove", "SELECT QUANTILE(age, 0.25) AS a, MEDIAN(age) AS b, QUANTILE(age, 0.75) AS c FROM people", 1e-6)
	rho := accounting.RhoForTarget(1, 1e-6)
	wantG := math.Sqrt(8 * rho * tabular.MeanRoundDown / 2)
	if m := ErrorsOf(g.Params)["a"]; math.Abs(math.Log(m.WeightRatio)*2-wantG) > 1e-9 || m.Depth != 2 {
		t.Errorf("zCDP: per-draw ε %v, want %v (%+v)", math.Log(m.WeightRatio)*2, wantG, m)
	}
}

// The joint release through the run: the statement (a stub engine over
// the same rows) returns one histogram per group, and at a large ε every
// group's three quantiles have their exact ranks (a point in [w, w + 1),
// where the data's values are integers w).
func TestSQLJointQuantilesRun(t *testing.T) {
	t.Parallel()
	sp := auditPlan(sqlplan.Quantile, 0, 100, []string{"a", "b"})
	sp.Aggregates[0].Q = 0.25
	for _, q := range []float64{0.5, 0.75} {
		ag := sp.Aggregates[0]
		ag.Name, ag.Q = ag.Name+"x", q
		sp.Aggregates = append(sp.Aggregates, ag)
		sp.Outputs = append(sp.Outputs, sqlplan.Output{Key: -1, Agg: len(sp.Aggregates) - 1})
	}
	rels, err := sqlReleases(sp, 2, accounting.AddRemove, []float64{1. / 3, 1. / 3, 1. / 3}, 3000, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := planSQLJoints(sp, rels, accounting.AddRemove, 3000, 0, false); err != nil {
		t.Fatal(err)
	}
	st, err := sqlplan.Print(sp, sqlplan.DuckDB, "T")
	if err != nil {
		t.Fatal(err)
	}
	hists := 0
	for _, c := range st.Columns {
		if c.Role == sqlplan.RoleHist {
			hists++
		}
	}
	if hists != 1 || strings.Count(st.SQL, "histogram(") != 1 {
		t.Errorf("%d histogram columns, want one: %s", hists, st.SQL)
	}
	var rows []auditRow
	for i := range 40 {
		rows = append(rows, auditRow{"a", float64(i)}, auditRow{"b", float64(50 + i/2)})
	}
	cols, kinds := sqlOutputs(sp)
	v, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, 2, noise.NewSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"a": {9, 19, 29}, "b": {54, 59, 64}}
	for _, row := range v.(*Table).Rows {
		w := want[row[0].(string)]
		for k := range w {
			if got := row[1+k].(float64); got < w[k] || got >= w[k]+1 {
				t.Errorf("group %v: quantile %d is %v, want %v (row %v)", row[0], k, got, w[k], row)
			}
		}
	}
}
