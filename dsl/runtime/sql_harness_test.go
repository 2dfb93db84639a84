package runtime

// private_sql in the neighbouring-datasets harness: a grammar of queries
// over the harness's snapshot datasets ("cats": x1 in [-0.5, 0.5], x2 in
// [-1, 2], x3 without bounds, g categorical {a, b} with values a, b, c and
// the extreme unit's zzz; "ucats" its user-level twin; "rows" held in
// memory), sampled with a fixed seed. Every world must give the same
// outcome: the same refusal before the charge, or a release of the same
// shape and receipt (under partition selection the released groups are
// a private output, so only the columns are compared; describeRelease).

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// sqlHarnessSeed fixes the sample of the default grid; the wide grid
// (make audit) samples more queries from the same grammar.
const sqlHarnessSeed = 27

// sqlQueryGen draws random queries from the harness grammar.
type sqlQueryGen struct{ r *rand.Rand }

func (g sqlQueryGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// bounds are clamping bounds, extremes included; one in ten is one the
// planner refuses (beyond ±2^990, too close to 0, inverted).
func (g sqlQueryGen) bounds() string {
	if g.r.IntN(10) == 0 {
		return g.pick(", -1e300, 1e300", ", 1e-300, 2e-300", ", 5, -5")
	}
	return g.pick(", 0, 1", ", -1, 1", ", 0, 0.001", ", -1e15, 1e15", ", -1e200, 1e200", ", 3, 4")
}

func (g sqlQueryGen) value() string {
	return g.pick("x1", "x2", "x3", "x1 * 1e300", "ln(x2 + 1)", "abs(x1) / 0", "CAST('nan' AS DOUBLE)", "coalesce(x3, 0)", "CASE WHEN g = 'a' THEN x1 ELSE NULL END", "greatest(x1, x2)")
}

// aggregate is one aggregate, each of the seven kinds equally often; a
// column with the owner's bounds goes without bounds half of the time;
// one in twelve is refused.
func (g sqlQueryGen) aggregate() string {
	if g.r.IntN(12) == 0 {
		return g.pick("MEDIAN(x3)", "QUANTILE(x1, 1.5)", "COUNT(x1)", "SUM(x3)", "COUNT(DISTINCT uid)", "random()")
	}
	v, b := g.value(), g.bounds()
	if (v == "x1" || v == "x2") && g.r.IntN(2) == 0 {
		b = ""
	}
	switch g.r.IntN(7) {
	case 0:
		return "COUNT(*)"
	case 4:
		return "MEDIAN(" + v + b + ")"
	case 5:
		return "QUANTILE(" + v + ", " + g.pick("0.1", "0.5", "0.9", "0.999") + b + ")"
	case 1:
		return "SUM(" + v + b + ")"
	case 2:
		return "AVG(" + v + b + ")"
	case 3:
		return "VARIANCE(" + v + b + ")"
	}
	return "STDDEV(" + v + b + ")"
}

func (g sqlQueryGen) cond(depth int) string {
	if depth > 0 && g.r.IntN(3) == 0 {
		op := g.pick(" AND ", " OR ")
		return "(" + g.cond(depth-1) + op + g.cond(depth-1) + ")"
	}
	if depth > 0 && g.r.IntN(5) == 0 {
		return "NOT (" + g.cond(depth-1) + ")"
	}
	if g.r.IntN(15) == 0 {
		return g.pick("g = 1", "nosuch > 0") // refused
	}
	return g.pick("x1 > 0", "x2 BETWEEN -1 AND 1", "g = 'a'", "g IN ('a', 'zzz')", "g <> 'it''s'", "x3 IS NULL",
		"x1 * 1e308 > 1e308", "ln(x2) < 0", "floor(x2) = 1", "x3 / 0 > 1", "CAST(g AS DOUBLE) IS NULL")
}

// query draws one query over dataset ds; keys, when not nil, is the
// keys= keyword it needs.
func (g sqlQueryGen) query(ds string) (string, any) {
	var sel, group []string
	var keys any
	switch g.r.IntN(9) {
	case 1, 6:
		sel, group = append(sel, "g"), append(group, "g")
	case 2:
		sel, group = append(sel, "floor(x2) AS b"), append(group, "b")
	case 3:
		sel, group = append(sel, "CASE WHEN x1 > 0 THEN 'p' ELSE 'n' END AS s"), append(group, "s")
	case 4:
		sel, group = append(sel, "g", "round(x1 * 4) AS r"), append(group, "g", "r")
		keys = map[string]any{"r": []any{-2.0, -1.0, 0.0, 1.0, 2.0}}
	case 5:
		// No public domain: partition selection (refused at δ = 0).
		sel, group = append(sel, "x3"), append(group, "x3")
	case 7:
		sel, group = append(sel, "CAST(round(x1 * 4) AS VARCHAR) AS t"), append(group, "t") // a string key
	case 8:
		sel, group = append(sel, "g", "floor(x3) AS f"), append(group, "g", "f") // a public key and a selected one
	}
	for i := range 1 + g.r.IntN(3) {
		sel = append(sel, g.aggregate()+fmt.Sprintf(" AS a%d", i))
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + ds
	if g.r.IntN(2) == 0 {
		q += " WHERE " + g.cond(2)
	}
	if len(group) > 0 {
		q += " GROUP BY " + strings.Join(group, ", ")
	}
	return q, keys
}

// sqlHarnessCalls are the harness's private_sql calls: fixed refusals of
// the grammar, the data sets other than snapshots, then n random queries
// over "cats" at both δ = 0 and δ > 0.
func sqlHarnessCalls(n int) []harnessCall {
	call := func(ds, q string, kws ...KW) harnessCall {
		return harnessCall{fn: "private_sql", dataset: ds, query: q, kws: kws}
	}
	calls := []harnessCall{
		call("cats", "SELECT g, COUNT(*) AS n, AVG(x1) AS m FROM cats GROUP BY g", newKW("eps", 1.0)),
		call("cats", "SELECT * FROM cats", newKW("eps", 1.0)),
		call("cats", "SELECT COUNT(*) FROM cats LIMIT 1", newKW("eps", 1.0)),
		// Partition selection: δ = 0 is refused; at δ > 0 the groups the
		// data hold pass a noisy threshold.
		call("cats", "SELECT x3, COUNT(*) FROM cats GROUP BY x3", newKW("eps", 1.0)),
		call("cats", "SELECT x3, COUNT(*) FROM cats GROUP BY x3", newKW("eps", 1.0), newKW("delta", 1e-6)),
		call("cats", "SELECT g, x3, COUNT(*) AS n, MEDIAN(x1) AS m FROM cats GROUP BY g, x3", newKW("eps", 1.0), newKW("delta", 1e-6)),
		// On user-level data each user's rows are bounded (max_groups
		// groups, max_rows rows per group, the first in row order) inside
		// the statement: counts, sums, means, quantiles and variances at
		// both δ; partition selection thresholds users; bounds beyond the
		// groups, or on row-level data, are refused.
		call("ucats", "SELECT g, COUNT(*) FROM ucats GROUP BY g", newKW("eps", 1.0)),
		call("ucats", "SELECT g, COUNT(*) AS n, SUM(x1) AS s, AVG(x2) AS m FROM ucats WHERE x1 > -0.4 GROUP BY g", newKW("eps", 1.0), newKW("max_groups", 2), newKW("max_rows", 3)),
		call("ucats", "SELECT g, MEDIAN(x1) AS q, VARIANCE(x2) AS v FROM ucats GROUP BY g", newKW("eps", 1.0), newKW("delta", 1e-6), newKW("max_rows", 2)),
		call("ucats", "SELECT x3, COUNT(*) AS n, SUM(x1, -1, 1) AS s FROM ucats GROUP BY x3", newKW("eps", 1.0), newKW("delta", 1e-6), newKW("max_groups", 2), newKW("max_rows", 2)),
		call("ucats", "SELECT g, COUNT(*) FROM ucats GROUP BY g", newKW("eps", 1.0), newKW("max_groups", 3)),
		// max_groups = 4: Δ₀ ≥ 4, where the Gaussian thresholding's
		// threshold is below Laplace's, so the groups are selected with
		// Gaussian noise and the aggregates (a mean and a median) are
		// Gaussian on the other half of δ.
		call("ucats", "SELECT x3, COUNT(*) AS n, AVG(x2) AS m, MEDIAN(x1) AS q FROM ucats GROUP BY x3", newKW("eps", 1.0), newKW("delta", 1e-6), newKW("max_groups", 4)),
		call("cats", "SELECT g, COUNT(*) FROM cats GROUP BY g", newKW("eps", 1.0), newKW("max_rows", 2)),
		// Three quantiles of one column: a joint release from one
		// histogram under add-remove, three draws under replace-one; with
		// the engine's NULLs and extremes of the harness's worlds.
		call("cats", "SELECT g, QUANTILE(x1, 0.1) AS a, MEDIAN(x1) AS b, QUANTILE(x1, 0.9) AS c FROM cats GROUP BY g", newKW("eps", 1.0)),
		call("cats", "SELECT QUANTILE(x2, 0.25) AS a, MEDIAN(x2) AS b, QUANTILE(x2, 0.75) AS c, QUANTILE(x2, 0.95) AS d FROM cats", newKW("eps", 1.0), newKW("delta", 1e-6)),
		// Users per group (each in up to max_groups groups), at both δ.
		call("ucats", "SELECT g, COUNT(DISTINCT uid) AS u FROM ucats WHERE x1 > 0 GROUP BY g", newKW("eps", 1.0)),
		call("ucats", "SELECT COUNT(DISTINCT uid) AS u FROM ucats", newKW("eps", 1.0), newKW("delta", 1e-6)),
		call("rows", "SELECT SUM(x1) FROM rows", newKW("eps", 1.0)),
		call("cats", "SELECT COUNT(*) FROM rows", newKW("eps", 1.0)),
		// weights= splits the budget unevenly; a zero or a missing weight
		// is refused.
		call("cats", "SELECT g, COUNT(*) AS n, AVG(x1, -1, 1) AS m FROM cats GROUP BY g", newKW("eps", 1.0), newKW("weights", []float64{3, 1})),
		call("cats", "SELECT g, COUNT(*) AS n, AVG(x1, -1, 1) AS m FROM cats GROUP BY g", newKW("eps", 1.0), newKW("delta", 1e-6), newKW("weights", []float64{1, 0})),
		call("cats", "SELECT COUNT(*) AS n, SUM(x1, -1, 1) AS s FROM cats", newKW("eps", 1.0), newKW("weights", []float64{1})),
		// nonnegative=false shows the raw counts (post-processing only)
		call("cats", "SELECT g, COUNT(*) AS n FROM cats GROUP BY g", newKW("eps", 1.0), newKW("nonnegative", false)),
		// consistent=true: each COUNT(*) and SUM releases its total too (one
		// more coordinate of its vector); refused without public keys or
		// without groups.
		call("cats", "SELECT g, COUNT(*) AS n, SUM(x1, -1, 1) AS s, AVG(x1, -1, 1) AS m FROM cats GROUP BY g", newKW("eps", 1.0), newKW("consistent", true)),
		call("cats", "SELECT g, COUNT(*) AS n, SUM(x1, 0, 1) AS s FROM cats GROUP BY g", newKW("eps", 1.0), newKW("delta", 1e-6), newKW("consistent", true)),
		call("cats", "SELECT COUNT(*) AS n FROM cats", newKW("eps", 1.0), newKW("consistent", true)),
	}
	g := sqlQueryGen{rand.New(rand.NewPCG(sqlHarnessSeed, 0))}
	for i := range n {
		q, keys := g.query("cats")
		kws := []KW{newKW("eps", 0.5)}
		if i%2 == 1 {
			kws = append(kws, newKW("delta", 1e-6))
		}
		if keys != nil {
			kws = append(kws, newKW("keys", keys))
		}
		calls = append(calls, call("cats", q, kws...))
	}
	return calls
}
