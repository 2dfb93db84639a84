// Package linalg holds the linear algebra that the private PCA mechanisms
// (mechanisms/pca, mechanisms/federated, mechanisms/fedrep) share: the sums
// over clipped rows that are released with noise, with their rounding
// budgets, and the factorizations applied to the noisy releases.
//
// Sums (rows.go, stream.go): every sum that a mechanism noises is
// accumulated in the fixed-block pairwise order of rowpass.Pairwise, so
// every term passes through a public number h of roundings whatever the
// data, and the rounding of the sum can be charged as extra sensitivity
// with Excess (Casacuberta et al., arXiv 2207.10635, is the attack on
// running sums that this closes). Rows is the pull form over a stream of
// rows (a rows.Source, one scan per kernel, rows scaled by a public
// per-row rule recomputed as they arrive, so memory stays bounded by a
// chunk whatever the row count; PairwisePass is its driver); Stream is the push
// form for terms that arrive one at a time (a coordinator summing its
// users' messages) and gives bit-identical results.
//
// Factorizations (factor.go): a thin Householder QR whose R has a
// non-negative diagonal (so Q depends only on the span and orientation of
// its input), a variant that pads rank-deficient input, and top-k
// symmetric eigenvectors, all with the sign convention "largest-magnitude
// entry positive" where signs are free.
package linalg
