package runtime

// The column analyses: private_sum, private_histogram, private_quantile
// (mechanisms/tabular through the execution core), their results and
// plot_histogram.

import (
	"fmt"
	"html"
	"math"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/privnotes/privnotes/dsl/release"
)

func sumResult(rel *release.Release) *SumResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &SumResult{releaseBase: releaseBase{rel.Receipt}}
	}
	if g := groupResult(rel); g != nil {
		return &SumResult{Value: total(g.Values), Column: g.Column, releaseBase: releaseBase{rel.Receipt}, GroupResult: g}
	}
	return &SumResult{Value: rel.Value.(*release.Sum).Value, Column: rel.Columns[0], releaseBase: releaseBase{rel.Receipt}}
}

func histogramResult(rel *release.Release) *HistogramResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &HistogramResult{releaseBase: releaseBase{rel.Receipt}}
	}
	h := rel.Value.(*release.Histogram)
	return &HistogramResult{Column: rel.Columns[0], Keys: h.Keys, Counts: h.Counts, releaseBase: releaseBase{rel.Receipt}}
}

func quantileResult(rel *release.Release) *QuantileResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &QuantileResult{releaseBase: releaseBase{rel.Receipt}}
	}
	q := rel.Value.(*release.Quantile)
	return &QuantileResult{Column: rel.Columns[0], Q: q.Q, Value: q.Value, releaseBase: releaseBase{rel.Receipt}}
}

// SumResult is a private_sum release.
type SumResult struct {
	// Value is the noisy sum of the column's clamped values; with by=,
	// the total of the groups' noisy sums (post-processing).
	Value  float64
	Column string
	releaseBase
	// GroupResult is set with by=: By, Keys, Values (one noisy sum per
	// key) and Get(key).
	*GroupResult
}

func (r *SumResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil); ok {
		return s
	}
	if r.GroupResult != nil {
		return r.GroupResult.String()
	}
	return r.text(fmt.Sprintf("private sum of %s ≈ %.6g%s\n", r.Column, r.Value, spaced(r.plusMinus([]float64{r.Value}, nil, nil, 0))) + r.intervalNote())
}

// HTML renders the sum and the receipt.
func (r *SumResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil); ok {
		return s
	}
	if r.GroupResult != nil {
		return r.GroupResult.HTML()
	}
	return r.html(fmt.Sprintf("<p>private sum of <code>%s</code> ≈ <b>%.6g</b>%s</p>", html.EscapeString(r.Column), r.Value, spaced(r.plusMinus([]float64{r.Value}, nil, nil, 0))) + r.intervalNoteHTML())
}

// Metadata carries the receipt into the output metadata.
func (r *SumResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// HistogramResult is a private_histogram release: a noisy count for every
// key of the column's public domain, in its order.
type HistogramResult struct {
	Column string
	Keys   []string
	// Counts are the noisy counts, rounded to integers (they may be
	// negative for small counts).
	Counts []float64
	releaseBase
}

// Get returns the count of a key.
func (r *HistogramResult) Get(key string) float64 {
	if r == nil {
		panic(errorf(NameArgumentError, "Get(%q): no result (the HistogramResult is nil)", key))
	}
	for i, k := range r.Keys {
		if k == key {
			return r.Counts[i]
		}
	}
	quoted := make([]string, len(r.Keys))
	for i, k := range r.Keys {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	panic(errorf(NameArgumentError, "no key %q in this histogram of %s; its keys are %s", key, r.Column, strings.Join(quoted, ", ")))
}

// histogramRows is how many keys the text and HTML displays show before
// eliding the middle ones.
const histogramRows = 60

func (r *HistogramResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil); ok {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "private histogram of %s (%d keys):\n", r.Column, len(r.Keys))
	width := nameWidth(r.Keys, len(r.Keys))
	for i, k := range r.Keys {
		if len(r.Keys) > histogramRows && i >= histogramRows/2 && i < len(r.Keys)-10 {
			if i == histogramRows/2 {
				fmt.Fprintf(&b, "  … (%d more keys)\n", len(r.Keys)-histogramRows/2-10)
			}
			continue
		}
		fmt.Fprintf(&b, "  %s %8.0f%s\n", padRight(k, width), r.Counts[i], spaced(r.plusMinus(r.Counts, nil, nil, i)))
	}
	b.WriteString(r.intervalNote())
	return r.text(b.String())
}

// HTML renders the counts as a table, then the receipt.
func (r *HistogramResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil); ok {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<table><caption>private histogram of <code>%s</code></caption>\n<thead><tr><th>key</th><th>count (DP)</th>%s</tr></thead>\n<tbody>\n",
		html.EscapeString(r.Column), r.pmHeader())
	for i, k := range r.Keys {
		if len(r.Keys) > histogramRows && i >= histogramRows/2 && i < len(r.Keys)-10 {
			if i == histogramRows/2 {
				fmt.Fprintf(&b, "<tr><th>⋮</th><td>%d more keys</td></tr>\n", len(r.Keys)-histogramRows/2-10)
			}
			continue
		}
		fmt.Fprintf(&b, "<tr><th style=\"text-align:left\">%s</th><td>%.0f</td>%s</tr>\n", html.EscapeString(k), r.Counts[i], pmCell(r.plusMinus(r.Counts, nil, nil, i)))
	}
	b.WriteString("</tbody></table>\n")
	b.WriteString(r.intervalNoteHTML())
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *HistogramResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// QuantileResult is a private_quantile release.
type QuantileResult struct {
	Column string
	// Q is the quantile asked for, Value the private estimate: a point of
	// the public grid over the column's bounds.
	Q, Value float64
	releaseBase
}

func (r *QuantileResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil); ok {
		return s
	}
	out := fmt.Sprintf("private %s of %s ≈ %.6g\n", quantileName(r.Q), r.Column, r.Value)
	if t := r.rankText(); t != "" {
		out += "  (" + t + ")\n"
	}
	return r.text(out)
}

// HTML renders the quantile and the receipt.
func (r *QuantileResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil); ok {
		return s
	}
	out := fmt.Sprintf("<p>private %s of <code>%s</code> ≈ <b>%.6g</b></p>",
		html.EscapeString(quantileName(r.Q)), html.EscapeString(r.Column), r.Value)
	if t := r.rankText(); t != "" {
		out += "<p style=\"font-size:smaller\">" + html.EscapeString(t) + "</p>"
	}
	return r.html(out)
}

// Metadata carries the receipt into the output metadata.
func (r *QuantileResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// quantileName is "median" or "0.9-quantile".
func quantileName(q float64) string {
	if q == 0.5 {
		return "median"
	}
	return fmt.Sprintf("%g-quantile", q)
}

// plotHistogram implements plot_histogram: the noisy counts as bars.
func plotHistogram(res any, kws ...KW) *Plot {
	const fn = "plot_histogram"
	a := mustArgs(fn, kws)
	keys, vals, what, ylabel, ok := barsOf(res)
	if !ok {
		panic(errorf(NameArgumentError, "%s: want a result of private_histogram, of private_count, private_sum or private_mean with by=, or of private_sql with one key and one value column, got %s", fn, typeName(res)))
	}
	title := a.str("title")
	if title == "" {
		title = what
	}
	n := len(vals)
	labels := make([]string, n)
	step := max(1, n/40) // at most about 40 labels
	for i, k := range keys {
		if i%step == 0 {
			labels[i] = shorten(k, 24)
		}
	}
	iv, _ := res.(intervaled)
	return barChart(fn, barFigure{
		title: title, ylabel: ylabel, labels: labels, vals: vals, iv: iv,
		barWidth: vg.Points(math.Max(1, math.Min(24, 420/float64(n)))),
		width:    min(max(6*vg.Inch, vg.Length(n)*0.2*vg.Inch), 20*vg.Inch),
	})
}

// barsOf returns the keys and values plot_histogram draws: a histogram's
// counts, or a grouped release's values per key (one function for both,
// since both are one noisy value per public key), with a default title and
// the y axis' label.
func barsOf(res any) (keys []string, vals []float64, title, ylabel string, ok bool) {
	var g *GroupResult
	switch r := res.(type) {
	case *HistogramResult:
		if r == nil || len(r.Keys) == 0 || len(r.Keys) != len(r.Counts) {
			return nil, nil, "", "", false
		}
		return r.Keys, r.Counts, fmt.Sprintf("private histogram of %s", r.Column), "count (DP)", true
	case *GroupResult:
		g = r
	case *CountResult:
		if r != nil {
			g = r.GroupResult
		}
	case *SumResult:
		if r != nil {
			g = r.GroupResult
		}
	case *MeanResult:
		if r != nil {
			g = r.GroupResult
		}
	case *TableResult:
		keys, vals, ok := r.bars()
		if !ok {
			return nil, nil, "", "", false
		}
		v := r.ValueColumns()[0]
		return keys, vals, fmt.Sprintf("private %s by %s", v, r.KeyColumns()[0]), v + " (DP)", true
	}
	if g == nil || len(g.Keys) == 0 || len(g.Keys) != len(g.Values) {
		return nil, nil, "", "", false
	}
	title = fmt.Sprintf("private %s by %s", g.Stat, g.By)
	if g.Column != "" {
		title = fmt.Sprintf("private %s of %s by %s", g.Stat, g.Column, g.By)
	}
	return g.Keys, g.Values, title, g.Stat + " (DP)", true
}

// GroupResult is a grouped release: private_count, private_sum or
// private_mean with by=. It is embedded in their results (CountResult,
// SumResult, MeanResult), so r.Keys, r.Values and r.Get(key) work on
// them directly; it is nil without by=.
type GroupResult struct {
	// Stat is "count", "sum" or "mean"; Column the summed or averaged
	// column ("" for counts).
	Stat   string
	Column string
	// By is the categorical column grouped by; Keys are its public
	// domain's categories, then "other", every one released whatever the
	// data; Values hold one noisy value per key: counts rounded to
	// integers (they may be negative), sums, or means (noisy sum /
	// max(noisy count, 1), not clamped to the bounds).
	By     string
	Keys   []string
	Values []float64
	releaseBase
	// sums and counts are a mean's noisy parts per key: the intervals'
	// input.
	sums, counts []float64
}

// Get returns the value of a key.
func (r *GroupResult) Get(key string) float64 {
	if r == nil {
		panic(errorf(NameArgumentError, "Get(%q): this result is not grouped; give by=\"column\" to the call for one value per key", key))
	}
	for i, k := range r.Keys {
		if k == key && i < len(r.Values) {
			return r.Values[i]
		}
	}
	quoted := make([]string, len(r.Keys))
	for i, k := range r.Keys {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	panic(errorf(NameArgumentError, "no key %q in this %s; its keys are %s", key, r.title(), strings.Join(quoted, ", ")))
}

// title is "count by region", "sum of income by region".
func (r *GroupResult) title() string {
	if r.Column == "" {
		return fmt.Sprintf("%s by %s", r.Stat, r.By)
	}
	return fmt.Sprintf("%s of %s by %s", r.Stat, r.Column, r.By)
}

func (r *GroupResult) format(v float64) string {
	if r.Stat == "count" {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.6g", v)
}

// String and HTML have no dry-run form: a dry run releases no groups
// (its result's GroupResult is nil), and the grouped results show a dry
// run's receipt before they reach their groups.
func (r *GroupResult) String() string {
	if r == nil || r.Receipt == nil || len(r.Keys) != len(r.Values) {
		return noResult
	}
	var b strings.Builder
	fmt.Fprintf(&b, "private %s (%d keys):\n", r.title(), len(r.Keys))
	width := nameWidth(r.Keys, len(r.Keys))
	for i, k := range r.Keys {
		if len(r.Keys) > histogramRows && i >= histogramRows/2 && i < len(r.Keys)-10 {
			if i == histogramRows/2 {
				fmt.Fprintf(&b, "  … (%d more keys)\n", len(r.Keys)-histogramRows/2-10)
			}
			continue
		}
		fmt.Fprintf(&b, "  %s %10s%s\n", padRight(k, width), r.format(r.Values[i]), spaced(r.plusMinus(r.Values, r.sums, r.counts, i)))
	}
	b.WriteString(r.intervalNote())
	return r.text(b.String())
}

// HTML renders the values as a table of keys, then the receipt.
func (r *GroupResult) HTML() string {
	if r == nil || r.Receipt == nil || len(r.Keys) != len(r.Values) {
		return noResultHTML
	}
	var b strings.Builder
	caption := fmt.Sprintf("private %s by <code>%s</code>", html.EscapeString(r.Stat), html.EscapeString(r.By))
	if r.Column != "" {
		caption = fmt.Sprintf("private %s of <code>%s</code> by <code>%s</code>", html.EscapeString(r.Stat), html.EscapeString(r.Column), html.EscapeString(r.By))
	}
	fmt.Fprintf(&b, "<table><caption>%s</caption>\n<thead><tr><th>%s</th><th>%s (DP)</th>%s</tr></thead>\n<tbody>\n",
		caption, html.EscapeString(r.By), html.EscapeString(r.Stat), r.pmHeader())
	for i, k := range r.Keys {
		if len(r.Keys) > histogramRows && i >= histogramRows/2 && i < len(r.Keys)-10 {
			if i == histogramRows/2 {
				fmt.Fprintf(&b, "<tr><th>⋮</th><td>%d more keys</td></tr>\n", len(r.Keys)-histogramRows/2-10)
			}
			continue
		}
		fmt.Fprintf(&b, "<tr><th style=\"text-align:left\">%s</th><td>%s</td>%s</tr>\n", html.EscapeString(k), r.format(r.Values[i]), pmCell(r.plusMinus(r.Values, r.sums, r.counts, i)))
	}
	b.WriteString("</tbody></table>\n")
	b.WriteString(r.intervalNoteHTML())
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *GroupResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// groupResult is the GroupResult of a grouped release, nil for another.
func groupResult(rel *release.Release) *GroupResult {
	g, ok := rel.Value.(*release.Groups)
	if !ok {
		return nil
	}
	r := &GroupResult{Stat: g.Stat, Column: g.Column, By: g.By, Keys: g.Keys, Values: g.Values, releaseBase: releaseBase{rel.Receipt},
		sums: g.Sums, counts: g.Counts}
	if g.Fitted != nil {
		r.sums = g.Fitted // consistent=true: the fits the intervals are around (valueInterval)
	}
	return r
}

// total is the sum of a grouped release's values, in order: the Value of
// a grouped count or sum (post-processing of the noisy values).
func total(vs []float64) float64 {
	var t float64
	for _, v := range vs {
		t += v
	}
	return t
}
