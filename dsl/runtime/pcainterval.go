package runtime

// Error bars of private_pca's releases (issue 28, item 1), from the
// receipt's public noise description and the released values only: method
// gauss's eigenvalues, total variance and explained-variance ratios
// (release.ErrSpectral), npm's and adaptive's eigenvalue estimates against
// their last step's noise-free value (release.ErrLastStep), and the
// reason a direction-only release has none (release.ErrNone).

import (
	"fmt"
	"math"

	"github.com/privnotes/privnotes/dsl/release"
)

// spectral returns the level half-widths of the eigenvalues (all at once)
// and of the total variance, or ok false when the release has none (a
// method other than gauss, or a release stored before).
func (r *PCAResult) spectral(level float64) (value, trace float64, ok bool) {
	if r == nil {
		return 0, 0, false
	}
	m, has := r.errorModel()
	if !has || m.Kind != release.ErrSpectral {
		return 0, 0, false
	}
	value, trace, err := m.SpectralHalfWidths(level)
	return value, trace, err == nil
}

// valueHalfWidth is the level half-width of every eigenvalue estimate at
// once (gauss, npm, adaptive), or ok false without one.
func (r *PCAResult) valueHalfWidth(level float64) (h float64, ok bool) {
	if r == nil {
		return 0, false
	}
	m, has := r.errorModel()
	if !has {
		return 0, false
	}
	h, err := m.ValueHalfWidth(level)
	return h, err == nil
}

// ValueInterval returns the level confidence interval (for example 0.95)
// of eigenvalue estimate j (1-based, as Component). It holds for every j
// at once. Method gauss: each eigenvalue of the released matrix is within
// its noise's spectral norm of the true one (Weyl), and that norm is
// bounded at the level by a matrix Gaussian tail bound. Methods npm and
// adaptive: the interval is around the value the same last power step
// would give without its noise (Weyl again, and a bound on that step's
// noise norm), which is at most the true eigenvalue, so lo bounds the true
// eigenvalue from below too (docs/mechanisms.md). Post-processing of
// public values: no cost.
func (r *PCAResult) ValueInterval(j int, level float64) (lo, hi float64) {
	const fn = "ValueInterval"
	mustLevel(fn, level)
	if _, ok := r.valueHalfWidth(level); !ok {
		panic(r.noIntervalWhy(fn))
	}
	if j < 1 || j > len(r.Values) {
		panic(errorf(NameArgumentError, "%s: eigenvalue %d: the result has eigenvalues 1..%d", fn, j, len(r.Values)))
	}
	lo, hi, _ = r.valueInterval(j-1, level)
	return lo, hi
}

// valueInterval is ValueInterval of eigenvalue i (0-based), or ok false
// without one.
func (r *PCAResult) valueInterval(i int, level float64) (lo, hi float64, ok bool) {
	h, ok := r.valueHalfWidth(level)
	if !ok || i < 0 || i >= len(r.Values) {
		return math.NaN(), math.NaN(), false
	}
	v := r.Values[i]
	return math.Nextafter(v-h, math.Inf(-1)), math.Nextafter(v+h, math.Inf(1)), true
}

// meanInterval is the level interval of coordinate i (0-based) of a
// centred result's mean, or ok false without one (an uncentred result, or
// a release stored before its mean carried its error).
func (r *PCAResult) meanInterval(i int, level float64) (lo, hi float64, ok bool) {
	if r == nil || r.Receipt == nil || i < 0 || i >= len(r.Center) || len(r.centerSums) != len(r.Center) {
		return math.NaN(), math.NaN(), false
	}
	m, has := release.CenterErrorOf(r.Receipt.Params)
	if !has {
		return math.NaN(), math.NaN(), false
	}
	lo, hi, err := m.RatioInterval(r.centerSums[i], r.centerCount, level)
	return lo, hi, err == nil
}

// MeanInterval returns the level confidence interval (for example 0.95)
// of coordinate j (1-based, the j-th column) of the true mean of the
// clipped rows, which private_pca(center=true) estimates by Center: from
// the noisy sums and noisy row count Center was computed from (Fieller's
// set, as private_mean's, within ± the clip). Each coordinate's interval
// holds at the level on its own, not all at once. Post-processing of
// public values: no cost.
func (r *PCAResult) MeanInterval(j int, level float64) (lo, hi float64) {
	const fn = "MeanInterval"
	mustLevel(fn, level)
	if r == nil || r.Center == nil {
		panic(errorf(NameArgumentError, "%s: the result has no mean: it is not centred (private_pca(..., center=true) releases one)", fn))
	}
	if j < 1 || j > len(r.Center) {
		panic(errorf(NameArgumentError, "%s: coordinate %d: the mean has coordinates 1..%d", fn, j, len(r.Center)))
	}
	lo, hi, ok := r.meanInterval(j-1, level)
	if !ok {
		panic(noInterval(fn))
	}
	return lo, hi
}

// meanHalfWidths are the display's 95 % half-widths of the mean's
// coordinates: the larger distance from each shown value to its
// interval's ends, so that value ± h holds the interval (which is not
// symmetric, and is of the true mean, not around the released one, which
// the projection onto the clip's ball may move).
func (r *PCAResult) meanHalfWidths() ([]string, bool) {
	out := make([]string, len(r.Center))
	for i, v := range r.Center {
		lo, hi, ok := r.meanInterval(i, release.DefaultLevel)
		if !ok {
			return nil, false
		}
		out[i] = fmtHalfWidth(math.Max(v-lo, hi-v))
	}
	return out, len(out) > 0
}

// TotalVarianceInterval returns the level confidence interval of the
// total variance (the trace) behind TotalVariance.
func (r *PCAResult) TotalVarianceInterval(level float64) (lo, hi float64) {
	const fn = "TotalVarianceInterval"
	mustLevel(fn, level)
	_, t, ok := r.spectral(level)
	if !ok {
		panic(noInterval(fn))
	}
	return math.Nextafter(r.TotalVariance-t, math.Inf(-1)), math.Nextafter(r.TotalVariance+t, math.Inf(1))
}

// RatioInterval returns a level confidence interval of component j's
// share of the true total variance: the eigenvalues' and the trace's
// intervals at level 1 − (1 − level)/2 each (a union bound), and the range
// of their ratio over that box, within [0, 1].
func (r *PCAResult) RatioInterval(j int, level float64) (lo, hi float64) {
	const fn = "RatioInterval"
	mustLevel(fn, level)
	if _, _, ok := r.spectral(level); !ok {
		panic(noInterval(fn))
	}
	if j < 1 || j > len(r.Values) {
		panic(errorf(NameArgumentError, "%s: eigenvalue %d: the result has eigenvalues 1..%d", fn, j, len(r.Values)))
	}
	lo, hi, _ = r.ratioInterval(j-1, level)
	return lo, hi
}

// ratioInterval is RatioInterval of component i (0-based), or ok false
// without one.
func (r *PCAResult) ratioInterval(i int, level float64) (lo, hi float64, ok bool) {
	h, t, ok := r.spectral(1 - (1-level)/2)
	if !ok || i < 0 || i >= len(r.Values) {
		return math.NaN(), math.NaN(), false
	}
	lo, hi = ratioRange(r.Values[i]-h, r.Values[i]+h, r.TotalVariance-t, r.TotalVariance+t)
	return lo, hi, true
}

// ratioRange is the range of λ/T over λ ∈ [l0, l1] and T ∈ [t0, t1],
// within [0, 1] (an eigenvalue of a positive semi-definite matrix lies
// between 0 and its trace): all of [0, 1] when T may be 0 or below.
func ratioRange(l0, l1, t0, t1 float64) (lo, hi float64) {
	if !(t0 > 0) {
		return 0, 1
	}
	l0, l1 = max(l0, 0), max(l1, 0)
	lo, hi = l0/t1, l1/t0
	return max(0, math.Nextafter(lo, math.Inf(-1))), min(1, math.Nextafter(hi, math.Inf(1)))
}

// noIntervalWhy is noInterval, with the reason when the release states
// one (release.ErrNone).
func (b *releaseBase) noIntervalWhy(fn string) *Error {
	if m, ok := b.errorModel(); ok && m.Kind == release.ErrNone {
		return errorf(NameArgumentError, "%s: no interval: %s", fn, m.Why)
	}
	return noInterval(fn)
}

// errorLine is the display's statement of a release's error for the
// kinds without a per-value table (release.ErrorText: npm's and
// adaptive's last step, the classifier pool's selection, and releases
// with no interval), or "".
func (b *releaseBase) errorLine() string {
	m, ok := b.errorModel()
	if !ok {
		return ""
	}
	return release.ErrorText(m)
}

// spectralText is the line of a PCA result's text that states its 95 %
// half-widths (gauss), or its other error statement, or "".
func (r *PCAResult) spectralText() string {
	if e := r.errorLine(); e != "" {
		if _, ok := r.valueHalfWidth(release.DefaultLevel); ok {
			e += " (ValueInterval)"
		}
		return "  " + e + "\n"
	}
	h, t, ok := r.spectral(release.DefaultLevel)
	if !ok {
		return ""
	}
	return fmt.Sprintf("  ± at 95 %%: every eigenvalue ± %s at once, total variance ± %s (ValueInterval, TotalVarianceInterval, RatioInterval)\n",
		release.FormatHalfWidth(h), release.FormatHalfWidth(t))
}

// csvRows is a PCA result's download (docs/dsl.md, "Results leave the
// notebook"): the loadings as before, one row per data column named in
// the first column, then, for a centred result, the columns mean,
// mean_lo95 and mean_hi95 on those rows (the released mean and its
// coordinates' 95 % intervals, MeanInterval), and, where the method
// releases eigenvalues, rows named eigenvalue, eigenvalue_lo95 and
// eigenvalue_hi95 under the components (ValueInterval), and for gauss
// explained_variance_ratio with its _lo95 and _hi95 rows (RatioInterval).
// A cell is left empty where the release carries no interval (a release
// stored before intervals); so are the mean's cells on the eigenvalue
// rows. A matrix dataset's result (no column names) keeps the loadings
// only. The components themselves have none (a direction's error depends
// on the data's eigengap: docs/dsl.md, "Error bars").
func (r *PCAResult) csvRows() [][]string {
	rows := matrixRows(r.Components, r.Columns, "component_")
	if r.Columns == nil {
		// A matrix dataset's loadings have no column of names, where
		// the named rows would put theirs: the loadings only.
		return rows
	}
	_, k := r.Components.Dims()
	if r.Center != nil && len(r.Center) == len(rows)-1 {
		rows[0] = append(rows[0], "mean", "mean_lo95", "mean_hi95")
		for i, v := range r.Center {
			lo, hi, ok := r.meanInterval(i, release.DefaultLevel)
			rows[i+1] = append(rows[i+1], fmtNum(v), csvNum(lo, ok), csvNum(hi, ok))
		}
	}
	width := len(rows[0])
	named := func(name string, vals []float64, interval func(i int, level float64) (float64, float64, bool)) {
		if len(vals) != k {
			return
		}
		v, lo, hi := []string{name}, []string{name + "_lo95"}, []string{name + "_hi95"}
		for i, x := range vals {
			l, h, ok := interval(i, release.DefaultLevel)
			v, lo, hi = append(v, fmtNum(x)), append(lo, csvNum(l, ok)), append(hi, csvNum(h, ok))
		}
		for _, row := range [][]string{v, lo, hi} {
			for len(row) < width {
				row = append(row, "")
			}
			rows = append(rows, row)
		}
	}
	named("eigenvalue", r.Values, r.valueInterval)
	named("explained_variance_ratio", r.ExplainedVarianceRatio, r.ratioInterval)
	return rows
}

// csvNum is a download's cell of x, or empty without one.
func csvNum(x float64, ok bool) string {
	if !ok {
		return ""
	}
	return fmtNum(x)
}
