// Package federated makes the data boundary of federated mechanisms explicit
// and implements distributed private sparse PCA (DPS-PCA) on top of it.
//
// # Providers, coordinator, transport
//
// A protocol is a sequence of rounds. In each round the coordinator sends one
// request (a plain struct holding public values only) to every provider, and
// every provider answers with one reply computed from the records it alone
// holds. The coordinator code is written against the [Transport] interface
// and never holds a provider: it sees the number of providers and the
// replies, nothing else. [Local] is the in-process transport; it answers the
// providers concurrently on all cores and hands the replies to the
// coordinator one by one in provider order, so that the aggregation (a sum
// in a fixed order) is deterministic. A network transport can replace it
// without touching the algorithms, because requests and replies are plain
// data.
//
// # DPS-PCA
//
// DPS-PCA (Ge, Wang, Wang, Liu, "Minimax-optimal privacy-preserving sparse
// PCA in distributed systems", AISTATS 2018; seed 003, reconstructed in
// federated.md §1) estimates a row-sparse top-k eigenspace from N providers.
// Each provider adds its own Gaussian noise to Σ̂_j·Q before the product
// leaves it, so the releases are sample-level DP even against an
// honest-but-curious coordinator. See dpspca.go.
//
// # Floating point
//
// Each provider's statistics (the diagonal, the principal block and the
// product with Q) are sums over its rows, accumulated in the fixed blocks
// and pairwise tree of rowpass.Pairwise (mechanisms/internal/linalg), so
// every term passes through a public number h of roundings (280 for the
// diagonal and the block, d + 280 for the product). The rounding of the
// sums of two neighbouring data sets then differs by at most
// 2·γ_h·MaxRows·r (Casacuberta et al., arXiv 2207.10635), which PCAPlan
// adds to each sensitivity (DiagRoundingExcess, BlockRoundingExcess,
// StepRoundingExcess) before calibrating the noise: +0.005% for the
// initialisation releases and +0.011% (d = 200) to +0.054% (d = 2000) for
// the power steps at k = 2. A provider holds at most MaxRows = 2^30 rows.
// The shared row kernels (linalg.Rows) scale each row into the unit ball
// before any product, so no row norm, however large, makes a term exceed
// the sensitivity.
//
// # Records as a stream
//
// A provider reads its records as a rows.Source (NewPCAProviderSource;
// NewPCAProvider wraps a matrix), one scan per reply, holding a chunk of
// rows at a time; its count n_j is the number of rows of the scan.
// RoundRobin deals one source to several providers by the public rule
// "row i to provider i mod N" without copying it.
//
// # Failing before the charge
//
// Every analyst parameter of PlanPCA has documented bounds (MaxIters,
// MinEps, MaxEps, MinDelta, MinInitFrac, MaxInitFrac, MaxBlockDim,
// MaxProductEntries) and every noise std is calibrated there with the
// error-returning noise.GaussianScaleChecked: a plan never panics, and
// inside the bounds a run on any providers' data returns a release
// (project issue 10).
package federated
