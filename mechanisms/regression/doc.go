// Package regression fits private linear and logistic regression models on
// rows with public bounds: AdaSSP (Wang 2018) for linear regression, noisy
// full-batch gradient descent (Bassily, Smith and Thakurta 2014) for
// logistic regression, both calibrated in zCDP with the discrete Gaussian
// of mechanisms/noise.
//
// As in mechanisms/tabular, a Plan* function fixes from public facts only
// (the columns' bounds, ε, δ, the neighbouring relation, the iteration
// count) every sensitivity, noise scale and the exact accounting event, and
// fails there with a fixed-text error; a Run over a rows.Source then cannot
// fail on the data: values are clamped to their public bounds (a NaN counts
// as the bounds' midpoint), and the released sums are computed in the fixed
// pairwise order of mechanisms/internal/rowpass, whose rounding the plans
// charge as extra sensitivity. The package does no I/O; the noise sampler
// comes from the caller. The spec is docs/mechanisms.md, "Private linear and
// logistic regression".
package regression
