package release

// Several QUANTILE/MEDIAN aggregates of one column in private_sql: where
// it is more accurate (tabular.JointWins: row-level data under
// add-remove, three or more distinct levels of the same argument and
// bounds), they are released together by recursive splitting
// (tabular.JointQuantilePlan; Kaplan, Schnapp and Stemmer, ICML 2022)
// from one histogram per group, which the statement computes once
// (sqlplan.Aggregate.SharedHist). Elsewhere each quantile keeps its own
// exponential mechanism.
//
// Budget. The quantiles' shares are pooled: S = Σ share_i of the call's ε
// (Laplace) or ρ (Gaussian). On row-level data under add-remove a row is
// in one group, and in one draw of each of the L = ⌈log2(m + 1)⌉ depths
// of that group's recursion (the intervals of a depth hold disjoint
// rows), each draw's loss moving by at most 1: the release is (L·ε_d)-DP
// and L·ε_d²/8-zCDP (each depth ε_d-bounded range) for a per-draw ε_d.
// So ε_d = S·ε/L (pure) or √(8·S·ρ/L) (zCDP), where m independent draws
// get share_i·ε or √(8·share_i·ρ) each.
//
// Error. A level's target within its interval (a, b] is a + q′·(b − a)
// in ranks, q′ = (q − q_a)/(q_b − q_a); its distance to q·n is
// (1 − q′)·e_a + q′·e_b, the endpoints' own errors, so a level's rank
// error is at most the sum of the draws' errors on its path from the
// first depth: jointRankModel.

import (
	"fmt"
	"math"
	"slices"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// sqlJoint is a joint release of quantiles of one column: members are
// indices of the plan's releases, in increasing q.
type sqlJoint struct {
	members []int
	jp      *tabular.JointQuantilePlan
}

// planSQLJoints groups the plan's quantiles by argument and bounds and
// gives each group where the joint release wins its joint plan: each
// member's qp becomes the per-draw mechanism (for the receipt and the
// error model), its joint field the shared plan, and every member but the
// first reads the first's histogram (SharedHist, in sp for the printer).
func planSQLJoints(sp *sqlplan.Plan, rels []sqlRelease, nb accounting.Neighbour, eps, rho float64, gaussian bool) error {
	if sp.Bound != nil {
		return nil // user-level data: a user's rows can span a depth's intervals
	}
	done := make([]bool, len(rels))
	for i := range rels {
		if rels[i].qp == nil || done[i] {
			continue
		}
		members := []int{i}
		for j := i + 1; j < len(rels); j++ {
			a, b := rels[i].agg, rels[j].agg
			if rels[j].qp != nil && !done[j] && sqlplan.Equal(a.Arg, b.Arg) && a.Lo == b.Lo && a.Hi == b.Hi {
				members = append(members, j)
			}
		}
		for _, j := range members {
			done[j] = true
		}
		slices.SortStableFunc(members, func(x, y int) int {
			switch qx, qy := rels[x].agg.Q, rels[y].agg.Q; {
			case qx < qy:
				return -1
			case qx > qy:
				return 1
			}
			return 0
		})
		qs := make([]float64, len(members))
		share := 0.0
		distinct := true
		for k, j := range members {
			qs[k] = rels[j].agg.Q
			share += rels[j].share
			distinct = distinct && (k == 0 || qs[k] != qs[k-1])
		}
		if !distinct || !tabular.JointWins(len(members), nb == accounting.AddRemove) {
			continue
		}
		a := rels[members[0]].agg
		jp, err := tabular.PlanJointQuantiles(a.Lo, a.Hi, qs, sqlJointEps(share, len(members), eps, rho, gaussian))
		if err != nil {
			return Errorf(NameArgumentError, "%s: %s: %v", FnSQL, a.Name, err)
		}
		joint := &sqlJoint{members: members, jp: jp}
		first := slices.Min(members)
		for k, j := range members {
			// The per-draw mechanism on the same grid: the receipt's ε and
			// the error model's weights.
			qp, err := tabular.PlanQuantile(a.Lo, a.Hi, qs[k], jp.Eps)
			if err != nil {
				return Errorf(NameArgumentError, "%s: %s: %v", FnSQL, rels[j].agg.Name, err)
			}
			rels[j].qp, rels[j].joint = qp, joint
			if j != first {
				sp.Aggregates[j].SharedHist = first + 1
				rels[j].agg.SharedHist = first + 1
			}
		}
	}
	return nil
}

// sqlJointEps is the per-draw ε of a joint release of m quantiles with a
// pooled share of the call's ε (Laplace) or ρ (Gaussian), on row-level
// data under add-remove: L = ⌈log2(m + 1)⌉ depths, one draw of each a row
// enters, so S·ε/L (pure) or √(8·S·ρ/L) (zCDP: ε-bounded range costs
// ε²/8).
func sqlJointEps(share float64, m int, eps, rho float64, gaussian bool) float64 {
	l := float64(tabular.JointDepth(m))
	if gaussian {
		return math.Sqrt(8 * rho * share / l)
	}
	return eps * share / l
}

// release draws the joint release for every group from the first
// member's histograms and sets every member's values; called for each
// member, it draws once (the first call) and returns true for the
// others.
func (j *sqlJoint) release(hists [][][]binCount, vals [][]float64, groups int, s *noise.Sampler) error {
	first := slices.Min(j.members)
	if vals[first] != nil {
		return nil
	}
	for _, i := range j.members {
		vals[i] = make([]float64, groups)
	}
	buf := make([]int32, j.jp.Base.Grid+1)
	for g := range groups {
		clear(buf)
		if hists[first] != nil {
			for _, bc := range hists[first][g] {
				buf[bc.bin] = bc.count
			}
		}
		v, err := j.jp.SampleHistogram(buf, s)
		if err != nil {
			return err
		}
		for k, i := range j.members {
			vals[i][g] = v[k]
		}
	}
	return nil
}

// explain is the receipt's note on a member of a joint release ("" for
// an independent quantile).
func (j *sqlJoint) explain() string {
	if j == nil {
		return ""
	}
	return fmt.Sprintf("; released jointly with the %d quantiles of its column by recursive splitting (%d depths, one histogram; per draw ε=%.4g; its rank bound sums the draws' on its path)", len(j.members), j.jp.Depth, j.jp.Eps)
}

// rankModel is the member's error model: the exponential mechanism's,
// with the depths its rank bound adds up (ErrorModel.Depth).
func (j *sqlJoint) rankModel(qp *tabular.QuantilePlan) ErrorModel {
	m := ErrorModel{Kind: ErrExponential, Candidates: qp.Grid + 1, WeightRatio: qp.Ratio(), Depth: j.jp.Depth}
	m.RankError95, _ = m.RankError(DefaultLevel)
	return m
}
