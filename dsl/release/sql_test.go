package release

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// The sensitivities of every vector of every aggregate, by hand, on
// row-level data: a row adds or removes one value (add-remove), or is
// replaced by one that may lie in another group or in none (replace-one:
// the larger of the move within a group, the move between groups, and
// add-remove's).
func TestSQLSensitivities(t *testing.T) {
	t.Parallel()
	type vec struct{ l1, l2 float64 }
	r2 := math.Sqrt2
	cases := []struct {
		name   string
		kind   sqlplan.AggKind
		lo, hi float64
		groups int
		nb     accounting.Neighbour
		want   []vec
	}{
		{"count add-remove", sqlplan.Count, 0, 0, 4, accounting.AddRemove, []vec{{1, 1}}},
		{"count replace-one", sqlplan.Count, 0, 0, 4, accounting.ReplaceOne, []vec{{2, r2}}},
		{"count replace-one ungrouped", sqlplan.Count, 0, 0, 1, accounting.ReplaceOne, []vec{{1, 1}}},
		{"sum add-remove", sqlplan.Sum, -3, 10, 4, accounting.AddRemove, []vec{{10, 10}}},
		{"sum replace-one grouped", sqlplan.Sum, 5, 10, 4, accounting.ReplaceOne, []vec{{20, 10 * r2}}},
		// One group: a replacement moves the sum by hi − lo = 5 within the
		// group, or by |v| ≤ 10 when a row leaves the selection.
		{"sum replace-one ungrouped", sqlplan.Sum, 5, 10, 1, accounting.ReplaceOne, []vec{{10, 10}}},
		// AVG re-centres on the midpoint 50: terms in [−50, 50].
		{"avg add-remove", sqlplan.Avg, 0, 100, 3, accounting.AddRemove, []vec{{1, 1}, {50, 50}}},
		{"avg replace-one", sqlplan.Avg, 0, 100, 3, accounting.ReplaceOne, []vec{{2, r2}, {100, 100}}},
		{"variance add-remove", sqlplan.Variance, 10, 30, 1, accounting.AddRemove, []vec{{1, 1}, {10, 10}, {100, 100}}},
		{"stddev replace-one", sqlplan.Stddev, 10, 30, 2, accounting.ReplaceOne, []vec{{2, r2}, {20, 20}, {200, 100 * r2}}},
		// Users per group (user-level data): a user is counted once in
		// each of up to all G groups, each count moving by at most one.
		{"users add-remove ungrouped", sqlplan.CountDistinct, 0, 0, 1, accounting.AddRemove, []vec{{1, 1}}},
		{"users add-remove grouped", sqlplan.CountDistinct, 0, 0, 4, accounting.AddRemove, []vec{{4, 2}}},
		{"users replace-one grouped", sqlplan.CountDistinct, 0, 0, 9, accounting.ReplaceOne, []vec{{9, 3}}},
	}
	for _, c := range cases {
		sp := &sqlplan.Plan{Aggregates: []sqlplan.Aggregate{{Name: "a", Kind: c.kind, Lo: c.lo, Hi: c.hi}}}
		rels, err := sqlReleases(sp, c.groups, c.nb, []float64{1}, 1, 0, false)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		vs := rels[0].vecs
		if len(vs) != len(c.want) {
			t.Fatalf("%s: %d vectors, want %d", c.name, len(vs), len(c.want))
		}
		for j, w := range c.want {
			// The sensitivities are rounded up by at most a few ulps.
			if !(vs[j].l1 >= w.l1 && vs[j].l1 <= w.l1*(1+1e-12)) || !(vs[j].l2 >= w.l2*(1-1e-15) && vs[j].l2 <= w.l2*(1+1e-12)) {
				t.Errorf("%s: %s sensitivities (%v, %v), want (%v, %v)", c.name, vs[j].what, vs[j].l1, vs[j].l2, w.l1, w.l2)
			}
			if !strings.HasPrefix(vs[j].what, "count") {
				m := max(math.Abs(w.l1), 0)
				if !(vs[j].excess > 0) || vs[j].excess > m*1e-6 {
					t.Errorf("%s: %s rounding excess %v", c.name, vs[j].what, vs[j].excess)
				}
			}
		}
	}
}

// The sensitivities on user-level data, by hand (docs/mechanisms.md,
// private_sql): a user reaches at most k = max_groups groups with at most
// r = max_rows rows in each, so a count moves by at most r in each of T
// groups (T = k under add-remove; under replace-one min(2k, G), or 1 with
// one group), a sum by a total of at most r terms, in the hull
// [min(0, r·lo), max(0, r·hi)], in each of k groups of each user.
func TestSQLUserSensitivities(t *testing.T) {
	t.Parallel()
	type vec struct{ l1, l2 float64 }
	sq := math.Sqrt
	cases := []struct {
		name   string
		kind   sqlplan.AggKind
		lo, hi float64
		k, r   int
		groups int
		nb     accounting.Neighbour
		want   []vec
	}{
		{"count add-remove", sqlplan.Count, 0, 0, 3, 2, 5, accounting.AddRemove, []vec{{6, 2 * sq(3)}}},
		{"count replace-one, 2k ≤ G", sqlplan.Count, 0, 0, 2, 2, 5, accounting.ReplaceOne, []vec{{8, 2 * sq(4)}}},
		{"count replace-one, 2k > G", sqlplan.Count, 0, 0, 3, 2, 5, accounting.ReplaceOne, []vec{{10, 2 * sq(5)}}},
		{"count replace-one ungrouped", sqlplan.Count, 0, 0, 1, 4, 1, accounting.ReplaceOne, []vec{{4, 4}}},
		{"users add-remove", sqlplan.CountDistinct, 0, 0, 3, 7, 5, accounting.AddRemove, []vec{{3, sq(3)}}},
		{"users replace-one", sqlplan.CountDistinct, 0, 0, 3, 7, 9, accounting.ReplaceOne, []vec{{6, sq(6)}}},
		// Terms in [−3, 10], two per group: totals in [−6, 20].
		{"sum add-remove", sqlplan.Sum, -3, 10, 3, 2, 5, accounting.AddRemove, []vec{{60, 20 * sq(3)}}},
		// Terms in [5, 10], two per group: totals in [0, 20] (a user may
		// have one row, 5, or none): a shared group moves by 20, a group
		// left or entered by 20.
		{"sum replace-one grouped", sqlplan.Sum, 5, 10, 2, 2, 4, accounting.ReplaceOne, []vec{{80, 40}}},
		{"sum replace-one ungrouped", sqlplan.Sum, 5, 10, 1, 3, 1, accounting.ReplaceOne, []vec{{30, 30}}},
		// AVG: centred terms in [−50, 50], three per group.
		{"avg add-remove", sqlplan.Avg, 0, 100, 2, 3, 3, accounting.AddRemove, []vec{{6, 3 * sq(2)}, {300, 150 * sq(2)}}},
		// VARIANCE: centred terms in [−10, 10], squares in [0, 100].
		{"variance add-remove", sqlplan.Variance, 10, 30, 1, 2, 1, accounting.AddRemove, []vec{{2, 2}, {20, 20}, {200, 200}}},
		{"stddev replace-one", sqlplan.Stddev, 10, 30, 2, 2, 4, accounting.ReplaceOne, []vec{{8, 4}, {80, 40 * sq(2)}, {800, 400}}},
	}
	for _, c := range cases {
		sp := &sqlplan.Plan{Aggregates: []sqlplan.Aggregate{{Name: "a", Kind: c.kind, Lo: c.lo, Hi: c.hi}},
			Bound: &sqlplan.Bound{Unit: "uid", Groups: c.k, Rows: c.r}}
		rels, err := sqlReleases(sp, c.groups, c.nb, []float64{1}, 1, 0, false)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		vs := rels[0].vecs
		if len(vs) != len(c.want) {
			t.Fatalf("%s: %d vectors, want %d", c.name, len(vs), len(c.want))
		}
		for j, w := range c.want {
			if !(vs[j].l1 >= w.l1 && vs[j].l1 <= w.l1*(1+1e-12)) || !(vs[j].l2 >= w.l2*(1-1e-15) && vs[j].l2 <= w.l2*(1+1e-12)) {
				t.Errorf("%s: %s sensitivities (%v, %v), want (%v, %v)", c.name, vs[j].what, vs[j].l1, vs[j].l2, w.l1, w.l2)
			}
		}
	}
	// The quantile: r rows move a rank by r, in each of T groups.
	for _, c := range []struct {
		k, r, groups int
		nb           accounting.Neighbour
		gaussian     bool
		want         float64
	}{
		{2, 3, 4, accounting.AddRemove, false, 0.6 / 6},
		{2, 3, 4, accounting.ReplaceOne, false, 0.6 / 12},
		{2, 3, 3, accounting.ReplaceOne, false, 0.6 / 9},
		{1, 5, 1, accounting.ReplaceOne, false, 0.6 / 5},
		{2, 3, 4, accounting.AddRemove, true, sq(8*0.6*0.5/2) / 3},
	} {
		if got := sqlQuantileEps(0.6, c.groups, c.nb, 1, 0.5, c.gaussian, sqlBound{c.k, c.r}); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile k=%d r=%d G=%d %v gaussian=%v: ε %v, want %v", c.k, c.r, c.groups, c.nb, c.gaussian, got, c.want)
		}
	}
	// Partition selection thresholds users: Δ₀ = k, or 2k under
	// replace-one.
	for _, c := range []struct {
		k    int
		nb   accounting.Neighbour
		want int
	}{{1, accounting.AddRemove, 1}, {3, accounting.AddRemove, 3}, {3, accounting.ReplaceOne, 6}} {
		sel, err := planSelection(1, 1e-6, c.nb, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Touched != c.want || sel.Scale != uint64(c.want)*selectionUnits {
			t.Errorf("selection k=%d %v: Δ₀ %d, scale %d, want %d", c.k, c.nb, sel.Touched, sel.Scale, c.want)
		}
	}
}

// The shares of the budget: even over the aggregates by default, by the
// weights otherwise, and within an aggregate over its vectors; they never
// add up to more than the whole, and each scale is calibrated to its share.
func TestSQLBudgetSplit(t *testing.T) {
	t.Parallel()
	sp := &sqlplan.Plan{Aggregates: []sqlplan.Aggregate{
		{Name: "n", Kind: sqlplan.Count},
		{Name: "s", Kind: sqlplan.Sum, Lo: 0, Hi: 10},
		{Name: "m", Kind: sqlplan.Avg, Lo: 0, Hi: 10},
		{Name: "v", Kind: sqlplan.Variance, Lo: 0, Hi: 10},
	}}
	for _, weights := range []any{nil, []float64{1, 2, 3, 4}} {
		shares, err := sqlWeights(weights, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, gaussian := range []bool{false, true} {
			eps, rho := 2.0, 0.0
			if gaussian {
				rho = 0.5
			}
			rels, err := sqlReleases(sp, 3, accounting.AddRemove, shares, eps, rho, gaussian)
			if err != nil {
				t.Fatal(err)
			}
			total := 0.0
			for i, r := range rels {
				agg := 0.0
				for _, v := range r.vecs {
					total += v.share
					agg += v.share
					var want float64
					if gaussian {
						want = v.l2 / math.Sqrt(2*rho*v.share)
					} else {
						want = v.l1 / (eps * v.share)
					}
					if v.scale < want {
						t.Errorf("%s %s: scale %v below %v for its share", r.agg.Name, v.what, v.scale, want)
					}
				}
				if math.Abs(agg-shares[i]) > 1e-12 {
					t.Errorf("weights %v: %s has share %v, want %v", weights, r.agg.Name, agg, shares[i])
				}
			}
			if total > 1 {
				t.Errorf("the shares add up to %v > 1", total)
			}
		}
	}
	if s, _ := sqlWeights(nil, 4); s[0] != 0.25 || s[3] != 0.25 {
		t.Errorf("default shares %v, want even", s)
	}
}

// The post-processing: a mean is the midpoint plus the centred sum over
// the count, clamped to the bounds, and the midpoint for a count below 1;
// a variance is clamped to [0, ((hi − lo)/2)²].
func TestSQLFinish(t *testing.T) {
	t.Parallel()
	avg := sqlRelease{agg: sqlplan.Aggregate{Kind: sqlplan.Avg, Lo: 0, Hi: 100}}
	var err error
	if avg.grid, err = sqlplan.GridOf(avg.agg); err != nil {
		t.Fatal(err)
	}
	got := sqlFinish(avg, [][]float64{{10, 0.4, 10, 10}, {-100, 1e6, 1e9, -1e9}})
	want := []float64{40, 50, 100, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mean %d = %v, want %v", i, got[i], want[i])
		}
	}
	v := sqlRelease{agg: sqlplan.Aggregate{Kind: sqlplan.Variance, Lo: 0, Hi: 100}}
	got = sqlFinish(v, [][]float64{{10, 10, 0}, {0, 0, 5}, {1000, 1e9, 5}})
	want = []float64{100, 2500, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("variance %d = %v, want %v", i, got[i], want[i])
		}
	}
	sd := sqlRelease{agg: sqlplan.Aggregate{Kind: sqlplan.Stddev, Lo: 0, Hi: 100}}
	if got := sqlFinish(sd, [][]float64{{10}, {0}, {1000}}); got[0] != 10 {
		t.Errorf("stddev %v, want 10", got[0])
	}
	c := sqlRelease{agg: sqlplan.Aggregate{Kind: sqlplan.Count}}
	if got := sqlFinish(c, [][]float64{{2.6, -2.6}}); got[0] != 3 || got[1] != -3 {
		t.Errorf("counts %v, want 3 and -3", got)
	}
	// nonnegative (the default in calls): below 0 shown as 0
	c.nonnegative = true
	if got := sqlFinish(c, [][]float64{{2.6, -2.6}}); got[0] != 3 || got[1] != 0 {
		t.Errorf("nonnegative counts %v, want 3 and 0", got)
	}
	_ = tabular.MeanRoundDown
}

// This package's tests link no SQL engine: the parser they register
// answers with the syntax trees dsl/sqlplan's tests record from DuckDB
// (dsl/snapshot's TestParseSQLRecorded keeps them equal to the engine's).
func init() {
	b, err := os.ReadFile("../sqlplan/testdata/ast.json")
	if err != nil {
		panic(err)
	}
	var trees map[string]json.RawMessage
	if err := json.Unmarshal(b, &trees); err != nil {
		panic(err)
	}
	err = RegisterSQLParser(func(_ context.Context, q string) ([]byte, error) {
		t, ok := trees[q]
		if !ok {
			return nil, fmt.Errorf("no recorded syntax tree for %q", q)
		}
		return t, nil
	})
	if err != nil {
		panic(err)
	}
}

// sqlMemQuery is a recorded query over sqlPeopleRef.
const sqlMemQuery = "SELECT floor(age / 10) AS band, COUNT(*) FROM people GROUP BY band"

// sqlPeopleRef is a row-level dataset "people" with age bounded in [0, 120].
func sqlPeopleRef() Ref {
	sc := ledger.Schema{Name: "people", Columns: []string{"age", "income"}, D: 2, Clip: 1, Unit: "row", Center: "none",
		Neighbour: "replace-one", Accountant: "zcdp", Bounds: map[string][2]float64{"age": {0, 120}}}
	return Ref{Name: "people", Schema: sc}
}

// The planner's refusals that need no engine: FROM naming another
// dataset, a plan without a parser's tree.
func TestSQLPlanRefusals(t *testing.T) {
	t.Parallel()
	env := &Local{}
	call := func(ref Ref, q string) error {
		_, err := env.Plan(Call{Func: FnSQL, Dataset: ref, Args: memArgs(FnSQL, map[string]any{"query": q, "delta": 0.0})})
		return err
	}
	other := sqlPeopleRef()
	other.Name = "others"
	if err := call(other, sqlMemQuery); err == nil || !containsAll(err.Error(), "FROM names dataset \"people\"", "\"others\"") {
		t.Errorf("FROM naming another dataset: %v", err)
	}
	if err := call(sqlPeopleRef(), sqlMemQuery); err != nil {
		t.Errorf("the recorded query: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// A quantile's exponential mechanism runs per group at its share of ε
// (pure) or at the ε whose bounded-range cost ε²/8 is its share of ρ
// (zCDP), halved when a replaced row can change two groups' histograms.
func TestSQLQuantileEps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		share    float64
		groups   int
		nb       accounting.Neighbour
		eps, rho float64
		gaussian bool
		want     float64
	}{
		{"pure add-remove grouped", 0.5, 3, accounting.AddRemove, 2, 0, false, 1},
		{"pure replace-one ungrouped", 0.5, 1, accounting.ReplaceOne, 2, 0, false, 1},
		{"pure replace-one grouped", 0.5, 3, accounting.ReplaceOne, 2, 0, false, 0.5},
		{"zcdp add-remove grouped", 0.5, 3, accounting.AddRemove, 0, 0.5, true, math.Sqrt2},
		{"zcdp replace-one ungrouped", 0.25, 1, accounting.ReplaceOne, 0, 0.5, true, 1},
		{"zcdp replace-one grouped", 0.5, 2, accounting.ReplaceOne, 0, 0.5, true, 1},
	} {
		if got := sqlQuantileEps(c.share, c.groups, c.nb, c.eps, c.rho, c.gaussian, sqlBound{1, 1}); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: ε %v, want %v", c.name, got, c.want)
		}
	}
	// sqlReleases plans the mechanism at that ε, over the bounds and q
	// of the aggregate, and gives the printer its grid.
	sp := &sqlplan.Plan{Aggregates: []sqlplan.Aggregate{
		{Name: "n", Kind: sqlplan.Count},
		{Name: "p90", Kind: sqlplan.Quantile, Lo: -5, Hi: 5, Q: 0.9},
	}}
	rels, err := sqlReleases(sp, 2, accounting.ReplaceOne, []float64{0.25, 0.75}, 2, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	qp := rels[1].qp
	if qp == nil || qp.Lo != -5 || qp.Hi != 5 || qp.Q != 0.9 || math.Abs(qp.Eps-0.75) > 1e-9 || qp.Eps > 0.75 || !rels[1].halved {
		t.Fatalf("the quantile's plan %+v (halved %v), want q=0.9 over [-5, 5] at ε=0.75", qp, rels[1].halved)
	}
	if sp.Aggregates[1].Bins != qp.Grid || qp.Grid != 1<<tabular.GridBits {
		t.Errorf("the printer's grid has %d steps, the mechanism's %d", sp.Aggregates[1].Bins, qp.Grid)
	}
	if len(rels[1].vecs) != 0 || rels[0].vecs[0].share > 0.25 {
		t.Errorf("the shares: count %v, quantile vectors %d", rels[0].vecs[0].share, len(rels[1].vecs))
	}
}

// A query with a quantile at δ > 0 is one zCDP event that is not marked
// as a composition of Gaussian releases (the exponential mechanism is
// not Gaussian), priced at the call's ρ; at δ = 0 it is pure ε.
func TestSQLQuantileCost(t *testing.T) {
	t.Parallel()
	env := &Local{}
	for _, c := range []struct {
		q     string
		delta float64
		kind  accounting.Kind
		gauss bool
	}{
		{"SELECT MEDIAN(age) FROM people", 1e-6, accounting.ZCDP, false},
		{"SELECT MEDIAN(age) FROM people", 0, accounting.PureDP, false},
		{sqlMemQuery, 1e-6, accounting.ZCDP, true},
	} {
		p, err := env.Plan(Call{Func: FnSQL, Dataset: sqlPeopleRef(), Args: memArgs(FnSQL, map[string]any{"query": c.q, "delta": c.delta})})
		if err != nil {
			t.Fatal(err)
		}
		if p.Cost.Kind != c.kind || p.Cost.Gaussian != c.gauss || (c.delta > 0 && p.Cost.Rho != accounting.RhoForTarget(1, c.delta)) {
			t.Errorf("%s δ=%v: cost %v", c.q, c.delta, p.Cost)
		}
		if err := p.Cost.Validate(); err != nil {
			t.Errorf("%s δ=%v: %v", c.q, c.delta, err)
		}
	}
	gdp := sqlPeopleRef()
	gdp.Schema.Accountant = accounting.ModeGDP.String()
	if _, err := env.Plan(Call{Func: FnSQL, Dataset: gdp, Args: memArgs(FnSQL, map[string]any{"query": "SELECT MEDIAN(age) FROM people", "delta": 1e-6})}); err == nil || !strings.Contains(err.Error(), "Gaussian DP") {
		t.Errorf("a quantile at δ > 0 on a gdp dataset: %v", err)
	}
}

// Partition selection's threshold and noise: a group that one row makes
// is released with probability at most δ/Δ₀, and the noise's scale gives
// ε over the Δ₀ groups a change touches; in rows, the threshold is
// 1 + (Δ₀/ε)·ln(Δ₀/δ) and the scale Δ₀/ε, to 2^-20.
func TestSQLPartitionThreshold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		eps, delta float64
		nb         accounting.Neighbour
		touched    int
	}{
		{1, 1e-6, accounting.AddRemove, 1},
		{0.5, 1e-6, accounting.ReplaceOne, 2},
		{3, 1e-9, accounting.AddRemove, 1},
		{0.01, 0.1, accounting.ReplaceOne, 2},
	} {
		sel, err := planSelection(c.eps, c.delta, c.nb, 1)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Touched != c.touched {
			t.Errorf("%v: Δ₀ = %d, want %d", c, sel.Touched, c.touched)
		}
		u, d0 := float64(selectionUnits), float64(c.touched)
		scale, tau := float64(sel.Scale), float64(sel.Threshold)
		// ε: a shift of U units in Δ₀ groups.
		if d0*u/scale > c.eps {
			t.Errorf("%v: the noise gives ε = %v > %v", c, d0*u/scale, c.eps)
		}
		// δ: a one-row group's release probability, bounded by the
		// discrete Laplace tail e^(−(τ−U)/t).
		if p := math.Exp(-(tau - u) / scale); p > c.delta/d0*(1+1e-12) {
			t.Errorf("%v: a one-row group is released with probability up to %v > δ/Δ₀ = %v", c, p, c.delta/d0)
		}
		wantTau := 1 + d0/c.eps*math.Log(d0/c.delta)
		if got := tau / u; math.Abs(got-wantTau) > 1e-5*wantTau {
			t.Errorf("%v: threshold %v rows, want %v", c, got, wantTau)
		}
		if got := scale / u; math.Abs(got-d0/c.eps) > 1e-5*d0/c.eps {
			t.Errorf("%v: scale %v rows, want %v", c, got, d0/c.eps)
		}
	}
	if _, err := planSelection(1e-300, 1e-6, accounting.AddRemove, 1); err == nil {
		t.Error("an ε too small to calibrate was accepted")
	}
}

// A key without a public domain plans a partition selection: refused
// before the charge at δ = 0 and on the accountants that take no (ε, δ)
// event (gdp, rdp); otherwise one (ε, δ) event, Laplace noise for the
// aggregates, and the selection's share as one more aggregate's.
func TestSQLPartitionSelectionPlan(t *testing.T) {
	t.Parallel()
	env := &Local{}
	const q = "SELECT income, COUNT(*) FROM people GROUP BY income"
	plan := func(ref Ref, delta float64) (*Plan, error) {
		return env.Plan(Call{Func: FnSQL, Dataset: ref, Args: memArgs(FnSQL, map[string]any{"query": q, "eps": 1.0, "delta": delta})})
	}
	if _, err := plan(sqlPeopleRef(), 0); err == nil || !strings.Contains(err.Error(), "needs delta > 0") {
		t.Errorf("δ = 0: %v", err)
	}
	for _, mode := range []accounting.Mode{accounting.ModeGDP, accounting.ModeRDP} {
		ref := sqlPeopleRef()
		ref.Schema.Accountant = mode.String()
		if _, err := plan(ref, 1e-6); err == nil || !strings.Contains(err.Error(), "no (ε, δ) events") {
			t.Errorf("%s accountant: %v", mode, err)
		}
	}
	for _, mode := range []accounting.Mode{accounting.ModeZCDP, accounting.ModeBasic} {
		ref := sqlPeopleRef()
		ref.Schema.Accountant = mode.String()
		p, err := plan(ref, 1e-6)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if p.Cost.Kind != accounting.ApproxDP || p.Cost.Eps != 1 || p.Cost.Delta != 1e-6 || p.Method != "sql/laplace+partition-selection" {
			t.Errorf("%s: cost %v, method %s", mode, p.Cost, p.Method)
		}
		// The selection takes half of ε (one aggregate besides it), so
		// the count's Laplace noise has scale Δ/(ε/2) = 2·2 under
		// replace-one.
		if !strings.Contains(p.Noise, "partition selection for key(s) income") || !strings.Contains(p.Noise, "ε=0.5") || !strings.Contains(p.Noise, "b=4") {
			t.Errorf("%s: explain %s", mode, p.Noise)
		}
	}
}

// On user-level data partition selection thresholds a candidate's users
// (the statement's RoleUnits column), not its rows: a user with many rows
// in a group adds 1 to its count, as the selection's Δ₀ = max_groups
// assumes.
func TestSQLCandidatesCountUsers(t *testing.T) {
	t.Parallel()
	key := &sqlplan.Expr{Op: sqlplan.OpColumn, Column: "city", Type: sqlplan.TypeString}
	sp := &sqlplan.Plan{
		Keys:       []sqlplan.Key{{Name: "city", Expr: key, Source: sqlplan.PartitionSelection}},
		Aggregates: []sqlplan.Aggregate{{Name: "n", Kind: sqlplan.Count}},
		Outputs:    []sqlplan.Output{{Key: 0, Agg: -1}, {Key: -1, Agg: 0}},
	}
	for _, c := range []struct {
		bound *sqlplan.Bound
		rows  [][]any
		want  []int64
	}{
		{nil, [][]any{{"x", int64(7)}, {"y", int64(1)}}, []int64{7, 1}},
		{&sqlplan.Bound{Unit: "uid", Groups: 2, Rows: 5}, [][]any{{"x", int64(7), int64(2)}, {"y", int64(5), int64(1)}}, []int64{2, 1}},
	} {
		sp.Bound = c.bound
		cands := sqlCandidates(c.rows, sp)
		if len(cands) != len(c.want) {
			t.Fatalf("bound %+v: %d candidates, want %d", c.bound, len(cands), len(c.want))
		}
		for i, w := range c.want {
			if cands[i].n != w {
				t.Errorf("bound %+v: candidate %v counts %d, want %d", c.bound, cands[i].keys, cands[i].n, w)
			}
		}
	}
}

// The rule between the Laplace and the Gaussian thresholding: the
// Gaussian one (with δ/2, its aggregates' Gaussian noise the other half)
// where its threshold is the lower — from Δ₀ = 4 on at these budgets —,
// the Laplace one (with δ, pure aggregates) otherwise; the parts never
// spend more than (ε, δ) by basic composition, and the aggregates' shares
// give up the selection's share only where they split a pure ε.
func TestSQLSelectionChoice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k        int
		nb       accounting.Neighbour
		aggs     int
		gaussian bool
	}{
		{1, accounting.AddRemove, 1, false},
		{1, accounting.ReplaceOne, 1, false},
		{2, accounting.ReplaceOne, 1, true},
		{4, accounting.AddRemove, 3, true},
		{10, accounting.ReplaceOne, 2, true},
	} {
		const eps, delta = 1.0, 1e-6
		sp := &sqlplan.Plan{Aggregates: make([]sqlplan.Aggregate, c.aggs)}
		if c.k > 1 {
			sp.Bound = &sqlplan.Bound{Unit: "u", Groups: c.k, Rows: 1}
		}
		shares := make([]float64, c.aggs)
		for i := range shares {
			shares[i] = 1 / float64(c.aggs)
		}
		sel, aggEps, aggDelta, err := planQuerySelection(shares, eps, delta, c.nb, sp)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Gaussian != c.gaussian {
			t.Errorf("%+v: Gaussian %v, want %v (threshold %d units, Laplace's %d)", c, sel.Gaussian, c.gaussian, sel.Threshold, sel.LaplaceThreshold)
		}
		lap, err := planSelection(sel.Eps, delta, c.nb, c.k)
		if err != nil {
			t.Fatal(err)
		}
		share := 1 / float64(c.aggs)
		if sel.Gaussian {
			if sel.Threshold >= lap.Threshold || sel.LaplaceThreshold != lap.Threshold {
				t.Errorf("%+v: Gaussian threshold %d not below Laplace's %d", c, sel.Threshold, lap.Threshold)
			}
			if sel.Eps+aggEps > eps || sel.Delta+aggDelta > delta || aggDelta <= 0 {
				t.Errorf("%+v: selection (%v, %v) + aggregates (%v, %v) exceed (ε, δ)", c, sel.Eps, sel.Delta, aggEps, aggDelta)
			}
		} else {
			if sel.Threshold != lap.Threshold || sel.Scale != lap.Scale {
				t.Errorf("%+v: Laplace selection %+v, want %+v", c, sel, lap)
			}
			share *= 1 - 1/float64(c.aggs+1)
			if sel.Eps+aggEps*share*float64(c.aggs) > eps || sel.Delta > delta || aggDelta != 0 || aggEps != eps {
				t.Errorf("%+v: selection (%v, %v), aggregates ε %v·%d shares of %v, δ %v", c, sel.Eps, sel.Delta, aggEps, c.aggs, share, aggDelta)
			}
		}
		for i := range shares {
			if math.Abs(shares[i]-share) > 1e-15 {
				t.Errorf("%+v: share %v, want %v", c, shares[i], share)
			}
		}
		if want := eps / float64(c.aggs+1) * tabular.MeanRoundDown; math.Abs(sel.Eps-want) > 1e-15 {
			t.Errorf("%+v: the selection's ε %v, want %v", c, sel.Eps, want)
		}
	}
}

// A user-level query whose users reach up to 4 groups selects its groups
// with the Gaussian thresholding: one (ε, δ) event, Gaussian noise for
// the aggregates, and the receipt says which thresholding ran and the
// Laplace threshold it beat.
func TestSQLGaussianSelectionPlan(t *testing.T) {
	t.Parallel()
	env := &Local{}
	ref := sqlPeopleRef()
	ref.Schema.Unit, ref.Schema.UserColumn = "user", "uid"
	ref.Schema.Columns = append(ref.Schema.Columns, "uid")
	p, err := env.Plan(Call{Func: FnSQL, Dataset: ref, Args: memArgs(FnSQL, map[string]any{
		"query": "SELECT income, COUNT(*) FROM people GROUP BY income", "eps": 1.0, "delta": 1e-6, "max_groups": 4})})
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Kind != accounting.ApproxDP || p.Cost.Eps != 1 || p.Cost.Delta != 1e-6 || p.Method != "sql/gaussian+partition-selection" {
		t.Errorf("cost %v, method %s", p.Cost, p.Method)
	}
	if !containsAll(p.Noise, "discrete Gaussian noise of σ=", "Gaussian thresholding, chosen over Laplace's threshold", "Δ₀=8", "δ=5e-07", "count = COUNT: count discrete Gaussian σ=") {
		t.Errorf("explain: %s", p.Noise)
	}
	if !strings.Contains(p.Note, "plus discrete Gaussian noise reaches the threshold") {
		t.Errorf("note: %s", p.Note)
	}
}

// The Gaussian selection's draws: a group of one row is released at most
// δ_t/Δ₀ of the time and a group of n rows with the Gaussian tail
// probability Φ̄((τ − n)/σ), within five standard errors over 20000
// seeded draws each.
func TestSQLGaussianSelectionRun(t *testing.T) {
	t.Parallel()
	g, err := tabular.PlanGaussianSelection(1, 0.05, 1, selectionUnits)
	if err != nil {
		t.Fatal(err)
	}
	sel := &sqlSelection{Eps: 1, Delta: 0.05, Touched: 1, Scale: g.Scale, Threshold: g.Threshold, Gaussian: true}
	s := noise.NewSeeded(7)
	const draws = 20000
	for _, n := range []int64{1, 3, 4, 6} {
		kept := 0
		for range draws {
			if sel.selected(n, s) {
				kept++
			}
		}
		p := math.Erfc((g.ThresholdRows()-float64(n))/g.ScaleRows()/math.Sqrt2) / 2
		f, se := float64(kept)/draws, math.Sqrt(p*(1-p)/draws)
		if math.Abs(f-p) > 5*se+1e-3 {
			t.Errorf("n=%d: released %.4f of the time, the Gaussian tail gives %.4f", n, f, p)
		}
		if n == 1 && f > g.TailDelta+5*se {
			t.Errorf("a one-row group is released %.4f of the time, above δ_t = %v", f, g.TailDelta)
		}
	}
}
