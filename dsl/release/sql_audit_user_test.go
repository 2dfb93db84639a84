package release

// Empirical privacy audits of private_sql on user-level data (max_groups
// = k, max_rows = r), in the worst-case world of each neighbouring
// relation: a user with k groups × r rows of extreme values. Each audit
// checks the claimed ε against the lower bound mechanisms/audit finds, and
// runs a weakened twin (half the noise, or the plan of a bound with half
// the rows per group, so the sensitivity it calibrates to is halved) that
// the same audit must catch, so that a passing audit has the power to see
// a break. Each runs 20 000 trials per side, in the long tier only (a
// statistical audit, as the others of this package).

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// userAuditConfig is the audits' size.
func userAuditConfig() audit.Config { return audit.Config{Trials: 20000, Alpha: 0.05} }

// boundUserRows is boundUsers keeping each row's user.
func boundUserRows(rows []userRow, k, r int) []userRow {
	groups := map[string][]string{}
	kept := map[[2]string]int{}
	var out []userRow
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
		out = append(out, row)
	}
	return out
}

// userStub is the engine on user-level rows: it bounds them as the
// statement does (sqlplan.Bound: the first k groups of each user, the
// first r rows in each), answers as stubSQL on the kept rows, and gives
// each group's distinct users for the RoleUnits column that partition
// selection thresholds.
type userStub struct {
	sp   *sqlplan.Plan
	k, r int // the bound the data are cut to (the plan's, unless a twin's)
	rows []userRow
}

func (u userStub) Table() string { return "T" }

func (u userStub) Query(ctx context.Context, q string) ([][]any, error) {
	kept := boundUserRows(u.rows, u.k, u.r)
	plain := make([]auditRow, len(kept))
	users := map[string]map[string]bool{}
	for i, r := range kept {
		plain[i] = r.auditRow
		if users[r.key] == nil {
			users[r.key] = map[string]bool{}
		}
		users[r.key][r.user] = true
	}
	out, err := stubSQL{u.sp, plain}.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	st, err := sqlplan.Print(u.sp, sqlplan.DuckDB, "T")
	if err != nil {
		return nil, err
	}
	key := -1
	for c, col := range st.Columns {
		if col.Role == sqlplan.RoleKey {
			key = c
		}
	}
	for _, row := range out {
		for c, col := range st.Columns {
			if col.Role == sqlplan.RoleUnits && key >= 0 {
				row[c] = int64(len(users[row[key].(string)]))
			}
		}
	}
	return out, nil
}

// fixedSQL is an engine whose answer was computed once (userStub's, on
// data that do not change between trials), so that a trial costs the
// noise and the release only.
type fixedSQL struct{ rows [][]any }

func (fixedSQL) Table() string { return "T" }

func (f fixedSQL) Query(context.Context, string) ([][]any, error) { return f.rows, nil }

// answered is u's answer, as a fixedSQL.
func answered(u userStub) fixedSQL {
	rows, err := u.Query(context.Background(), "")
	if err != nil {
		panic(err)
	}
	return fixedSQL{rows}
}

// heavyUser is one user's rows: r rows of value v in each group of gs.
func heavyUser(user string, gs []string, r int, v float64) []userRow {
	var out []userRow
	for range r {
		for _, g := range gs {
			out = append(out, userRow{user, auditRow{g, v}})
		}
	}
	return out
}

// runUserSQL releases the table of sp (grouped by keys) on the engine q,
// with the noise of seed.
func runUserSQL(sp *sqlplan.Plan, rels []sqlRelease, keys int, q SQLReader, seed uint64) *Table {
	cols, kinds := sqlOutputs(sp)
	v, err := runSQL(context.Background(), &Data{SQL: q}, sp, rels, cols, kinds, max(keys, 1), noise.NewSeeded(seed))
	if err != nil {
		panic(err)
	}
	return v.(*Table)
}

// lastColumn is a table's last column, one value per group.
func lastColumn(t *Table) []float64 {
	var out []float64
	for _, row := range t.Rows {
		out = append(out, row[len(row)-1].(float64))
	}
	return out
}

// auditBoth runs the audit of mech(false) against eps and of its weakened
// twin mech(true); the twin must be caught when catch is set (else its
// bound is only logged: a statistic that sees part of the loss).
func auditBoth(t *testing.T, eps float64, mech func(weak bool) audit.Mechanism, catch bool) {
	t.Helper()
	cfg := userAuditConfig()
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
	t.Log(res, "| weakened twin:", twin)
	if catch && twin.EpsLower <= eps {
		t.Errorf("the audit does not catch the weakened twin: %v", twin)
	}
}

// TestAuditSQLUserLevelReplaceOne audits a grouped SUM and a grouped
// COUNT on user-level data under replace-one, k = r = 2: a user with r
// rows of the largest value in each of groups a and b is replaced by one
// with r rows of it in c and d (and more rows, which the bound drops),
// the largest move of the four groups there is (ℓ1 = 2k·r·hi for the SUM,
// 2k·r for the COUNT). The statistic is the released values'
// log-likelihood ratio (laplaceLLR), which sees the whole loss.
func TestAuditSQLUserLevelReplaceOne(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const eps, k, r = 1.0, 2, 2
	keys := []string{"a", "b", "c", "d"}
	base := []userRow{{"u1", auditRow{"a", 3}}, {"u2", auditRow{"b", 7}}, {"u3", auditRow{"c", 2}}, {"u4", auditRow{"d", 5}}}
	d0 := append(append([]userRow{}, base...), heavyUser("u9", []string{"a", "b"}, r, 10)...)
	d1 := append(append([]userRow{}, base...), heavyUser("u9", []string{"c", "d", "a"}, r+1, 10)...)
	if got, want := len(boundUserRows(d1, k, r)), len(base)+k*r; got != want {
		t.Fatalf("the bound keeps %d rows of D′, want %d", got, want)
	}
	for _, kind := range []sqlplan.AggKind{sqlplan.Sum, sqlplan.Count} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			sp := auditPlan(kind, 0, 10, keys)
			sp.Bound = &sqlplan.Bound{Unit: "uid", Groups: k, Rows: r}
			// The groups' exact values in each world, in key order.
			exact := func(rows []userRow) []float64 {
				out := make([]float64, len(keys))
				for _, row := range boundUserRows(rows, k, r) {
					for g, key := range keys {
						if row.key == key && kind == sqlplan.Sum {
							out[g] += row.v
						} else if row.key == key {
							out[g]++
						}
					}
				}
				return out
			}
			m0, m1 := exact(d0), exact(d1)
			mech := func(half bool) audit.Mechanism {
				rels, err := sqlReleases(sp, len(keys), accounting.ReplaceOne, []float64{1}, eps, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				b := make([]float64, len(keys))
				for g := range b {
					b[g] = rels[0].vecs[0].scale
				}
				if half {
					rels[0].vecs[0].scale /= 2
				}
				q0, q1 := answered(userStub{sp, k, r, d0}), answered(userStub{sp, k, r, d1})
				return func(neighbour bool, trial int) float64 {
					q, seed := q0, uint64(2*trial+1)
					if neighbour {
						q, seed = q1, uint64(2*trial+2)
					}
					return laplaceLLR(lastColumn(runUserSQL(sp, rels, len(keys), q, seed)), m0, m1, b)
				}
			}
			auditBoth(t, eps, mech, true)
		})
	}
}

// laplaceLLR is the log-likelihood ratio of D′ against D of independent
// Laplace values y with means m1 (D′) and m0 (D) and scales b: the most
// powerful statistic for the pair (Neyman–Pearson), post-processing of
// the release.
func laplaceLLR(y, m0, m1, b []float64) float64 {
	s := 0.0
	for i := range y {
		s += (math.Abs(y[i]-m0[i]) - math.Abs(y[i]-m1[i])) / b[i]
	}
	return s
}

// TestAuditSQLUserLevelAvg audits an AVG on user-level data (k = 1,
// r = 2) under both relations. The release holds the AVG's noisy count
// and centred sum (Table.Parts, drawn under the call's one charge), and
// the audit's statistic is their log-likelihood ratio, which sees the
// whole loss. Add-remove adds a user with r rows at hi: the count moves by
// r and the centred sum by r·(hi − lo)/2, each its full sensitivity.
// Replace-one replaces a user with r rows at lo by one whose rows are
// outside the query (a WHERE, a NULL): the count moves by r (full) and
// the centred sum by r·(hi − lo)/2, half its replace-one sensitivity.
func TestAuditSQLUserLevelAvg(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const eps, k, r = 1.0, 1, 2
	base := []userRow{{"u1", auditRow{"a", 3}}, {"u2", auditRow{"a", 7}}, {"u3", auditRow{"a", 2}}}
	cases := []struct {
		nb     accounting.Neighbour
		d0, d1 []userRow
	}{
		{accounting.AddRemove, base, append(append([]userRow{}, base...), heavyUser("u9", []string{"a"}, r+1, 10)...)},
		{accounting.ReplaceOne, append(append([]userRow{}, base...), heavyUser("u9", []string{"a"}, r+1, 0)...), base},
	}
	for _, c := range cases {
		t.Run(c.nb.String(), func(t *testing.T) {
			t.Parallel()
			sp := auditPlan(sqlplan.Avg, 0, 10, nil)
			sp.Bound = &sqlplan.Bound{Unit: "uid", Groups: k, Rows: r}
			// The exact parts (count, centred sum) of each world.
			parts := func(rows []userRow) []float64 {
				n, s := 0.0, 0.0
				for _, row := range boundUserRows(rows, k, r) {
					n, s = n+1, s+row.v-5
				}
				return []float64{n, s}
			}
			m0, m1 := parts(c.d0), parts(c.d1)
			if m0[0] == m1[0] || m0[1] == m1[1] {
				t.Fatalf("the neighbours' parts %v and %v do not both move", m0, m1)
			}
			mech := func(half bool) audit.Mechanism {
				rels, err := sqlReleases(sp, 1, c.nb, []float64{1}, eps, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				b := []float64{rels[0].vecs[0].scale, rels[0].vecs[1].scale}
				if half {
					rels[0].vecs[0].scale /= 2
					rels[0].vecs[1].scale /= 2
				}
				q0, q1 := answered(userStub{sp, k, r, c.d0}), answered(userStub{sp, k, r, c.d1})
				return func(neighbour bool, trial int) float64 {
					q, seed := q0, uint64(2*trial+1)
					if neighbour {
						q, seed = q1, uint64(2*trial+2)
					}
					p := runUserSQL(sp, rels, 0, q, seed).Parts["a"]
					return laplaceLLR([]float64{p[0][0], p[1][0]}, m0, m1, b)
				}
			}
			auditBoth(t, eps, mech, true)
		})
	}
}

// TestAuditSQLUserLevelQuantile audits a MEDIAN on user-level data (k = 1,
// r = 2) under both relations: add-remove adds a user with r rows at hi,
// replace-one moves a user's r rows from lo to hi, across the median. The
// twin plans for a bound of one row per user while the data keep two: it
// runs the exponential mechanism at twice the ε its utility sensitivity
// allows. As in TestAuditPrivateSQL, the statistic (the released value)
// reaches the whole loss only where the rows cross the median, so the
// twin must be caught under replace-one and is logged under add-remove.
func TestAuditSQLUserLevelQuantile(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const eps, k, r = 1.0, 1, 2
	const lo = 0x1p44 // as in TestAuditPrivateSQL: a small grid
	base := []userRow{{"u1", auditRow{"a", lo}}, {"u2", auditRow{"a", lo + 5}}, {"u3", auditRow{"a", lo + 7}}, {"u4", auditRow{"a", lo + 2}}}
	cases := []struct {
		nb     accounting.Neighbour
		d0, d1 []userRow
		catch  bool
	}{
		{accounting.AddRemove, base, append(append([]userRow{}, base...), heavyUser("u9", []string{"a"}, r+1, lo+10)...), false},
		{accounting.ReplaceOne, append(append([]userRow{}, base...), heavyUser("u9", []string{"a"}, r, lo)...),
			append(append([]userRow{}, base...), heavyUser("u9", []string{"a"}, r, lo+10)...), true},
	}
	for _, c := range cases {
		t.Run(c.nb.String(), func(t *testing.T) {
			t.Parallel()
			mech := func(weak bool) audit.Mechanism {
				sp := auditPlan(sqlplan.Quantile, lo, lo+10, nil)
				sp.Bound = &sqlplan.Bound{Unit: "uid", Groups: k, Rows: r}
				if weak {
					sp.Bound.Rows = 1
				}
				rels, err := sqlReleases(sp, 1, c.nb, []float64{1}, eps, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				if sp.Aggregates[0].Bins > 256 {
					t.Fatalf("the audit's grid has %d steps", sp.Aggregates[0].Bins)
				}
				// The data keep r rows per user whatever the plan says.
				q0, q1 := answered(userStub{sp, k, r, c.d0}), answered(userStub{sp, k, r, c.d1})
				return func(neighbour bool, trial int) float64 {
					q, seed := q0, uint64(2*trial+1)
					if neighbour {
						q, seed = q1, uint64(2*trial+2)
					}
					return lastColumn(runUserSQL(sp, rels, 0, q, seed))[0]
				}
			}
			auditBoth(t, eps, mech, c.catch)
		})
	}
}

// TestAuditSQLUserLevelSelection audits DP partition selection on
// user-level data with max_groups = 2: the count it thresholds is a
// group's users, and one user adds one to each of up to two groups. At
// δ = 0.27 under add-remove (Δ₀ = 2 groups, noise scale 2 users) the
// threshold is just above 5 users: D has four users in each of groups a
// and b, and D′ adds a user with rows in a, b and c, of which the bound
// keeps a and b. Both counts stay in the noise's upper tail, where each
// group's selection ratio is e^(ε/2), both together e^ε, and the
// statistic is whether both are released. Under replace-one (Δ₀ = 4,
// threshold near 12 users) that user moves from a and b to c and d, which
// hold ten users each; the statistic sees c and d only, half the loss, so
// the claim is checked and the twin logged. The twin's selection noise
// has half the scale.
func TestAuditSQLUserLevelSelection(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const eps, delta, k = 1.0, 0.27, 2
	users := func(n int) []userRow {
		var out []userRow
		for i := range n {
			for _, g := range []string{"a", "b", "c", "d"} {
				out = append(out, userRow{fmt.Sprint(g, i), auditRow{g, 1}})
			}
		}
		return out
	}
	cases := []struct {
		nb     accounting.Neighbour
		d0, d1 []userRow
		watch  []string // the groups whose joint release is the statistic
		catch  bool
	}{
		{accounting.AddRemove, users(4), append(users(4), heavyUser("u9", []string{"a", "b", "c"}, 1, 1)...), []string{"a", "b"}, true},
		{accounting.ReplaceOne, append(users(10), heavyUser("u9", []string{"a", "b"}, 1, 1)...),
			append(users(10), heavyUser("u9", []string{"c", "d", "a"}, 1, 1)...), []string{"c", "d"}, false},
	}
	for _, c := range cases {
		t.Run(c.nb.String(), func(t *testing.T) {
			t.Parallel()
			sp := auditPlan(sqlplan.Count, 0, 0, []string{"a"})
			sp.Keys[0].Source, sp.Keys[0].Domain = sqlplan.PartitionSelection, nil
			sp.Bound = &sqlplan.Bound{Unit: "uid", Groups: k, Rows: 1}
			rels, err := sqlReleases(sp, sqlplan.MaxGroups, c.nb, []float64{1}, eps, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			sel, err := planSelection(eps, delta, c.nb, k)
			if err != nil {
				t.Fatal(err)
			}
			// D′'s watched groups are above the threshold by less than
			// one user, inside the noise's upper tail.
			above := int64(len(boundUserRows(c.d1, k, 1))/4+1)*selectionUnits - sel.Threshold
			t.Logf("threshold %.4g users", float64(sel.Threshold)/selectionUnits)
			if c.nb == accounting.AddRemove && (above > 0 || above < -selectionUnits) {
				t.Fatalf("threshold %d: D′'s groups are %d units from it, want within one user below", sel.Threshold, above)
			}
			cols, kinds := sqlOutputs(sp)
			mech := func(half bool) audit.Mechanism {
				s := *sel
				if half {
					s.Scale /= 2
				}
				q0, q1 := answered(userStub{sp, k, 1, c.d0}), answered(userStub{sp, k, 1, c.d1})
				return func(neighbour bool, trial int) float64 {
					q, seed := q0, uint64(2*trial+1)
					if neighbour {
						q, seed = q1, uint64(2*trial+2)
					}
					v, err := runSelectedSQL(context.Background(), &Data{SQL: q}, sp, rels, cols, kinds, &s, noise.NewSeeded(seed))
					if err != nil {
						panic(err)
					}
					found := 0
					for _, row := range v.(*Table).Rows {
						for _, g := range c.watch {
							if row[0] == g {
								found++
							}
						}
					}
					if found == len(c.watch) {
						return 1
					}
					return 0
				}
			}
			auditBoth(t, eps, mech, c.catch)
		})
	}
}
