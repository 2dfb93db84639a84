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
