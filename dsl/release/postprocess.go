package release

// The analyst's free post-processing of the tabular calls' noisy values
// (docs/dsl.md, "Post-processing"): the keywords nonnegative, clamp and
// other. Each is a function of the released values and of public
// parameters alone, so by the post-processing property it changes neither
// the privacy guarantee nor the cost; the receipt's note names the rule.

import (
	"fmt"
	"math"
	"sort"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// postRule is one call's post-processing of its noisy values.
type postRule struct {
	// nonnegative raises negative noisy counts to 0.
	nonnegative bool
	// clamp moves noisy means outside [lo, hi] to the nearer bound.
	clamp  bool
	lo, hi float64
}

// optBool reads a boolean keyword that callers building Args by hand may
// leave out.
func optBool(a *Args, name string, def bool) bool {
	if v, ok := a.Vals[name].(bool); ok {
		return v
	}
	return def
}

// countRule is the post-processing of a call releasing counts.
func countRule(a *Args) postRule { return postRule{nonnegative: optBool(a, "nonnegative", true)} }

// meanRule is the post-processing of a call releasing means of a column
// with public bounds [lo, hi].
func meanRule(a *Args, lo, hi float64) postRule {
	return postRule{clamp: optBool(a, "clamp", true), lo: lo, hi: hi}
}

// apply post-processes vals in place.
func (r postRule) apply(vals []float64) {
	for i, v := range vals {
		if r.nonnegative && v < 0 {
			vals[i] = 0
		}
		if r.clamp {
			// math.Max keeps a NaN (never released today): the rule does
			// not invent a value.
			vals[i] = math.Min(math.Max(v, r.lo), r.hi)
		}
	}
}

// note is the receipt's words for the rule ("" for none).
func (r postRule) note() string {
	switch {
	case r.nonnegative:
		return "; post-processing (nonnegative=true, no cost): a negative noisy count is shown as 0 (nonnegative=false shows the raw, unbiased counts)"
	case r.clamp:
		return fmt.Sprintf("; post-processing (clamp=true, no cost): a noisy mean outside [%v, %v] is shown at the nearer bound (clamp=false shows the raw ratio)", r.lo, r.hi)
	}
	return ""
}

// meanWords says how a mean is formed under rule r.
func (r postRule) meanWords() string {
	if r.clamp {
		return "clamped to the bounds"
	}
	return "not clamped to the bounds"
}

// categoryBins are the bins of a categorical column's public domain with
// the bucket "other" for every other value, or without it when the call
// gives other=false: those rows then count in no bin, by a public rule on
// the row's own value. what describes the keys for a note.
func categoryBins(a *Args, domain []string) (bins *tabular.CategoryBins, what string, err error) {
	if optBool(a, "other", true) {
		bins, err = tabular.NewCategoryBins(domain, ledger.OtherCategory)
		return bins, fmt.Sprintf("its %d categories and %q for every other value", len(domain), ledger.OtherCategory), err
	}
	bins, err = tabular.NewDomainBins(domain)
	return bins, fmt.Sprintf("its %d categories (other=false: rows with any other value are in no group)", len(domain)), err
}

// consistentCounts post-processes noisy group counts y[:G] and their noisy
// total y[G], all with the same noise scale, into G counts that add up to
// a total: the least-squares estimate under the constraint (each part
// moves by (T − Σy)/(G+1)), then, with nonneg, the Euclidean projection
// onto the counts ≥ 0 with the same total (raised to 0 if negative), then
// integers that keep the rounded total (largest remainders; ties to the
// first key). Public parameters and released values only.
func consistentCounts(y []float64, nonneg bool) []float64 {
	g := len(y) - 1
	x, total := leastSquaresParts(y)
	if nonneg {
		total = max(total, 0)
		projectSimplex(x, total)
	}
	want := math.Round(total)
	order := make([]int, g)
	floors := 0.0
	for i := range x {
		order[i] = i
		f := math.Floor(x[i])
		floors += f
		x[i], y[i] = f, x[i]-f // y now holds the fractional parts
	}
	sort.SliceStable(order, func(a, b int) bool { return y[order[a]] > y[order[b]] })
	for r := 0; r < int(want-floors) && r < g; r++ {
		x[order[r]]++
	}
	return x
}

// leastSquaresParts is the least-squares fit of G parts y[:G] to their
// noisy total y[G], all of one noise scale: each part moves by
// (T − Σy)/(G+1). It returns the parts and their sum.
func leastSquaresParts(y []float64) (x []float64, total float64) {
	g := len(y) - 1
	sum := 0.0
	for _, v := range y[:g] {
		sum += v
	}
	shift := (y[g] - sum) / float64(g+1)
	x = make([]float64, g)
	for i := range x {
		x[i] = y[i] + shift
		total += x[i]
	}
	return x, total
}

// projectSimplex replaces x by its Euclidean projection onto
// {z ≥ 0, Σz = s} (s ≥ 0): z_i = max(x_i − θ, 0) for the θ that makes the
// sum s.
func projectSimplex(x []float64, s float64) {
	if s <= 0 {
		for i := range x {
			x[i] = 0
		}
		return
	}
	sorted := append([]float64(nil), x...)
	sort.Sort(sort.Reverse(sort.Float64Slice(sorted)))
	theta, run := 0.0, 0.0
	for k, v := range sorted {
		run += v
		t := (run - s) / float64(k+1)
		if v-t > 0 {
			theta = t
		}
	}
	for i := range x {
		x[i] = max(x[i]-theta, 0)
	}
}

// consistentSums post-processes noisy group sums y[:G] and their noisy
// total y[G], all with the same noise scale, into G sums that add up to a
// total: the least-squares estimate under the constraint (each part moves
// by (T − Σy)/(G+1)), then, with nonneg (the bounds are ≥ 0, so every
// true sum is), the Euclidean projection onto the sums ≥ 0 with the same
// total (raised to 0 if negative). No rounding: sums are not integers.
func consistentSums(y []float64, nonneg bool) []float64 {
	x, total := leastSquaresParts(y)
	if nonneg {
		projectSimplex(x, max(total, 0))
	}
	return x
}
