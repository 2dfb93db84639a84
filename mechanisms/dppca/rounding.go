// Floating-point soundness of the noised sums over records (Casacuberta,
// Shoemate, Vadhan and Wagaman, "Widespread Underestimation of
// Sensitivity in Differentially Private Libraries and How to Fix It",
// arXiv 2207.10635), for Eq. 7 (spec dppca.md §3) and Algorithm 5 (§6).

package dppca

import (
	"math"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
)

// Two releases of this package are noised sums over records: private
// Oja's clipped gradient sum (Eq. 7) and Algorithm 5's truncated mean. A
// running float64 sum rounds every partial sum, so replacing one record
// changes the rounding of every later partial sum, and the computed sums of
// two neighbours can differ by about Δ + 2n²·2^-53·(term size) rather than
// Δ. Both sums therefore use rowpass.Pairwise (fixed blocks of
// rowpass.BlockRows records, blocks combined pairwise), which bounds the
// roundings on every term's path by a public h, and the noise is
// calibrated to Δ plus the excess 2·γ_h·Σ_i‖M_i‖₂ below
// (linalg.ExcessOver).
//
// Argument (as in mechanisms/pca). Let t_i be the reference term of record
// i (a real vector computed from the record alone, so neighbours differ in
// one t_i) and M_i ≥ |t_i| entrywise its majorant. If every term carries at
// most h factors (1 + δ), |δ| ≤ 2^-53, on its way to the result, every
// computed entry F_k is within γ_h·Σ_i M_ik of Σ_i t_ik (Higham, Accuracy
// and Stability of Numerical Algorithms, §3.1 and §4.2). By Minkowski's
// inequality the vector of these bounds has ℓ2 norm ≤ γ_h·Σ_i‖M_i‖₂, so
// for neighbours D, D′
//
//	‖F(D) − F(D′)‖₂ ≤ ‖Σ t(D) − Σ t(D′)‖₂ + 2·γ_h·max_D Σ_i‖M_i‖₂ ≤ Δ + excess.
//
// The remaining roundings (the computed norm in a clip factor, the √d and
// 1/m in Δ) are relative errors of order d·2^-53, absorbed by
// sensitivitySlack.
//
// Eq. 7: t_i = c_i·g_i, the exact product of the computed clip factor and
// the computed gradient, ‖t_i‖₂ ≤ Beta; forming c_i·g_ik and adding it cost
// ojaRoundings. A minibatch holds B = ⌊records/T⌋ ≤ ⌊MaxRows/T⌋ records
// (T public, MaxRows enforced before any value is read), so the excess is
// 2·γ_h·⌊MaxRows/T⌋·Beta, a constant of the plan.
//
// Algorithm 5: t_i = clamp(fl(g_i − ḡ), −r, r) coordinate-wise: the
// truncated record in coordinates centred at the (DP) centres ḡ, computed
// exactly from the record, so ‖t_i‖₂ ≤ r√d and the exact sensitivity of
// the mean is 2r√d/m with no rounding in it (clamping g_i to
// [fl(ḡ − r), fl(ḡ + r)] instead would widen the interval by up to an ulp
// of ḡ, which exceeds r when |ḡ| ≫ r). The m terms are summed with
// Pairwise and divided by m (meanRoundings), the mean gets the noise, and
// adding ḡ back is post-processing. The excess on the mean is
// 2·γ_h·(m·r√d)/m = 2·γ_h·r√d for every m, a fraction γ_h·m of Δ.
//
// Algorithm 4 needs no charge: its histogram counts the bins of the group
// estimates λ^(j), each a fixed computation (pair differences, Syrk,
// EigenSym) on the records of group j alone, whatever the worker count.
// Replacing one record changes at most one group's records, hence at most
// one λ^(j), hence moves at most one unit of count between two bins:
// rounding or not, the ℓ1 distance of the counts is ≤ 2, the histogram's
// sensitivity. The same holds for Algorithm 5's coordinate histograms
// (each record's bin is computed from that record and the public or DP
// τ), and the counts are summed exactly in integers.

// MaxRows is the largest number of rows a run accepts, 2^30
// (rowpass.MaxRows). The rounding of the noised sums is charged for every
// batch that fits in it, so a larger data set would void the guarantee;
// the data registry refuses such files, and a run on more rows fails
// before reading any value.
const MaxRows = rowpass.MaxRows

// Rounding budgets: the most roundings a term of a noised sum passes
// through, relative to its reference value, on top of the block-and-tree
// sum linalg.SumRoundings shared with the other mechanisms.
const (
	// ojaRoundings: the product c_i·g_ik (one rounding, none if the
	// compiler fuses it into the addition), then linalg.SumRoundings.
	ojaRoundings = 1 + linalg.SumRoundings
	// meanRoundings: the centred truncated terms are exact;
	// linalg.SumRoundings, then the division of the sum by m (Higham
	// Lemma 3.3: γ_h + u + γ_h·u ≤ γ_{h+1}).
	meanRoundings = linalg.SumRoundings + 1
)

// ojaExcess is the rounding excess of Eq. 7's clipped sum over a minibatch
// of at most ⌊MaxRows/steps⌋ records, each clipped to ℓ2 norm beta.
func ojaExcess(steps int, beta float64) float64 {
	return linalg.ExcessOver(ojaRoundings, float64(MaxRows/steps), beta)
}

// meanExcess is the rounding excess of Algorithm 5's mean per unit of the
// truncation radius r, for d coordinates: 2·γ_h·√d (m cancels, see above).
func meanExcess(d int) float64 {
	return linalg.ExcessOver(meanRoundings, 1, math.Sqrt(float64(d)))
}
