package runtime

// Error bars of the tabular results: r.Interval(level), r.IntervalOf(key,
// level), the "± half-width" of their displays and the error bars of
// their plots. Every interval is computed from the receipt's public noise
// description (release.ErrorModel, stored with the release, so a verified
// notebook renders the same) and the released values: post-processing,
// never a read of private data.

import (
	"fmt"
	"math"

	"github.com/privnotes/privnotes/dsl/release"
)

// errorModel is the release's noise description, if its receipt has one
// (releases stored before releases carried their error have none).
func (b *releaseBase) errorModel() (release.ErrorModel, bool) {
	if b == nil || b.Receipt == nil {
		return release.ErrorModel{}, false
	}
	return release.ErrorOf(b.Receipt.Params)
}

// mustLevel refuses a level outside (0, 1).
func mustLevel(fn string, level float64) {
	if !(level > 0 && level < 1) {
		panic(errorf(NameArgumentError, "%s: level=%v must be a confidence level strictly between 0 and 1, for example 0.95", fn, level))
	}
}

// noInterval is the error of a result whose release carries no interval.
func noInterval(fn string) *Error {
	return errorf(NameArgumentError, "%s: this release carries no confidence interval (it was stored before releases carried their error, or its method has none)", fn)
}

// valueInterval is the level interval of value i of a release: vals[i] ±
// the noise's half-width, or for a mean the ratio interval of its noisy
// parts (sums[i], counts[i], or the one count of a vector mean).
func (b *releaseBase) valueInterval(vals, sums, counts []float64, i int, level float64) (lo, hi float64, ok bool) {
	m, has := b.errorModel()
	if !has || i < 0 || i >= len(vals) {
		return math.NaN(), math.NaN(), false
	}
	var err error
	switch m.Kind {
	case release.ErrLaplace, release.ErrGaussian:
		lo, hi, err = m.Interval(vals[i], level)
	case release.ErrRatio:
		// One sum per value, and one count per value or (a vector mean,
		// which divides every column by one noisy count) one in all:
		// parts of any other shape are not this release's.
		if len(sums) != len(vals) || len(counts) != 1 && len(counts) != len(vals) {
			return math.NaN(), math.NaN(), false
		}
		c := counts
		if len(c) == 1 {
			c = nil
			for range sums {
				c = append(c, counts[0])
			}
		}
		if i >= len(sums) || i >= len(c) {
			return math.NaN(), math.NaN(), false
		}
		lo, hi, err = m.RatioInterval(sums[i], c[i], level)
	case release.ErrFitted:
		// consistent=true: sums holds the least-squares fits
		// (groupResult), each value's interval around its own.
		if len(sums) != len(vals) {
			return math.NaN(), math.NaN(), false
		}
		lo, hi, err = m.FittedInterval(sums[i], level)
	default:
		return math.NaN(), math.NaN(), false
	}
	return lo, hi, err == nil
}

// mustInterval is valueInterval for a cell: an error instead of !ok.
func (b *releaseBase) mustInterval(fn string, vals, sums, counts []float64, i int, level float64) (float64, float64) {
	mustLevel(fn, level)
	lo, hi, ok := b.valueInterval(vals, sums, counts, i, level)
	if !ok {
		panic(noInterval(fn))
	}
	return lo, hi
}

// halfWidth95 is value i's 95 % half-width: the noise's, or for a mean
// (whose interval is not symmetric) the larger distance from the value to
// its interval's ends, so that value ± h holds the interval.
func (b *releaseBase) halfWidth95(vals, sums, counts []float64, i int) (float64, bool) {
	lo, hi, ok := b.valueInterval(vals, sums, counts, i, release.DefaultLevel)
	if !ok {
		return 0, false
	}
	if m, _ := b.errorModel(); m.Kind != release.ErrRatio && m.Kind != release.ErrFitted {
		// The half-width itself, not the interval's ends (widened by an
		// ulp of the value).
		h, err := m.HalfWidth(release.DefaultLevel)
		return h, err == nil
	}
	return math.Max(vals[i]-lo, hi-vals[i]), true
}

// plusMinus is the display of value i's 95 % interval, "± h", or ""
// without one.
func (b *releaseBase) plusMinus(vals, sums, counts []float64, i int) string {
	h, ok := b.halfWidth95(vals, sums, counts, i)
	if !ok {
		return ""
	}
	return "± " + fmtHalfWidth(h)
}

// csvWithHalfWidth appends a "±95%" column to a download's rows (a header
// and one row per value of vals), when the release carries intervals.
func (b *releaseBase) csvWithHalfWidth(rows [][]string, vals, sums, counts []float64) [][]string {
	if _, ok := b.halfWidth95(vals, sums, counts, 0); !ok || len(rows) != len(vals)+1 {
		return rows
	}
	rows[0] = append(rows[0], "±95%")
	for i := range vals {
		h, ok := b.halfWidth95(vals, sums, counts, i)
		cell := ""
		if ok {
			cell = fmtNum(h)
		}
		rows[i+1] = append(rows[i+1], cell)
	}
	return rows
}

// fmtHalfWidth writes a half-width (release.FormatHalfWidth).
func fmtHalfWidth(h float64) string { return release.FormatHalfWidth(h) }

// intervalNote is the line under a result's values that says what the ±
// means, or "" when the release carries no interval.
func (b *releaseBase) intervalNote() string {
	m, ok := b.errorModel()
	if !ok {
		return ""
	}
	switch m.Kind {
	case release.ErrRatio:
		return "± : 95 % confidence interval from the noisy sum and count (Fieller; within the bounds)\n"
	case release.ErrExponential:
		return ""
	case release.ErrFitted:
		return "± : 95 % confidence interval around each part's least-squares fit to the noisy total (consistent=true), holding the value shown\n"
	}
	return "± : 95 % confidence interval of the noise\n"
}

// intervalNoteHTML is intervalNote as a paragraph.
func (b *releaseBase) intervalNoteHTML() string {
	if s := b.intervalNote(); s != "" {
		return "<p style=\"font-size:smaller\">" + s[:len(s)-1] + "</p>\n"
	}
	return ""
}

// rankText is a quantile's rank bound at 95 %, or "".
func (b *releaseBase) rankText() string {
	m, ok := b.errorModel()
	if !ok || m.Kind != release.ErrExponential {
		return ""
	}
	return fmt.Sprintf("with probability ≥ 95 %% its rank is within ±%d rows of the target rank, beyond the closest any grid point comes", m.RankError95)
}

// Interval returns the level confidence interval (lo, hi) of the count,
// for example lo, hi := r.Interval(0.95). A grouped count has one per key:
// IntervalOf(key, level).
func (r *CountResult) Interval(level float64) (float64, float64) {
	const fn = "Interval"
	if r == nil || r.Receipt == nil || r.Receipt.DryRun {
		panic(errorf(NameArgumentError, "%s: no result", fn))
	}
	if r.GroupResult != nil {
		panic(errorf(NameArgumentError, "%s: this count is grouped by %s: give the key, r.IntervalOf(key, level)", fn, r.By))
	}
	return r.mustInterval(fn, []float64{r.Value}, nil, nil, 0, level)
}

// Interval returns the level confidence interval (lo, hi) of the sum; a
// grouped sum has one per key: IntervalOf(key, level).
func (r *SumResult) Interval(level float64) (float64, float64) {
	const fn = "Interval"
	if r == nil || r.Receipt == nil || r.Receipt.DryRun {
		panic(errorf(NameArgumentError, "%s: no result", fn))
	}
	if r.GroupResult != nil {
		panic(errorf(NameArgumentError, "%s: this sum is grouped by %s: give the key, r.IntervalOf(key, level)", fn, r.By))
	}
	return r.mustInterval(fn, []float64{r.Value}, nil, nil, 0, level)
}

// Interval returns the level confidence interval (lo, hi) of a
// one-column mean; IntervalOf(column, level) names the column (or, with
// by=, the key).
func (r *MeanResult) Interval(level float64) (float64, float64) {
	const fn = "Interval"
	if r == nil || r.Receipt == nil || r.Receipt.DryRun {
		panic(errorf(NameArgumentError, "%s: no result", fn))
	}
	if r.GroupResult != nil {
		panic(errorf(NameArgumentError, "%s: this mean is grouped by %s: give the key, r.IntervalOf(key, level)", fn, r.By))
	}
	if len(r.Values) != 1 {
		panic(errorf(NameArgumentError, "%s: this mean has %d columns: give one, r.IntervalOf(column, level)", fn, len(r.Values)))
	}
	return r.mustInterval(fn, r.Values, r.sums, r.counts, 0, level)
}

// IntervalOf returns the level confidence interval (lo, hi) of the mean
// of a column, or with by= of a key (as Get).
func (r *MeanResult) IntervalOf(name string, level float64) (float64, float64) {
	const fn = "IntervalOf"
	if r == nil || r.Receipt == nil || r.Receipt.DryRun {
		panic(errorf(NameArgumentError, "%s: no result", fn))
	}
	if r.GroupResult != nil {
		return r.GroupResult.IntervalOf(name, level)
	}
	for i, c := range r.Columns {
		if c == name {
			return r.mustInterval(fn, r.Values, r.sums, r.counts, i, level)
		}
	}
	panic(errorf(NameArgumentError, "%s: no column %q in this result; it has %v", fn, name, r.Columns))
}

// IntervalOf returns the level confidence interval (lo, hi) of a key's
// value.
func (r *GroupResult) IntervalOf(key string, level float64) (float64, float64) {
	const fn = "IntervalOf"
	if r == nil {
		panic(errorf(NameArgumentError, "%s(%q): this result is not grouped; use r.Interval(level)", fn, key))
	}
	r.Get(key) // the error for an unknown key
	for i, k := range r.Keys {
		if k == key {
			return r.mustInterval(fn, r.Values, r.sums, r.counts, i, level)
		}
	}
	panic("unreachable")
}

// barInterval is value i's 95 % interval, for plots' error bars.
func (r *GroupResult) barInterval(i int) (float64, float64, bool) {
	return r.valueInterval(r.Values, r.sums, r.counts, i, release.DefaultLevel)
}

// IntervalOf returns the level confidence interval (lo, hi) of a key's
// count.
func (r *HistogramResult) IntervalOf(key string, level float64) (float64, float64) {
	const fn = "IntervalOf"
	r.Get(key) // the error for a nil result or an unknown key
	for i, k := range r.Keys {
		if k == key {
			return r.mustInterval(fn, r.Counts, nil, nil, i, level)
		}
	}
	panic("unreachable")
}

func (r *HistogramResult) barInterval(i int) (float64, float64, bool) {
	return r.valueInterval(r.Counts, nil, nil, i, release.DefaultLevel)
}

// RankError returns the quantile's error bound at level, in rows: with
// probability at least level the released value's rank lies within
// ±k rows of the target rank q·n, beyond the least distance any point of
// the public grid has. The exponential mechanism gives no interval of
// values: how far k rows move the value depends on where the data lie.
func (r *QuantileResult) RankError(level float64) int {
	const fn = "RankError"
	mustLevel(fn, level)
	if r == nil || r.Receipt == nil {
		panic(errorf(NameArgumentError, "%s: no result", fn))
	}
	m, ok := r.errorModel()
	if !ok || m.Kind != release.ErrExponential {
		panic(noInterval(fn))
	}
	k, err := m.RankError(level)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	return k
}

// spaced is s after a space, or "".
func spaced(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

// pmCell is an HTML table cell of a "± h", or "" (no column) without one.
func pmCell(s string) string {
	if s == "" {
		return ""
	}
	return "<td>" + s + "</td>"
}

// pmHeader is the header cell of the ± column, or "" without intervals.
func (b *releaseBase) pmHeader() string {
	if m, ok := b.errorModel(); ok && m.Kind != release.ErrExponential {
		return "<th>± 95 %</th>"
	}
	return ""
}
