// Package tabular holds the mechanisms of the DSL's column analyses: a
// bounded sum, a histogram over a public domain and a quantile, each of one
// column of a table, and counts, sums and means per group of a categorical
// column, under row-level or user-level differential privacy.
//
// Every mechanism comes as a Plan* function, which fixes from public
// parameters only (the column's public bounds or domain, ε, δ, the
// neighbouring relation) the sensitivities, the noise scale and the exact
// accounting event, and fails there with a fixed-text error if anything is
// out of range; and a Run method over a rows.Source of the one column,
// which after that cannot fail on the data: empty data, equal values, NaN
// and ±Inf are handled by the public rules below. Runs read the rows once
// and use the noise of mechanisms/noise only.
//
// # Public rules applied to the values
//
// A value is clamped to the column's public bounds [lo, hi]; a NaN counts as
// 0 clamped to the bounds ([Clamp]). On user-level data (one privacy unit
// holds several rows) each user contributes one value to a sum or a
// quantile, the mean of the user's clamped values (clamped again, so that
// rounding cannot leave the bounds), and to a histogram one count in each
// of the first MaxGroups (default 1) distinct bins of the user's rows in
// the data's row order, the rule of grouped counts.
//
// # Sum (Dwork, McSherry, Nissim and Smith 2006; Canonne, Kamath and Steinke 2020)
//
// The sum of n values in [lo, hi] changes by at most max(|lo|, |hi|) when a
// unit is added or removed and by at most hi − lo when one is replaced. The
// sum is computed in the fixed pairwise order of mechanisms/internal/rowpass
// (blocks of 256 rows, a binary tree of at most 22 levels for up to
// MaxRows = 2^30 terms), so the computed sums of two neighbouring data sets
// differ by at most the sensitivity plus 2·γ_h·2^30·max(|lo|, |hi|) with
// h = 255 + 22 roundings (Higham's γ_h = h·u/(1 − h·u)): the excess is
// added to the sensitivity before calibration, whatever n is. The noisy
// release is the noise package's: the sum is rounded onto the power-of-two
// lattice of the noise scale and discrete Laplace (δ = 0: pure ε-DP) or
// discrete Gaussian (δ > 0: ρ-zCDP with ρ = RhoForTarget(ε, δ)) noise on
// that lattice is added, its rounding charged as the slack of LaplaceScale
// or GaussianScale. No floating-point sample ever touches the private sum.
//
// # Histogram
//
// One count per bin of a public domain, all released, so the keys never
// depend on the data. Adding or removing a unit moves one count by one
// (ℓ1 = ℓ2 = 1); replacing one moves two counts by one each (ℓ1 = 2,
// ℓ2 = √2; one count with a single bin). A user counted in up to k =
// MaxGroups bins moves up to k counts (2k when replaced): the sensitivities
// are grouped counts' ([GroupCountSensitivity]). Counts get discrete
// Laplace or discrete Gaussian noise as the sum does and are rounded to
// integers (post-processing).
//
// # Grouped counts, sums and means over public keys
//
// [PlanGroups] releases one value per group of a public grouping (the
// categories of a categorical column and "other"): every key is released,
// so no key depends on the data. A row is in exactly one group; on
// user-level data a user contributes to the first MaxGroups = k distinct
// groups of their rows in row order (a public rule; rows in further
// groups are dropped), once per group, with the mean of their clamped
// values there (clamped again) for sums. So one unit touches at most k
// coordinates of the vector of counts or of sums, and with m =
// max(|lo|, |hi|):
//
//   - counts: add-remove moves at most k counts by one (ℓ1 = k, ℓ2 = √k);
//     replace-one takes the unit out of its groups A and into B, |A|, |B| ≤ k,
//     and only A △ B move (ℓ1 = 2k, ℓ2 = √(2k));
//   - sums: add-remove moves at most k sums by at most m (ℓ1 = k·m, ℓ2 =
//     √k·m); replace-one moves a sum of A ∩ B by at most hi − lo and one of
//     A △ B by at most m, so with c = |A ∩ B| the change is at most
//     c·(hi − lo) + 2(k − c)·m in ℓ1 and √(c·(hi − lo)² + 2(k − c)·m²) in
//     ℓ2, linear in c and largest at an end: ℓ1 = 2k·m (hi − lo ≤ 2m), ℓ2 =
//     √k·max(hi − lo, √2·m). For k = 1: a row that changes value in its
//     group (hi − lo) or moves to another group (|v| + |v′| ≤ 2m in ℓ1,
//     √(v² + v′²) ≤ √2·m in ℓ2);
//   - with a single group (no grouping column: the bounded mean of one
//     column) nothing can move between groups: the sum's sensitivities are
//     private_sum's and the count's is 1 under both relations (under
//     replace-one the count does not move but is noised at 1, so that n is
//     never released exactly).
//
// Row-level sums are accumulated in the pairwise order of rowpass over the
// rows with one accumulator holding a sum and a count per group; the
// rounding of sum g is at most γ_h·Σ_{rows in g}|v| (adding the zeros of
// other groups' rows is exact), so the error vector's ℓ1 (hence ℓ2) norm
// is at most γ_h·2^30·m and the excess SumExcess(m) of the one-column sum
// covers the whole vector. User-level sums are the same pairwise sum over
// the (user, group) terms, of which there are at most as many as rows.
// Counts are exact integers. Noise as for the sum, one coordinate per
// group: discrete Laplace of scale ℓ1/ε (δ = 0) or discrete Gaussian of
// std ℓ2/√(2ρ) (δ > 0), the lattice slack over all groups charged; counts
// are rounded to integers. A mean releases noisy sum / max(noisy count, 1)
// per group (post-processing, not clamped to the bounds), with Gaussian
// noise on both: CountShare of ρ = RhoForTarget(ε, δ) on the counts and
// the rest on the sums, each share lowered by MeanRoundDown so that the two
// never exceed the charged ρ (zCDP composition); with δ = 0 the noise is
// discrete Laplace and the shares are of ε (pure ε, sequential
// composition). AddRemoveToo takes the
// larger of the two relations' sensitivities, for subsets of replace-one
// data; it changes only the one-group sum (otherwise replace-one's are
// already the larger).
//
// # Quantile (McSherry and Talwar 2007; Smith 2011; Ilvento 2020)
//
// The exponential mechanism over a public grid G of the bounds: the K+1
// points lo + k·(hi − lo)/K (K a power of two, at most 2^20). A grid point g
// has rank r(g) = #{values ≤ g}, and its loss D(g) = ⌈|r(g) − q·n|⌉, an
// integer. For neighbouring data sets D changes by at most 1 at every g:
// adding a value moves r(g) by 0 or 1 and q·n by q, so |r − q·n| moves by at
// most max(q, 1 − q) < 1 (replacing one moves r(g) by at most 1 and n not
// at all), and ⌈·⌉ turns a change below 1 into at most 1. n is private; it
// enters only this loss. The grid points of one rank form the part of the
// grid inside the interval [x_(i), x_(i+1)) between consecutive sorted
// values, so sampling a grid point is the standard interval construction
// with the uniform choice inside the interval made on the public grid.
//
// A grid point is drawn with probability f(D(g))/Σ f over a weight
// function f that needs no floating-point arithmetic, in the spirit of
// Ilvento's base-2 mechanism: f(0) = 1 and f(d+1) = f(d)/R rounded up to a
// 64-bit mantissa, in integer arithmetic, where R ≤ e^(ε/2) is a
// rounded-down partial sum of the exponential series of ε/2 (R = 1, the
// uniform grid, when ε is too small to resolve). So f is non-increasing and
// f(d)/f(d+1) ≤ R for every d: for neighbours, f(D(g))/f(D'(g)) ≤ R at
// every g and the normalisers differ by a factor R at most, so every
// probability moves by at most R² ≤ e^ε: pure ε-DP, for the function the
// sampler actually uses. The sampler is exact: every weight is a dyadic
// rational; those within about 2^-85 of the best present weight are
// scaled by a power of two to exact integers, and the (at most 2^21) grid
// points below are proposed at a power of two between 2^-85 and 2^-84 of
// the best and kept with probability weight/proposal, decided by comparing
// fair random bits with the binary expansion of that dyadic ratio
// (rejection sampling, so the output distribution is exactly the
// mechanism's). The proposal is drawn
// as a uniform integer below the exact total weight (math/big), from fair
// bits of the noise package's exact Bernoulli(1/2); a proposal is
// rejected with probability below 2^-63.
//
// The run does not sort: it bins each clamped value on the grid as it reads
// it (a histogram of K+1 counts, whose prefix sums are the ranks) and walks
// the grid's runs of equal rank from the one nearest q·n outwards, the
// same levels in the same order as the sorted values gave.
//
// Memory: a quantile holds its grid's histogram and levels, at most
// QuantileBytesPerPoint per grid point whatever n; a sum and a histogram of
// rows hold a bounded chunk of rows. On user-level data a sum and a
// quantile hold two float64 per user for at most UserWindow users at a
// time (rows.UserMeans: one pass over the rows per window, the same
// release for every window); a histogram or a grouped release of users
// holds one int32 per user and one term per (user, group) pair.
package tabular
