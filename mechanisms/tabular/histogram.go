package tabular

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// MaxBins is the most bins of a numeric histogram.
const MaxBins = 10000

// Errors of the binnings.
var (
	// ErrBins: a bin count outside 1..MaxBins.
	ErrBins = errors.New("bins must be an integer in 1..10000")
	// ErrNarrowBins: the bounds are too close for this many distinct
	// edges in float64.
	ErrNarrowBins = errors.New("the bounds are too close together (relative to their magnitude) for this many bins to have distinct edges: use fewer bins")
	// ErrDomain: an empty domain, or a category listed twice or named like
	// the bucket of values outside the domain.
	ErrDomain = errors.New("the categorical domain must be non-empty, without repeated categories or one named like the bucket of other values")
)

// Binning maps a value to a bin by a public rule.
type Binning interface {
	// Len is the number of bins.
	Len() int
	// Bin returns the bin of v, or −1 for a value counted in no bin.
	Bin(v float64) int
	// Keys names the bins, in order; the names are distinct.
	Keys() []string
}

// NumericBins are n equal-width bins over [lo, hi]: bin j is
// [e_j, e_{j+1}), the last one [e_{n−1}, hi] closed, with the edges
// e_j = lo + (hi − lo)·j/n (e_0 = lo, e_n = hi), computed once in float64
// by that formula. A value's bin is the last j with e_j ≤ v, so bins and
// their keys agree exactly; values below lo count in bin 0 and above hi in
// the last (the runs clamp them first anyway); NaN counts in no bin.
type NumericBins struct {
	edges []float64 // n+1 edges
}

// NewNumericBins returns n equal-width bins over [lo, hi]. It fails with
// ErrBounds, ErrBoundsRange, ErrBins or ErrNarrowBins.
func NewNumericBins(lo, hi float64, n int) (*NumericBins, error) {
	if err := checkBounds(lo, hi); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxBins {
		return nil, ErrBins
	}
	w := hi - lo // finite: |lo|, |hi| ≤ MaxBound
	edges := make([]float64, n+1)
	for j := range edges {
		// (w·j)/n rounds once more than w·(j/n) would, but gives the
		// shortest keys for round bounds: [0, 1] in 10 bins has the edge
		// 0.3, not 0.30000000000000004. Both are monotone in j.
		edges[j] = lo + w*float64(j)/float64(n)
	}
	edges[n] = hi
	for j := 1; j <= n; j++ {
		if !(edges[j] > edges[j-1]) {
			return nil, ErrNarrowBins
		}
	}
	return &NumericBins{edges: edges}, nil
}

// Len is the number of bins.
func (b *NumericBins) Len() int { return len(b.edges) - 1 }

// Edges returns the n+1 bin edges.
func (b *NumericBins) Edges() []float64 { return append([]float64(nil), b.edges...) }

// Bin returns the last j with e_j ≤ v, capped to the bins; −1 for NaN.
func (b *NumericBins) Bin(v float64) int {
	if v != v {
		return -1
	}
	n := b.Len()
	// the first edge above v, minus one
	j := sort.Search(n, func(j int) bool { return b.edges[j+1] > v })
	return min(j, n-1)
}

// Keys are "[e_j, e_{j+1})" and, for the last bin, "[e_{n−1}, hi]", with
// each edge in its shortest round-trip decimal form, so distinct edges
// give distinct keys.
func (b *NumericBins) Keys() []string {
	n := b.Len()
	keys := make([]string, n)
	for j := range keys {
		closing := ")"
		if j == n-1 {
			closing = "]"
		}
		keys[j] = "[" + fmtEdge(b.edges[j]) + ", " + fmtEdge(b.edges[j+1]) + closing
	}
	return keys
}

func fmtEdge(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// CategoryBins are one bin per category of a public domain, in order, then
// one for every other value. Values arrive as category indices: an integer
// i in [0, len(domain)) counts in bin i, anything else (len(domain), a
// NaN, a non-integer, a negative or a larger index) in the last bin.
//
// NewDomainBins gives the same bins without the last: values outside the
// domain then count in no bin.
type CategoryBins struct {
	keys []string
	// none: no bucket of other values (NewDomainBins).
	none bool
}

// NewCategoryBins returns the bins of domain and of the bucket named other.
func NewCategoryBins(domain []string, other string) (*CategoryBins, error) {
	if err := checkDomain(domain, map[string]bool{other: true}); err != nil {
		return nil, err
	}
	return &CategoryBins{keys: append(append([]string(nil), domain...), other)}, nil
}

// NewDomainBins returns the bins of domain alone: a value that is not a
// category index counts in no bin. Which rows count is a public rule (the
// row's own value against the public domain), so the sensitivities of
// CategoryBins hold unchanged.
func NewDomainBins(domain []string) (*CategoryBins, error) {
	if err := checkDomain(domain, nil); err != nil {
		return nil, err
	}
	return &CategoryBins{keys: append([]string(nil), domain...), none: true}, nil
}

// checkDomain refuses an empty or oversized domain and a repeated key
// (seen holds keys taken already).
func checkDomain(domain []string, seen map[string]bool) error {
	if len(domain) == 0 || len(domain) >= MaxCategories {
		return ErrDomain
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	for _, c := range domain {
		if seen[c] {
			return ErrDomain
		}
		seen[c] = true
	}
	return nil
}

// MaxCategories bounds a domain's size, so that every index is an exact
// float64 integer and the noise's coordinate count stays small.
const MaxCategories = 1 << 20

// Len is the number of categories, plus one for the bucket of other
// values.
func (c *CategoryBins) Len() int { return len(c.keys) }

// Bin returns the category index, or the last bin (−1 without one).
func (c *CategoryBins) Bin(v float64) int {
	other := len(c.keys) - 1
	if c.none {
		other = len(c.keys)
	}
	if !(v >= 0 && v < float64(other)) || v != math.Trunc(v) {
		if c.none {
			return -1
		}
		return other
	}
	return int(v)
}

// Keys are the categories, then the bucket of other values.
func (c *CategoryBins) Keys() []string { return append([]string(nil), c.keys...) }

// HistogramPlan is a planned noisy histogram. Every field is public.
type HistogramPlan struct {
	Bins       Binning
	Eps, Delta float64
	Neighbour  accounting.Neighbour
	// MaxGroups is the most bins one unit counts in: 1 on row-level data
	// (a row has one value), the max_groups keyword on user-level data,
	// where each user counts once in each of the first MaxGroups distinct
	// bins of their rows in row order (the rule of grouped counts).
	MaxGroups int
	// L1 and L2 are the sensitivities of the vector of counts, those of
	// grouped counts (GroupCountSensitivity) with k = MaxGroups: k and √k
	// under add-remove (a unit moves at most k counts by one), 2k and
	// √(2k) under replace-one (it leaves up to k bins and enters up to k
	// others), k and √k with a single bin.
	L1, L2 float64
	// Gaussian is set for δ > 0 (discrete Gaussian, ρ-zCDP with Rho);
	// otherwise the noise is discrete Laplace (pure ε).
	Gaussian bool
	Rho      float64
	// Scale is the Laplace b or the Gaussian σ of every count.
	Scale float64
	Event accounting.Event
}

// sqrt2Up is a float64 at or above √2.
var sqrt2Up = up(math.Sqrt2)

// PlanHistogram plans a noisy histogram over bins at (ε, δ) under nb in
// which one unit counts in at most maxGroups bins (1 for rows). It fails
// with ErrMaxGroups for maxGroups outside 1..bins.Len(), or as planNoise.
// An optional trailing Calibration (default CalibrateZCDP) chooses how
// δ > 0 is calibrated.
func PlanHistogram(bins Binning, maxGroups int, eps, delta float64, nb accounting.Neighbour, cal ...Calibration) (*HistogramPlan, error) {
	if maxGroups < 1 || maxGroups > bins.Len() {
		return nil, ErrMaxGroups
	}
	l1, l2 := GroupCountSensitivity(bins.Len(), maxGroups, nb, false)
	np, err := planNoise(l1, l2, eps, delta, bins.Len(), calibration(cal))
	if err != nil {
		return nil, err
	}
	return &HistogramPlan{Bins: bins, Eps: eps, Delta: delta, Neighbour: nb, MaxGroups: maxGroups, L1: l1, L2: l2,
		Gaussian: np.Gaussian, Rho: np.Rho, Scale: np.Scale, Event: np.Event}, nil
}

// Run releases the noisy counts of src's values per bin, rounded to
// integers, in the order of the bins' keys; with users set each user
// counts once in each of the first MaxGroups distinct bins of their rows
// in row order.
func (p *HistogramPlan) Run(ctx context.Context, src rows.Source, users bool, s *noise.Sampler) ([]float64, error) {
	counts, err := Counts(ctx, src, users, p.Bins, p.MaxGroups)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(counts))
	for i, c := range counts {
		out[i] = float64(c) // exact: at most 2^30
	}
	return p.Release(out, s), nil
}

// Release noises exact per-bin counts computed elsewhere (the data
// engine's, by the bins' and MaxGroups' rules) in place and returns them
// rounded to integers, as Run.
func (p *HistogramPlan) Release(out []float64, s *noise.Sampler) []float64 {
	noisePlan{Gaussian: p.Gaussian, Rho: p.Rho, Scale: p.Scale, Event: p.Event}.add(s, out)
	for i, v := range out {
		out[i] = math.Round(v) + 0 // + 0 turns a −0 into 0
	}
	return out
}

// Counts returns the exact count per bin of the one-column source src: of
// rows, or with users set of users, each user once in each of the first
// maxGroups distinct bins of their rows in row order (rows in no bin are
// skipped; maxGroups is unused for rows). Users go through grouped counts'
// code (GroupPlan.Totals), so a histogram and a count by a categorical
// column limit a user's contributions by the one rule. Which bins a user
// keeps depends only on that user's own rows and their relative order,
// which adding, removing or replacing another user leaves as it is, so
// the bound of k bins per user is all the sensitivity needs. Memory: on
// user-level data one int32 per user and about 40 bytes per (user, bin).
func Counts(ctx context.Context, src rows.Source, users bool, bins Binning, maxGroups int) ([]int64, error) {
	counts := make([]int64, bins.Len())
	if users {
		gp := &GroupPlan{GroupSpec: GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: maxGroups}, countNoised: true}
		c, _, err := gp.Totals(ctx, src, true)
		if err != nil {
			return nil, err
		}
		for i, v := range c {
			counts[i] = int64(v) // exact: at most 2^30
		}
		return counts, nil
	}
	err := forEachValue(ctx, src, false, func(v float64, _ int32) {
		if j := bins.Bin(v); j >= 0 {
			counts[j]++
		}
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}
