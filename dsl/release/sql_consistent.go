package release

// consistent=true in private_sql: a COUNT(*) or SUM column grouped by
// keys with public domains releases the total over the groups as one more
// coordinate of the same noisy vector, inside the same charge, and shows
// parts fitted to it by least squares (consistentCounts, consistentSums),
// as private_count and private_sum do with by=.
//
// Sensitivities of (v_1, …, v_G, T), one row in at most one group (the
// row may also fall out of every group: a WHERE, a key outside its
// domain, a NULL value):
//   - COUNT(*): adding or removing a row moves one count and T by one;
//     replacing it moves two counts (T stays) or one count and T: ℓ1 = 2,
//     ℓ2 = √2 under both relations;
//   - SUM: tabular.GroupSumTotalSensitivity over the grid's range (whose
//     replace-one values are at least add-remove's, so a row leaving the
//     selection is covered). The total is the float64 of the exact sum of
//     the groups' float64 sums (big.Float): at most 2·RoundingExcess from
//     the exact total on each data set, so 4·RoundingExcess more between
//     neighbours is charged on top of the groups' own.
//
// Not with DP partition selection: the released groups are then chosen by
// the data, and a total over the rows would count rows of groups not
// released (and a total over the released ones only is a data-dependent
// sum), so the parts could not be fitted to a total with a fixed
// sensitivity; nor on user-level data (COUNT(DISTINCT unit) per group: a
// user is in many groups, the total of the groups' users is not the number
// of users).

import (
	"math"
	"math/big"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// sqlConsistent applies consistent=true to the plan's releases: each
// COUNT(*) and SUM takes the total (rels[i].total), its sensitivities and
// noise scale recomputed over groups + 1 coordinates. It refuses, before
// the charge, a call it cannot apply to, and returns the plan note's words
// for the rule ("" without consistent=true).
func sqlConsistent(a *Args, rels []sqlRelease, selecting, users bool, groups int, nb accounting.Neighbour, eps, rho float64, gaussian bool) (string, error) {
	if !optBool(a, "consistent", false) {
		return "", nil
	}
	fn := FnSQL
	switch {
	case selecting:
		return "", Errorf(NameArgumentError, "%s: consistent=true needs keys with public domains: with DP partition selection the released groups are chosen by the data, so no total has a fixed sensitivity that their parts could add up to; give the keys' values with keys=", fn)
	case users:
		return "", Errorf(NameArgumentError, "%s: consistent=true is not available on user-level data yet: a user in max_groups groups moves the total and several parts at once, a sensitivity the released total does not have here (a user is in many groups, so neither do the groups' numbers of users in COUNT(DISTINCT …)); leave consistent out, or add the parts yourself", fn)
	case groups < 2:
		return "", Errorf(NameArgumentError, "%s: consistent=true makes the groups' COUNT(*) and SUM values add up to their total: it needs GROUP BY keys with at least two groups", fn)
	}
	found := false
	for i := range rels {
		r := &rels[i]
		if r.agg.Kind != sqlplan.Count && r.agg.Kind != sqlplan.Sum {
			continue
		}
		found = true
		v := &r.vecs[0]
		if r.agg.Kind == sqlplan.Count {
			v.l1, v.l2 = 2, math.Nextafter(math.Sqrt2, 2)
		} else {
			v.l1, v.l2 = tabular.GroupSumTotalSensitivity(r.grid.Low(), r.grid.High(), nb)
			v.excess += 4 * sqlplan.RoundingExcess(r.grid.Magnitude())
		}
		var err error
		if gaussian {
			v.scale, err = noise.GaussianScaleChecked(upward(v.l2+v.excess), 1/math.Sqrt(2*rho*v.share), groups+1)
		} else {
			v.scale, err = noise.LaplaceScaleChecked(upward(v.l1+v.excess), eps*v.share, groups+1)
		}
		if err != nil {
			return "", Errorf(NameArgumentError, "%s: %s: the noise of its %s and their total cannot be calibrated (%v); check eps, delta and the bounds", fn, r.agg.Name, v.what, err)
		}
		r.total, r.groups = true, groups
		v.what += " and its total"
	}
	if !found {
		return "", Errorf(NameArgumentError, "%s: consistent=true makes COUNT(*) and SUM columns add up to their total, and the query has neither", fn)
	}
	return "; consistent=true (post-processing): each COUNT(*) and SUM releases its total over the groups in the same vector, and the parts shown are its least-squares fit to it (counts then nonnegative if asked and integers adding up to the rounded total; sums nonnegative with the same total when the bounds are ≥ 0)", nil
}

// withTotal appends to a release's exact vector (float64s of exact
// integers, one per group) their total: exactly summed, rounded once.
func withTotal(x []float64) []float64 {
	t := new(big.Float).SetPrec(2048)
	for _, v := range x {
		t.Add(t, new(big.Float).SetFloat64(v))
	}
	f, _ := t.Float64()
	return append(x, f)
}

// fitTotal turns a release's noisy vector with its total into the G
// fitted parts, and the least-squares fits their intervals are around
// (consistentGroups): the parts are integers adding up to the rounded
// total for a COUNT (nonnegative if asked), least squares for a SUM
// (nonnegative when the bounds are ≥ 0).
func fitTotal(r sqlRelease, y []float64) [][]float64 {
	shown, fits := consistentGroups(true, r.agg.Kind != sqlplan.Count, y, r.agg.Lo >= 0, r.nonnegative)
	return [][]float64{shown, fits}
}
