package federated

// Sparsity steps of the DPS-PCA coordinator: row truncation and top-s
// coordinate selection. The factorizations it shares with mechanisms/pca and
// mechanisms/fedrep are in mechanisms/internal/linalg.

import (
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TruncateRows keeps the s rows of v with the largest Euclidean norms and
// zeroes the others, in place (ties go to the lower row index). It returns
// the kept row indices in increasing order. s ≥ number of rows keeps all.
func TruncateRows(v *mat.Dense, s int) []int {
	d, _ := v.Dims()
	idx := make([]int, d)
	for i := range d {
		idx[i] = i
	}
	if s >= d {
		return idx
	}
	norms := make([]float64, d)
	for i := range d {
		norms[i] = floats.Norm(v.RawRowView(i), 2)
	}
	sort.SliceStable(idx, func(a, b int) bool { return norms[idx[a]] > norms[idx[b]] })
	keep := append([]int(nil), idx[:max(s, 0)]...)
	sort.Ints(keep)
	kept := make([]bool, d)
	for _, i := range keep {
		kept[i] = true
	}
	for i := range d {
		if !kept[i] {
			row := v.RawRowView(i)
			for j := range row {
				row[j] = 0
			}
		}
	}
	return keep
}

// TopIndices returns the indices of the s largest entries of x in increasing
// index order (ties go to the lower index).
func TopIndices(x []float64, s int) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
	keep := append([]int(nil), idx[:min(max(s, 0), len(x))]...)
	sort.Ints(keep)
	return keep
}
