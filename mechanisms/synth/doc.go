// Package synth generates the public synthetic data sets of the seed papers'
// experiments: spiked covariance models, the APM Gaussian recipe, the DP-PCA
// Gaussian and Example 4.1 data, the Private FedRep regression data and the
// DPS-PCA sparse spiked model. Each generator returns the data (rows are
// individuals) together with the ground truth that error metrics need.
//
// The data are PUBLIC: they are drawn from math/rand/v2's PCG generator,
// seeded, so that tests and benchmarks are reproducible. This randomness is
// for data generation only and must never be used as privacy noise; privacy
// noise comes from mechanisms/noise.
//
// Determinism: rows are generated in fixed blocks of blockRows rows, each
// block from its own PCG stream derived from (seed, recipe, block index), so
// the output depends on the seed and the sizes only, never on the number of
// cores that filled it.
package synth
