// Package synthdp makes differentially private synthetic tables with MST
// (McKenna, Miklau and Sheldon 2021): noisy one-way marginals of every
// column, a maximum spanning tree of column pairs chosen by the exponential
// mechanism, noisy two-way marginals on the tree's edges, and rows sampled
// from the tree-structured model those marginals define, all in zCDP.
//
// It is not mechanisms/synth, which generates public synthetic data sets
// from public parameters; this package reads private rows.
//
// As in mechanisms/regression, Plan fixes from public facts only (the
// columns' domains, ε, δ, the neighbouring relation) every sensitivity,
// noise scale, the selection's ε and the exact accounting event, and fails
// there with a fixed-text error; Run then cannot fail on the data: every
// value falls in one cell of its column's public domain. The marginals are
// integer counts, summed exactly. The package does no I/O; the noise
// sampler comes from the caller. Sampling rows from the fitted model is
// post-processing and uses a public seeded generator. The spec is
// docs/mechanisms.md, "Private synthetic data (MST)".
package synthdp
