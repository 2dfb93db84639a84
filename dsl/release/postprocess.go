package release

// The analyst's free post-processing of the tabular calls' noisy values
// (docs/dsl.md, "Post-processing"): the keywords nonnegative, clamp and
// other. Each is a function of the released values and of public
// parameters alone, so by the post-processing property it changes neither
// the privacy guarantee nor the cost; the receipt's note names the rule.

import (
	"fmt"
	"math"

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
