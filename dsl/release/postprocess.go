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
	"github.com/privnotes/privnotes/mechanisms/noise"
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

// Error bars of consistent=true. A part's least-squares fit is linear in
// the noisy coordinates y = v + e (parts and total): x_i = y_i + (y_G −
// Σy)/(G+1). The true parts fit their true total exactly, so x_i − v_i =
// G/(G+1)·e_i − Σ_{j≠i, j<G} e_j/(G+1) + e_G/(G+1): independent draws of
// one scale with weights G/(G+1) (once) and 1/(G+1) (G times), whose
// half-width noise.CombinedHalfWidth bounds. Each e_j is the lattice noise
// plus the value's rounding onto the lattice (CombinedHalfWidth's step
// per draw), plus, per coordinate, a sum's floating-point excess and a
// count's rounding to an integer before the fit (½; tabular rounds its
// noisy counts first), each weighted by Σ|a| = 2G/(G+1).
//
// The interval is around the fit x_i, not the value shown: the
// nonnegative projection moves every part by the same θ ≥ 0 (with a data-
// dependent θ, so no fixed width around the shown value could hold it),
// and the rounding by less than 1. So the release keeps the fits (Groups.
// Fitted, Table.Parts), post-processing of its noisy vector, and the
// interval [x_i − h, x_i + h] covers v_i with the fit's probability;
// cutting it at 0 when the true values are ≥ 0, and to integers for
// counts, keeps every value it could cover. Shown as value ± the larger
// distance to its ends, which holds the interval.

// fitTerms are the weights of one part's error in the fit of g parts to
// their total.
func fitTerms(g int) []noise.Term {
	return []noise.Term{{Weight: float64(g) / float64(g+1), Count: 1}, {Weight: 1 / float64(g+1), Count: g}}
}

// fittedModel is the ErrorModel of g parts fitted to their total, each
// coordinate of Laplace (gaussian unset) or Gaussian noise of scale, with
// a floating-point excess per coordinate (sums); counts says the values
// are counts (integers, rounded before or after the fit), nonneg that the
// true values are ≥ 0.
func fittedModel(gaussian bool, scale float64, g int, counts bool, excess float64, nonneg bool) ErrorModel {
	kind := ErrLaplace
	if gaussian {
		kind = ErrGaussian
	}
	m := ErrorModel{Kind: ErrFitted, Noise: kind, Scale: scale, Parts: g, Rounded: counts, Excess: excess, Nonnegative: nonneg || counts}
	m.HalfWidth95, _ = m.HalfWidth(DefaultLevel)
	return m
}

// fittedHalfWidth is the level half-width of each fit of an ErrFitted
// release.
func (m ErrorModel) fittedHalfWidth(level float64) (float64, error) {
	if m.Kind != ErrFitted || m.Parts < 1 || m.Noise != ErrLaplace && m.Noise != ErrGaussian {
		return math.NaN(), errNoInterval
	}
	h, err := noise.CombinedHalfWidth(m.Noise == ErrGaussian, m.Scale, fitTerms(m.Parts), level)
	if err != nil {
		return math.NaN(), err
	}
	slack := m.Excess
	if m.Rounded {
		slack += 0.5
	}
	g := float64(m.Parts)
	return h + slack*2*g/(g+1)*(1+1e-12), nil
}

// FittedInterval is the level confidence interval of the true value
// behind a value of an ErrFitted release whose least-squares fit was fit:
// fit ± the half-width, cut at 0 (Nonnegative) and to integers (counts).
// The value v itself does not enter: the interval is the fit's.
func (m ErrorModel) FittedInterval(fit, level float64) (lo, hi float64, err error) {
	h, err := m.fittedHalfWidth(level)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	if math.IsNaN(fit) || math.IsInf(fit, 0) {
		return math.NaN(), math.NaN(), errNoInterval
	}
	lo, hi = math.Nextafter(fit-h, math.Inf(-1)), math.Nextafter(fit+h, math.Inf(1))
	if m.Rounded {
		lo, hi = math.Ceil(lo), math.Floor(hi)
	}
	if m.Nonnegative {
		lo, hi = max(lo, 0), max(hi, 0)
	}
	return lo, hi, nil
}

// consistentGroups is a grouped count's or sum's consistent=true, when
// set: the values shown (consistentSums, or consistentCounts) and the
// least-squares fits their intervals are around; vals unchanged and nil
// fits without it.
func consistentGroups(consistent, sums bool, vals []float64, nonnegSums, nonnegCounts bool) (shown, fits []float64) {
	if !consistent {
		return vals, nil
	}
	fits, _ = leastSquaresParts(vals)
	if sums {
		return consistentSums(vals, nonnegSums), fits
	}
	return consistentCounts(vals, nonnegCounts), fits
}
