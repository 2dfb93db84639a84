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
package federated
