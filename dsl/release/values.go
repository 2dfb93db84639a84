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
}
