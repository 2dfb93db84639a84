package release

// Empirical privacy audits of private_sql's noise step (long tier): the
// plan's releases run on the exact aggregates of two neighbouring data
// sets, as the engine would return them (a stub SQLReader computes them
// in Go from the same grid), and mechanisms/audit bounds the privacy loss
// of the released table from below. A twin with half the noise must fail
// the same audit, so that the audit has the power to catch a break.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// auditRow is one data row: its group key and its value.
type auditRow struct {
	key string
	v   float64
}

// stubSQL answers the printed statement of sp with the exact aggregates
// of rows, computed as the statement defines them.
type stubSQL struct {
	sp   *sqlplan.Plan
	rows []auditRow
}

func (s stubSQL) Table() string { return "T" }

func (s stubSQL) Query(_ context.Context, _ string) ([][]any, error) {
	st, err := sqlplan.Print(s.sp, sqlplan.DuckDB, "T")
	if err != nil {
		return nil, err
	}
	byKey := map[string][]float64{}
	var order []string
	for _, r := range s.rows {
		k := r.key
		if len(s.sp.Keys) == 0 {
			k = "" // one group
		}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r.v)
	}
	var out [][]any
	for _, k := range order {
		vs := byKey[k]
		row := make([]any, len(st.Columns))
		for c, col := range st.Columns {
			switch col.Role {
			case sqlplan.RoleKey:
				row[c] = k
			case sqlplan.RoleRows, sqlplan.RoleCount:
				row[c] = int64(len(vs))
			case sqlplan.RoleSum, sqlplan.RoleSumSq:
				ag := s.sp.Aggregates[col.Index]
				g, err := sqlplan.GridOf(ag)
				if err != nil {
					return nil, err
				}
				sum := new(big.Int)
				for _, v := range vs {
					c := min(max(v, ag.Lo), ag.Hi) - g.Centre
					q := big.NewInt(min(max(int64(math.RoundToEven(c/g.Step)), g.Lo), g.Hi)) // the grid rounds half to even
					if col.Role == sqlplan.RoleSumSq {
						q.Mul(q, q)
					}
					sum.Add(sum, q)
				}
				row[c] = sum
			case sqlplan.RoleHist:
				// The statement's binning: the first grid point at or
				// above the clamped value.
				ag := s.sp.Aggregates[col.Index]
				g, err := sqlplan.QuantileGridOf(ag)
				if err != nil {
					return nil, err
				}
				counts := map[int64]uint64{}
				var bins []int64
				for _, v := range vs {
					c := min(max(v, ag.Lo), ag.Hi)
					b := min(max(int64(math.Ceil((c-g.Lo)/g.Step)), 0), int64(g.Bins))
					if counts[b] == 0 {
						bins = append(bins, b)
					}
					counts[b]++
				}
				var pairs [][2]any
				for _, b := range bins {
					pairs = append(pairs, [2]any{b, counts[b]})
				}
				row[c] = pairs
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// auditPlan plans one aggregate of kind over [lo, hi], grouped by a key
// of domain keys (none: ungrouped).
func auditPlan(kind sqlplan.AggKind, lo, hi float64, keys []string) *sqlplan.Plan {
	arg := &sqlplan.Expr{Op: sqlplan.OpColumn, Column: "x", Type: sqlplan.TypeNumber}
	sp := &sqlplan.Plan{Aggregates: []sqlplan.Aggregate{{Name: "a", Kind: kind, Lo: lo, Hi: hi, Bounds: sqlplan.FromQuery, Q: 0.5}}}
	if kind == sqlplan.Count {
		sp.Aggregates[0].Arg = nil
	} else {
		sp.Aggregates[0].Arg = arg
	}
	if len(keys) > 0 {
		var dom []sqlplan.Value
		for _, k := range keys {
			dom = append(dom, sqlplan.String(k))
		}
		sp.Keys = []sqlplan.Key{{Name: "g", Expr: &sqlplan.Expr{Op: sqlplan.OpColumn, Column: "g", Type: sqlplan.TypeString}, Source: sqlplan.FromCategories, Domain: dom}}
		sp.Outputs = append(sp.Outputs, sqlplan.Output{Key: 0, Agg: -1})
	}
	sp.Outputs = append(sp.Outputs, sqlplan.Output{Key: -1, Agg: 0})
	return sp
}

func TestAuditPrivateSQL(t *testing.T) {
	testtier.Long(t)
	const eps = 1.0
	// base is D unless a case gives its own; add-remove neighbours add a
	// row of value 10 (= max(|lo|, |hi|)), replace-one neighbours replace
	// its value 0 by 10 (= hi − lo).
	base := []auditRow{{"a", 0}, {"a", 5}, {"b", 7}, {"b", 2}}
	cases := []struct {
		name   string
		kind   sqlplan.AggKind
		keys   []string
		nb     accounting.Neighbour
		d0, d1 []auditRow // neighbours; d0 nil: base
		weight []float64  // the statistic's projection of the released row(s)
	}{
		{"SUM add-remove", sqlplan.Sum, nil, accounting.AddRemove, nil, append(append([]auditRow{}, base...), auditRow{"a", 10}), []float64{1}},
		{"SUM replace-one", sqlplan.Sum, nil, accounting.ReplaceOne, nil, []auditRow{{"a", 10}, {"a", 5}, {"b", 7}, {"b", 2}}, []float64{1}},
		{"AVG add-remove", sqlplan.Avg, nil, accounting.AddRemove, nil, append(append([]auditRow{}, base...), auditRow{"a", 10}), []float64{1}},
		{"AVG replace-one", sqlplan.Avg, nil, accounting.ReplaceOne, nil, []auditRow{{"a", 10}, {"a", 5}, {"b", 7}, {"b", 2}}, []float64{1}},
		{"VARIANCE add-remove", sqlplan.Variance, nil, accounting.AddRemove, nil, append(append([]auditRow{}, base...), auditRow{"a", 10}), []float64{1}},
		{"VARIANCE replace-one", sqlplan.Variance, nil, accounting.ReplaceOne, nil, []auditRow{{"a", 10}, {"a", 5}, {"b", 7}, {"b", 2}}, []float64{1}},
		// A row moves from group a (value 0) to group b (value 10).
		{"grouped SUM replace-one", sqlplan.Sum, []string{"a", "b"}, accounting.ReplaceOne, []auditRow{{"a", 10}, {"a", 5}, {"b", 7}, {"b", 2}}, []auditRow{{"b", 10}, {"a", 5}, {"b", 7}, {"b", 2}}, []float64{-1, 1}},
		{"grouped COUNT replace-one", sqlplan.Count, []string{"a", "b"}, accounting.ReplaceOne, nil, []auditRow{{"b", 0}, {"a", 5}, {"b", 7}, {"b", 2}}, []float64{-1, 1}},
		{"grouped COUNT add-remove", sqlplan.Count, []string{"a", "b"}, accounting.AddRemove, nil, append(append([]auditRow{}, base...), auditRow{"a", 0}), []float64{1, 0}},
		// MEDIAN: the exponential mechanism on the engine's histogram.
		{"MEDIAN add-remove", sqlplan.Quantile, nil, accounting.AddRemove, nil, append(append([]auditRow{}, base...), auditRow{"a", 10}), []float64{1}},
		{"MEDIAN replace-one", sqlplan.Quantile, nil, accounting.ReplaceOne, nil, []auditRow{{"a", 10}, {"a", 5}, {"b", 7}, {"b", 2}}, []float64{1}},
		// A row of value 0 moves from group a to group b: both groups'
		// histograms change, so each group's ε is halved.
		{"grouped MEDIAN replace-one", sqlplan.Quantile, []string{"a", "b"}, accounting.ReplaceOne, []auditRow{{"a", 0}, {"a", 0}, {"a", 10}, {"b", 10}, {"b", 10}}, []auditRow{{"a", 0}, {"b", 0}, {"a", 10}, {"b", 10}, {"b", 10}}, []float64{0, 1}},
	}
	cfg := audit.Config{Trials: 20000, Alpha: 0.05}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d0, d1, lo := c.d0, c.d1, 0.0
			if d0 == nil {
				d0 = base
			}
			if c.kind == sqlplan.Quantile {
				// Bounds [2^44, 2^44 + 10]: as few float64 points as
				// 128 grid steps of 16 ulps (tabular.PlanQuantile), so
				// that each draw walks a small grid.
				lo = 0x1p44
				shift := func(rs []auditRow) []auditRow {
					out := make([]auditRow, len(rs))
					for i, r := range rs {
						out[i] = auditRow{r.key, r.v + lo}
					}
					return out
				}
				d0, d1 = shift(d0), shift(d1)
			}
			sp := auditPlan(c.kind, lo, lo+10, c.keys)
			groups := max(1, len(c.keys))
			mech := func(half bool) audit.Mechanism {
				rels, err := sqlReleases(sp, groups, c.nb, []float64{1}, eps, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				if half && c.kind == sqlplan.Quantile {
					// The twin runs each group's mechanism at twice
					// the planned ε.
					for i := range rels {
						qp, err := tabular.PlanQuantile(lo, lo+10, 0.5, 2*rels[i].qp.Eps)
						if err != nil {
							t.Fatal(err)
						}
						rels[i].qp = qp
					}
				} else if half {
					for i := range rels {
						for j := range rels[i].vecs {
							rels[i].vecs[j].scale /= 2
						}
					}
				}
				cols, kinds := sqlOutputs(sp)
				return audit.Vector(func(neighbour bool, trial int) []float64 {
					rows := d0
					seed := uint64(2*trial + 1)
					if neighbour {
						rows, seed = d1, uint64(2*trial+2)
					}
					v, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, groups, noise.NewSeeded(seed))
					if err != nil {
						panic(err)
					}
					var out []float64
					for _, r := range v.(*Table).Rows {
						out = append(out, r[len(r)-1].(float64))
					}
					return out
				}, audit.ProjectOnto(c.weight))
			}
			if c.kind == sqlplan.Quantile && sp.Aggregates[0].Bins > 256 {
				t.Fatalf("the audit's grid has %d steps", sp.Aggregates[0].Bins)
			}
			res, err := audit.Run(cfg, mech(false))
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Check(eps); err != nil {
				t.Error(err)
			}
			twin, err := audit.Run(cfg, mech(true))
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res, "| half noise:", twin)
			if c.kind == sqlplan.Sum || c.kind == sqlplan.Count || c.name == "MEDIAN replace-one" {
				// The sums and counts are the noisy vectors themselves: half
				// the noise must be caught, and so must a median at twice
				// its ε where a replaced value crosses the median. (AVG and
				// VARIANCE divide two noisy
				// values and clamp, and a quantile's loss of ε is reached
				// only on a few grid points of a continuous-looking
				// output; their statistic is weaker, so only the claim
				// itself is checked, and the twin's result is logged.)
				if twin.EpsLower <= eps {
					t.Errorf("the audit does not catch half the noise: %v", twin)
				}
			}
		})
	}
}

// failingSQL is an engine that fails, or returns a row it should not.
type failingSQL struct{ rows [][]any }

func (failingSQL) Table() string { return "T" }

func (f failingSQL) Query(context.Context, string) ([][]any, error) {
	if f.rows == nil {
		return nil, errors.New("engine: out of memory near value 42") // a message that must not surface
	}
	return f.rows, nil
}

// After the charge an engine failure, or a result the run cannot read,
// still gives a release, and one that does not depend on the data: the
// noise around zero aggregates, the same draws as on an empty result.
func TestSQLEngineFailureReleasesNoise(t *testing.T) {
	t.Parallel()
	sp := auditPlan(sqlplan.Avg, 0, 10, []string{"a", "b"})
	rels, err := sqlReleases(sp, 2, accounting.AddRemove, []float64{1}, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	cols, kinds := sqlOutputs(sp)
	run := func(q SQLReader) *Table {
		v, err := runSQL(context.Background(), &Data{SQL: q}, sp, rels, cols, kinds, 2, noise.NewSeeded(3))
		if err != nil {
			t.Fatalf("the run failed after the charge: %v", err)
		}
		return v.(*Table)
	}
	empty := run(stubSQL{sp, nil})
	for _, q := range []SQLReader{failingSQL{}, failingSQL{rows: [][]any{{"a", "not a number", int64(1), int64(2)}}}} {
		got := run(q)
		if fmt.Sprint(got.Rows) != fmt.Sprint(empty.Rows) {
			t.Errorf("%T: released %v, want the empty result's %v", q, got.Rows, empty.Rows)
		}
	}
	if _, err := runSQL(context.Background(), &Data{}, sp, rels, cols, kinds, 2, noise.NewSeeded(3)); !errors.Is(err, errNoSQL) {
		t.Errorf("data without SQL access: %v, want errNoSQL", err)
	}
}

// The same for a quantile: an engine failure, or a histogram the run
// cannot read (a bin outside the grid, a repeated bin, a count below 1),
// releases the draws from empty histograms, as an empty result does.
func TestSQLEngineFailureQuantile(t *testing.T) {
	t.Parallel()
	sp := auditPlan(sqlplan.Quantile, 0x1p44, 0x1p44+10, []string{"a", "b"})
	rels, err := sqlReleases(sp, 2, accounting.AddRemove, []float64{1}, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	bins := int64(sp.Aggregates[0].Bins)
	cols, kinds := sqlOutputs(sp)
	run := func(q SQLReader) *Table {
		v, err := runSQL(context.Background(), &Data{SQL: q}, sp, rels, cols, kinds, 2, noise.NewSeeded(3))
		if err != nil {
			t.Fatalf("the run failed after the charge: %v", err)
		}
		return v.(*Table)
	}
	empty := run(stubSQL{sp, nil})
	full := run(stubSQL{sp, []auditRow{{"a", 0x1p44 + 1}, {"a", 0x1p44 + 1}, {"b", 0x1p44 + 9}}})
	if fmt.Sprint(full.Rows) == fmt.Sprint(empty.Rows) {
		t.Fatalf("the data change nothing: %v", full.Rows)
	}
	for _, q := range []SQLReader{
		failingSQL{},
		failingSQL{rows: [][]any{{"a", int64(1), [][2]any{{bins + 1, uint64(1)}}}}},
		failingSQL{rows: [][]any{{"a", int64(2), [][2]any{{int64(3), uint64(1)}, {int64(3), uint64(1)}}}}},
		failingSQL{rows: [][]any{{"a", int64(1), [][2]any{{int64(3), uint64(0)}}}}},
		failingSQL{rows: [][]any{{"a", int64(1), "not a histogram"}}},
	} {
		if got := run(q); fmt.Sprint(got.Rows) != fmt.Sprint(empty.Rows) {
			t.Errorf("%v: released %v, want the empty result's %v", q, got.Rows, empty.Rows)
		}
	}
}

// Partition selection, audited on the whole run (runSelectedSQL on the
// engine's candidates): group a holds one row in D and two in D′, both
// near the threshold (ε = 1 for the selection, δ = 0.2: about 2.6 rows),
// where the discrete Laplace tail's ratio is e^ε per row; the statistic
// is whether group a is released. A twin whose noise has half the scale
// must fail under add-remove, so the audit has power. (A group that one row makes is
// released with probability at most δ; TestSQLPartitionThreshold checks
// that bound exactly.)
func TestAuditSQLPartitionSelection(t *testing.T) {
	testtier.Long(t)
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		t.Run(nb.String(), func(t *testing.T) {
			const eps, delta = 1.0, 0.2
			sp := auditPlan(sqlplan.Count, 0, 0, []string{"a"})
			sp.Keys[0].Source, sp.Keys[0].Domain = sqlplan.PartitionSelection, nil
			rels, err := sqlReleases(sp, sqlplan.MaxGroups, nb, []float64{1}, eps, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			// The selection's own ε, as if the call had given it this
			// share (planSelection's Δ₀ makes it per change).
			sel, err := planSelection(eps, delta, nb, 1)
			if err != nil {
				t.Fatal(err)
			}
			d0 := []auditRow{{"a", 1}, {"b", 1}, {"b", 1}, {"b", 1}}
			d1 := []auditRow{{"a", 1}, {"a", 1}, {"b", 1}, {"b", 1}}
			if nb == accounting.AddRemove {
				d1 = append(append([]auditRow{}, d0...), auditRow{"a", 1})
			}
			cols, kinds := sqlOutputs(sp)
			mech := func(half bool) audit.Mechanism {
				s := *sel
				if half {
					s.Scale /= 2
				}
				return audit.Vector(func(neighbour bool, trial int) []float64 {
					rows, seed := d0, uint64(2*trial+1)
					if neighbour {
						rows, seed = d1, uint64(2*trial+2)
					}
					v, err := runSelectedSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, &s, noise.NewSeeded(seed))
					if err != nil {
						panic(err)
					}
					for _, r := range v.(*Table).Rows {
						if r[0] == "a" {
							return []float64{1}
						}
					}
					return []float64{0}
				}, audit.ProjectOnto([]float64{1}))
			}
			cfg := audit.Config{Trials: 20000, Alpha: 0.05}
			res, err := audit.Run(cfg, mech(false))
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Check(eps); err != nil {
				t.Error(err)
			}
			twin, err := audit.Run(cfg, mech(true))
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res, "| half noise:", twin)
			// Under replace-one the selection is calibrated for a row
			// that leaves one group and enters another (Δ₀ = 2); this
			// statistic sees one group only, half the loss, so only the
			// claim is checked there.
			if nb == accounting.AddRemove && twin.EpsLower <= eps {
				t.Errorf("the audit does not catch half the noise: %v", twin)
			}
		})
	}
}

// Under partition selection an engine failure, or a candidate the run
// cannot read, releases no group: an empty table, whatever the data.
func TestSQLEngineFailureSelection(t *testing.T) {
	t.Parallel()
	sp := auditPlan(sqlplan.Count, 0, 0, []string{"a"})
	sp.Keys[0].Source, sp.Keys[0].Domain = sqlplan.PartitionSelection, nil
	rels, err := sqlReleases(sp, sqlplan.MaxGroups, accounting.AddRemove, []float64{0.5}, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := planSelection(0.5, 0.5, accounting.AddRemove, 1)
	if err != nil {
		t.Fatal(err)
	}
	cols, kinds := sqlOutputs(sp)
	run := func(q SQLReader) *Table {
		v, err := runSelectedSQL(context.Background(), &Data{SQL: q}, sp, rels, cols, kinds, sel, noise.NewSeeded(3))
		if err != nil {
			t.Fatalf("the run failed after the charge: %v", err)
		}
		return v.(*Table)
	}
	var many []auditRow
	for range 200 {
		many = append(many, auditRow{"a", 1})
	}
	if got := run(stubSQL{sp, many}); len(got.Rows) != 1 || got.Rows[0][0] != "a" {
		t.Fatalf("a group of 200 rows is not selected: %v", got.Rows)
	}
	for _, q := range []SQLReader{
		failingSQL{},
		failingSQL{rows: [][]any{{"a", "200"}}},
		failingSQL{rows: [][]any{{"a", int64(200)}, {"a", int64(200)}}},
		failingSQL{rows: [][]any{{true, int64(200)}}},
	} {
		if got := run(q); len(got.Rows) != 0 {
			t.Errorf("%v: released %v, want no group", q, got.Rows)
		}
	}
}

// userRow is a row of user-level data: its user, group key and value.
type userRow struct {
	user string
	auditRow
}

// boundUsers applies sqlplan.Bound's rule, as the statement does, to rows
// in row order: each user keeps the rows of their first k distinct groups
// and their first r rows in each.
func boundUsers(rows []userRow, k, r int) []auditRow {
	groups := map[string][]string{}
	kept := map[[2]string]int{}
	var out []auditRow
	for _, row := range rows {
		gs := groups[row.user]
		rank := -1
		for i, g := range gs {
			if g == row.key {
				rank = i
			}
		}
		if rank < 0 {
			groups[row.user], rank = append(gs, row.key), len(gs)
		}
		id := [2]string{row.user, row.key}
		if rank >= k || kept[id] >= r {
			continue
		}
		kept[id]++
		out = append(out, row.auditRow)
	}
	return out
}

// TestAuditPrivateSQLUserLevel audits a grouped SUM on user-level data
// under add-remove with max_groups = 2 and max_rows = 2: the neighbour adds
// a user with six rows of the extreme value in three groups, of which the
// bound keeps two rows in each of the first two groups, the most one user
// can move (40 in all, the ℓ1 sensitivity k·r·m). The claimed ε must hold
// and half the noise must be caught.
func TestAuditPrivateSQLUserLevel(t *testing.T) {
	testtier.Long(t)
	const eps, k, r = 1.0, 2, 2
	base := []userRow{{"u1", auditRow{"a", 0}}, {"u1", auditRow{"a", 5}}, {"u2", auditRow{"b", 7}}, {"u3", auditRow{"c", 2}}}
	heavy := append([]userRow{}, base...)
	for _, g := range []string{"a", "a", "b", "a", "c", "b"} {
		heavy = append(heavy, userRow{"u9", auditRow{g, 10}})
	}
	d0, d1 := boundUsers(base, k, r), boundUsers(heavy, k, r)
	if len(d1) != len(d0)+4 {
		t.Fatalf("the bound keeps %d of the heavy user's rows, want 4", len(d1)-len(d0))
	}
	keys := []string{"a", "b", "c"}
	sp := auditPlan(sqlplan.Sum, 0, 10, keys)
	sp.Bound = &sqlplan.Bound{Unit: "uid", Groups: k, Rows: r}
	mech := func(half bool) audit.Mechanism {
		rels, err := sqlReleases(sp, len(keys), accounting.AddRemove, []float64{1}, eps, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if half {
			rels[0].vecs[0].scale /= 2
		}
		cols, kinds := sqlOutputs(sp)
		return audit.Vector(func(neighbour bool, trial int) []float64 {
			rows, seed := d0, uint64(2*trial+1)
			if neighbour {
				rows, seed = d1, uint64(2*trial+2)
			}
			v, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, len(keys), noise.NewSeeded(seed))
			if err != nil {
				panic(err)
			}
			var out []float64
			for _, row := range v.(*Table).Rows {
				out = append(out, row[len(row)-1].(float64))
			}
			return out
		}, audit.ProjectOnto([]float64{1, 1, 0}))
	}
	cfg := audit.Config{Trials: 20000, Alpha: 0.05}
	res, err := audit.Run(cfg, mech(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(eps); err != nil {
		t.Error(err)
	}
	twin, err := audit.Run(cfg, mech(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res, "| half noise:", twin)
	if twin.EpsLower <= eps {
		t.Errorf("the audit does not catch half the noise: %v", twin)
	}
}

// The Gaussian thresholding, audited as the Laplace one above on the
// whole run: group a holds 5 rows in D and 6 in D′ (the selection at
// ε = 1, δ = 0.05: σ ≈ 1.6 rows, τ ≈ 4.1 rows, where the claim is closest
// to binding: exact loss 0.72 at δ), the statistic is whether group a is
// released, and the audit allows the selection's δ. A twin whose noise has
// half the scale (exact loss 2.27 at δ) must fail under add-remove.
func TestAuditSQLGaussianSelection(t *testing.T) {
	testtier.Long(t)
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		t.Run(nb.String(), func(t *testing.T) {
			const eps, delta = 1.0, 0.05
			sp := auditPlan(sqlplan.Count, 0, 0, []string{"a"})
			sp.Keys[0].Source, sp.Keys[0].Domain = sqlplan.PartitionSelection, nil
			rels, err := sqlReleases(sp, sqlplan.MaxGroups, nb, []float64{1}, eps, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			touched := 1
			if nb == accounting.ReplaceOne {
				touched = 2
			}
			g, err := tabular.PlanGaussianSelection(eps, delta, touched, selectionUnits)
			if err != nil {
				t.Fatal(err)
			}
			sel := &sqlSelection{Eps: eps, Delta: delta, Touched: touched, Scale: g.Scale, Threshold: g.Threshold, Gaussian: true}
			var d0, d1 []auditRow
			for range 5 {
				d0 = append(d0, auditRow{"a", 1})
			}
			for range 3 {
				d0 = append(d0, auditRow{"b", 1})
			}
			d1 = append(append([]auditRow{}, d0...), auditRow{"a", 1})
			if nb == accounting.ReplaceOne {
				d1 = append(append([]auditRow{}, d0[:len(d0)-1]...), auditRow{"a", 1})
			}
			cols, kinds := sqlOutputs(sp)
			mech := func(half bool) audit.Mechanism {
				s := *sel
				if half {
					s.Scale /= 2
				}
				return audit.Vector(func(neighbour bool, trial int) []float64 {
					rows, seed := d0, uint64(2*trial+1)
					if neighbour {
						rows, seed = d1, uint64(2*trial+2)
					}
					v, err := runSelectedSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, &s, noise.NewSeeded(seed))
					if err != nil {
						panic(err)
					}
					for _, r := range v.(*Table).Rows {
						if r[0] == "a" {
							return []float64{1}
						}
					}
					return []float64{0}
				}, audit.ProjectOnto([]float64{1}))
			}
			cfg := audit.Config{Trials: 20000, Alpha: 0.05, Delta: delta}
			res, err := audit.Run(cfg, mech(false))
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Check(eps); err != nil {
				t.Error(err)
			}
			twin, err := audit.Run(cfg, mech(true))
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res, "| half noise:", twin)
			if nb == accounting.AddRemove && twin.EpsLower <= eps {
				t.Errorf("the audit does not catch half the noise: %v", twin)
			}
		})
	}
}
