package release

import "gonum.org/v1/gonum/mat"

// PCA is a private_pca release.
type PCA struct {
	// Components has orthonormal columns (d×k), the leading one first.
	Components *mat.Dense
	// Values are private eigenvalue estimates, when the method makes them.
	Values []float64
	// Support lists the coordinates the federated method's estimate uses.
	Support []int
	// Right holds the right singular vectors (n×k) of a rectangular
	// matrix dataset, whose Components are then the left ones (matrix.go).
	Right *mat.Dense
	// Gap is the κ guess the exponential mechanism selected under
	// gap="auto" (a DP output); 0 otherwise.
	Gap float64
	// Center is the private mean the rows were centred by (center=true),
	// in the data's units; nil otherwise.
	Center []float64
	// CenterSums and CenterCount are the noisy sums of the clipped rows
	// and the noisy row count that Center was computed from, in units of
	// the clip (rows scaled to norm ≤ 1), released with it: the mean's
	// interval needs both (CenterInterval). Nil and 0 when uncentred, and
	// in centred releases stored before the mean carried its error.
	CenterSums  []float64
	CenterCount float64
	// TotalVariance is the private estimate of the estimand's trace, the
	// trace of gauss's noisy matrix; 0 when the method releases none.
	TotalVariance float64
}

// VarianceRatios returns each component's share Values[j]/TotalVariance
// of the private total variance estimate (post-processing), or nil when
// the method releases no total or it is not positive.
func (v *PCA) VarianceRatios() []float64 {
	if v == nil || !(v.TotalVariance > 0) || v.Values == nil {
		return nil
	}
	out := make([]float64, len(v.Values))
	for j, x := range v.Values {
		out[j] = x / v.TotalVariance
	}
	return out
}

// LowRank is a private_low_rank release (matrix.go): the private
// rank-≤2k approximation Matrix of a matrix dataset (for a rectangular
// M, of M itself), with k components and values derived from it.
type LowRank struct {
	Components *mat.Dense
	Right      *mat.Dense
	Values     []float64
	Matrix     *mat.Dense
}

// FedRep is a private_fedrep release: the shared representation.
type FedRep struct {
	U *mat.Dense
}

// Count is a private_count release.
type Count struct {
	Value float64
}

// Mean is a private_mean release, one value per column.
type Mean struct {
	Values []float64
	// Sums and Counts are the noisy sums and counts the values divide
	// (one count, or one per column), released with them: the mean's
	// confidence interval needs both (ErrorModel.RatioInterval). They are
	// nil in releases stored before means carried their error.
	Sums, Counts []float64
}
