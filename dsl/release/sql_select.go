package release

// DP partition selection for private_sql (issue 27): GROUP BY keys with
// no public domain (a text column, a categorical column without declared
// categories, a numeric expression without bounds) get their released
// groups from the data, through a thresholded noisy count per candidate
// group (Korolova et al. 2009; Google's differential-privacy library;
// Desfontaines, Voss, Gipson and Mandayam, "Differentially private
// partition selection", PoPETs 2022). The selection has its own share of
// the call's ε and the call's δ; the aggregates of the released groups use
// the other shares. The thresholded count's noise is discrete Laplace, or
// discrete Gaussian (Gaussian thresholding, tabular.PlanGaussianSelection)
// where that keeps more groups at the same budget (planQuerySelection).

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// sqlNominalCandidates is the number of candidate groups a plan's memory
// estimate assumes under partition selection (the candidates are the
// data's, unknown before the run).
const sqlNominalCandidates = 10_000

// maxSelectionScale bounds the integer scale of the selection's discrete
// Laplace noise (noise.Sampler.DiscreteLaplaceInt takes at most 2^50).
const maxSelectionScale = 1 << 50

// selectionUnits is the resolution of the selection's noise: counts are
// compared in units of 1/selectionUnits of a row, so that the discrete
// Laplace noise (on the integers, of an integer scale) has a scale within
// 2^-20 of a row of the ideal Δ₀/ε, whatever ε.
const selectionUnits = 1 << 20

// sqlSelection is a planned partition selection: a candidate group with n
// rows is released when U·n + Z ≥ Threshold, with U = selectionUnits and
// Z discrete Laplace on the integers with P(z) ∝ exp(−|z|/Scale): in
// rows, noise of scale Scale/U and a threshold Threshold/U.
type sqlSelection struct {
	Eps, Delta float64
	// Touched is Δ₀, the most groups one neighbouring change can touch:
	// on row-level data 1 under add-remove (a row is in one group), 2
	// under replace-one (a replaced row can leave one group and enter
	// another); on user-level data k and 2k for max_groups = k.
	Touched   int
	Scale     uint64
	Threshold int64
	// Gaussian: Z is discrete Gaussian with P(z) ∝ exp(−z²/(2·Scale²))
	// (Gaussian thresholding; Delta is then the selection's half of the
	// call's δ, the aggregates' Gaussian noise having the other half).
	Gaussian bool
	// LaplaceThreshold is the Laplace threshold in units the rule
	// compared a Gaussian selection with (for the receipt).
	LaplaceThreshold int64
}

// planQuerySelection plans a query's partition selection with its share
// of ε, one share besides the aggregates' (1/(k + 1) for k aggregates,
// lowered by MeanRoundDown), and chooses its noise: the Laplace
// thresholding at (ε_s, δ) with the aggregates' Laplace noise (pure, on
// the rest of ε; shares are scaled by 1 − 1/(k + 1) for them), or the
// Gaussian thresholding at (ε_s, δ/2) with the aggregates' Gaussian noise
// calibrated to (ε − ε_s, δ/2) (shares unchanged: they split that
// target's ρ). It picks the Gaussian one when its threshold in rows is
// the lower: the count a candidate needs to be released half the time.
// Both noises are symmetric, so that count is the threshold itself, and
// the Gaussian's lighter tails then keep more groups above it too
// (tabular.TestSelectionKeepsMore measures it). The Laplace threshold
// grows as Δ₀·ln(Δ₀/δ)/ε_s, the Gaussian one as √Δ₀·√ln(1/δ)/ε_s: the
// Gaussian wins from about Δ₀ = 3 on (user-level data with max_groups
// ≥ 3, or ≥ 2 under replace-one). Either way the call is (ε, δ)-DP by
// basic composition of the selection's (ε_s, δ_s) and the aggregates'
// (ε − ε_s, δ − δ_s). It returns the selection and the (ε, δ) the
// aggregates' noise is calibrated to (δ = 0: pure Laplace).
func planQuerySelection(shares []float64, eps, delta float64, nb accounting.Neighbour, sp *sqlplan.Plan) (sel *sqlSelection, aggEps, aggDelta float64, err error) {
	ps := 1 / float64(len(sp.Aggregates)+1)
	epsS := ps * tabular.MeanRoundDown * eps
	lap, err := planSelection(epsS, delta, nb, sqlMaxGroups(sp))
	if err != nil {
		return nil, 0, 0, err
	}
	// δ/2 is exact in binary, and δ − δ/2 = δ/2: the halves add up to δ.
	if g, gerr := tabular.PlanGaussianSelection(epsS, delta/2, lap.Touched, selectionUnits); gerr == nil && g.Threshold < lap.Threshold {
		sel = &sqlSelection{Eps: g.Eps, Delta: g.Delta, Touched: lap.Touched, Scale: g.Scale, Threshold: g.Threshold, Gaussian: true, LaplaceThreshold: lap.Threshold}
		return sel, (1 - ps) * eps, delta - delta/2, nil
	}
	for i := range shares {
		shares[i] *= 1 - ps
	}
	return lap, eps, 0, nil
}

// charge is the method, event and calibration words of a query with this
// selection at (ε, δ): one approximate (ε, δ) event either way (basic
// composition of the selection's and the aggregates' parts).
func (sel *sqlSelection) charge(eps, delta float64) (string, accounting.Event, string) {
	if sel.Gaussian {
		return "sql/gaussian+partition-selection", accounting.Approx(eps, delta),
			fmt.Sprintf("(ε=%v, δ=%v)-DP: the partition selection's Gaussian thresholding at (ε=%.4g, δ=%.4g) and the aggregates' discrete Gaussian noise calibrated to the rest (basic composition)", eps, delta, sel.Eps, sel.Delta)
	}
	return "sql/laplace+partition-selection", accounting.Approx(eps, delta),
		fmt.Sprintf("(ε=%v, δ=%v)-DP: discrete Laplace noise for the aggregates and the partition selection's thresholded counts (sequential composition of their shares of ε), the selection's δ", eps, delta)
}

// noiseName is the selection's noise in the plan's note.
func (sel *sqlSelection) noiseName() string {
	if sel.Gaussian {
		return "discrete Gaussian"
	}
	return "discrete Laplace"
}

// planSelection fixes the selection's noise and threshold for its share
// eps of ε and the call's δ under the relation nb, when one unit adds at
// most 1 to the thresholded count of each of at most k groups: on
// row-level data (k = 1) the count is the group's rows, on user-level
// data (max_groups = k) its users, after each user's rows are bounded to
// k groups (sqlplan.Bound; the statement's RoleUnits column).
//
// In units of 1/U of a row (or user): scale t = ⌈U·Δ₀/ε⌉, with Δ₀ = k
// under add-remove and 2k under replace-one; the counts U·n of the
// groups present in both neighbours move by at most U in at most Δ₀
// groups, so the released set's probability ratio is at most e^(Δ₀·U/t)
// ≤ e^ε. Threshold τ = U + ⌈t·ln(Δ₀/δ)⌉: a group present in one
// neighbour and absent in the other holds one unit (U units), and is
// released with probability P(Z ≥ τ − U) = e^(−(τ−U)/t)/(1 + e^(−1/t))
// ≤ e^(−(τ−U)/t) ≤ δ/Δ₀; there are at most Δ₀ such groups, so at most δ
// in all. Together (ε, δ)-DP. In rows: Laplace noise of scale Δ₀/ε and
// the threshold 1 + (Δ₀/ε)·ln(Δ₀/δ), each rounded up to 2^-20.
func planSelection(eps, delta float64, nb accounting.Neighbour, k int) (*sqlSelection, error) {
	touched := max(k, 1)
	if nb == accounting.ReplaceOne {
		touched *= 2
	}
	t := math.Ceil(selectionUnits * float64(touched) / eps)
	if !(t >= 1) || t > maxSelectionScale {
		return nil, Errorf(NameArgumentError, "%s: partition selection at ε=%v cannot be calibrated; raise eps", FnSQL, eps)
	}
	tau := selectionUnits + math.Ceil(t*math.Log(float64(touched)/delta))
	if !(tau >= 1) || tau > 1<<62 {
		return nil, Errorf(NameArgumentError, "%s: partition selection at ε=%v, δ=%v needs a threshold beyond any count; raise eps or delta", FnSQL, eps, delta)
	}
	return &sqlSelection{Eps: eps, Delta: delta, Touched: touched, Scale: uint64(t), Threshold: int64(tau)}, nil
}

// checkPartitionSelection refuses, before the charge, what partition
// selection cannot do: δ = 0, accountants that take no (ε, δ) events,
// and keys whose values the release cannot hold.
func checkPartitionSelection(sp *sqlplan.Plan, src Ref, delta float64) error {
	fn := FnSQL
	var names []string
	for _, k := range sp.Keys {
		if k.Source != sqlplan.PartitionSelection {
			continue
		}
		names = append(names, k.Name)
		if k.Expr.Type != sqlplan.TypeString && k.Expr.Type != sqlplan.TypeNumber {
			return Errorf(NameArgumentError, "%s: GROUP BY key %s is %s: keys chosen by partition selection must be strings or numbers (group by year(d) or CAST(… AS VARCHAR))", fn, k.Name, k.Expr.Type)
		}
	}
	fix := fmt.Sprintf("or give their values with keys={%q: […]}, or group by a column with declared categories, a CASE with literal results or floor(col / c) over a bounded column", names[0])
	if delta == 0 {
		return Errorf(NameArgumentError, "%s: GROUP BY key(s) %s have no public domain, so their groups are chosen by DP partition selection, which needs delta > 0 (a group's presence is released with probability at most delta when one row makes it); give delta, %s", fn, strings.Join(names, ", "), fix)
	}
	switch src.Schema.Accountant {
	case accounting.ModeGDP.String(), accounting.ModeRDP.String():
		return Errorf(NameArgumentError, "%s: GROUP BY key(s) %s need DP partition selection, an (ε, δ) mechanism, and dataset %q's %s accountant takes no (ε, δ) events; %s", fn, strings.Join(names, ", "), src.Name, src.Schema.Accountant, fix)
	}
	return nil
}

// explain describes the selection for the receipt's EXPLAIN.
func (sel *sqlSelection) explain(sp *sqlplan.Plan, nb accounting.Neighbour) string {
	var names []string
	for _, k := range sp.Keys {
		if k.Source == sqlplan.PartitionSelection {
			names = append(names, k.Name)
		}
	}
	count := "row"
	if sp.Bound != nil {
		count = "user"
	}
	if sel.Gaussian {
		return fmt.Sprintf("partition selection for key(s) %s: a candidate group is released when its %s count plus discrete Gaussian noise of σ=%.6g reaches the threshold %.6g (Gaussian thresholding, chosen over Laplace's threshold %.6g; Δ₀=%d group(s) touched by a change under %s; ε=%.4g, δ=%.4g)",
			strings.Join(names, ", "), count, float64(sel.Scale)/selectionUnits, float64(sel.Threshold)/selectionUnits, float64(sel.LaplaceThreshold)/selectionUnits, sel.Touched, nb, sel.Eps, sel.Delta)
	}
	return fmt.Sprintf("partition selection for key(s) %s: a candidate group is released when its %s count plus discrete Laplace noise of scale %.6g reaches the threshold %.6g (Δ₀=%d group(s) touched by a change under %s; ε=%.4g, δ=%.4g)",
		strings.Join(names, ", "), count, float64(sel.Scale)/selectionUnits, float64(sel.Threshold)/selectionUnits, sel.Touched, nb, sel.Eps, sel.Delta)
}

// selected reports whether a candidate group with n rows passes the
// threshold, drawing its noise from s.
func (sel *sqlSelection) selected(n int64, s *noise.Sampler) bool {
	if sel.Gaussian {
		return n*selectionUnits+s.DiscreteGaussianInt(sel.Scale) >= sel.Threshold
	}
	return n*selectionUnits+s.DiscreteLaplaceInt(sel.Scale) >= sel.Threshold
}

// runSelectedSQL runs the statement, selects the groups from the
// candidates it returns (in the order of their keys, so that the table's
// order depends only on the released set), and releases their
// aggregates. An engine failure, or a row that cannot be read, leaves no
// candidate: an empty table, which does not depend on the data.
func runSelectedSQL(ctx context.Context, d *Data, sp *sqlplan.Plan, rels []sqlRelease, cols, kinds []string, sel *sqlSelection, s *noise.Sampler) (any, error) {
	if d == nil || d.SQL == nil {
		return nil, errNoSQL
	}
	rows, err := querySQL(ctx, d, sp)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var cands []candidate
	if err == nil {
		cands = sqlCandidates(rows, sp)
	}
	var keyRows [][]any
	for _, c := range cands {
		if sel.selected(c.n, s) {
			keyRows = append(keyRows, c.keys)
		}
	}
	return releaseSQL(rows, err == nil && cands != nil, sp, rels, cols, kinds, keyRows, s)
}

// candidate is one group the statement returned: its key values (as the
// table holds them) and its row count.
type candidate struct {
	keys []any
	n    int64
	id   string
}

// sqlCandidates reads the candidate groups of the statement's rows,
// sorted by their keys; nil when a row cannot be read or a group is
// repeated.
func sqlCandidates(rows [][]any, sp *sqlplan.Plan) []candidate {
	st, err := sqlplan.Print(sp, sqlplan.DuckDB, "T")
	if err != nil {
		return nil
	}
	out := make([]candidate, 0, len(rows))
	seen := make(map[string]bool, len(rows))
	for _, row := range rows {
		if len(row) != len(st.Columns) {
			return nil
		}
		c := candidate{keys: make([]any, len(sp.Keys)), n: -1}
		units := int64(-1)
		skip := false
		for j, col := range st.Columns {
			switch col.Role {
			case sqlplan.RoleKey:
				v, ok := keyCell(row[j])
				if !ok {
					return nil
				}
				if f, isNum := v.(float64); isNum && (math.IsNaN(f) || math.IsInf(f, 0)) {
					// A non-finite key names no group (as a row
					// outside a public domain is in none): a function
					// of the key alone.
					skip = true
				}
				c.keys[col.Index] = v
			case sqlplan.RoleRows:
				x, ok := exactInt(row[j])
				if !ok || !x.IsInt64() || x.Int64() < 1 {
					return nil
				}
				c.n = x.Int64()
			case sqlplan.RoleUnits:
				// On user-level data the thresholded count is the
				// group's users (each adds 1 to at most max_groups
				// groups), not its rows.
				x, ok := exactInt(row[j])
				if !ok || !x.IsInt64() || x.Int64() < 1 {
					return nil
				}
				units = x.Int64()
			}
		}
		if units >= 0 {
			c.n = units
		}
		id, ok := groupKey(c.keys)
		if !ok || c.n < 1 || seen[id] {
			return nil
		}
		if skip {
			continue
		}
		seen[id], c.id = true, id
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i].keys, out[j].keys) })
	return out
}

// keyLess orders groups by their keys, the first key first: NULL, then
// numbers by value, then strings by their bytes.
func keyLess(a, b []any) bool {
	rank := func(v any) int {
		switch v.(type) {
		case nil:
			return 0
		case float64:
			return 1
		}
		return 2
	}
	for k := range a {
		ra, rb := rank(a[k]), rank(b[k])
		switch {
		case ra != rb:
			return ra < rb
		case ra == 1 && a[k].(float64) != b[k].(float64):
			return a[k].(float64) < b[k].(float64)
		case ra == 2 && a[k].(string) != b[k].(string):
			return a[k].(string) < b[k].(string)
		}
	}
	return false
}

// keyCell is a key value of the engine's result as a table cell: a
// string, a float64 (integers converted) or nil.
func keyCell(v any) (any, bool) {
	switch x := v.(type) {
	case nil, string:
		return x, true
	case float64:
		return x + 0, true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return nil, false
}
