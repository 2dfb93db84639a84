package runtime

// The column analyses: private_sum, private_histogram, private_quantile
// (mechanisms/tabular through the execution core), their results and
// plot_histogram.

import (
	"fmt"
	"html"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/privnotes/privnotes/dsl/release"
)

func (rt *Runtime) privateSum(ds any, kws ...KW) *SumResult {
	rel, _ := rt.runPrivate("private_sum", ds, kws)
	return &SumResult{Value: rel.Value.(*release.Sum).Value, Column: rel.Columns[0], Receipt: rel.Receipt}
}

func (rt *Runtime) privateHistogram(ds any, kws ...KW) *HistogramResult {
	rel, _ := rt.runPrivate("private_histogram", ds, kws)
	h := rel.Value.(*release.Histogram)
	return &HistogramResult{Column: rel.Columns[0], Keys: h.Keys, Counts: h.Counts, Receipt: rel.Receipt}
}

func (rt *Runtime) privateQuantile(ds any, kws ...KW) *QuantileResult {
	rel, _ := rt.runPrivate("private_quantile", ds, kws)
	q := rel.Value.(*release.Quantile)
	return &QuantileResult{Column: rel.Columns[0], Q: q.Q, Value: q.Value, Receipt: rel.Receipt}
}

// SumResult is a private_sum release.
type SumResult struct {
	// Value is the noisy sum of the column's clamped values.
	Value   float64
	Column  string
	Receipt *Receipt
}

func (r *SumResult) String() string {
	return fmt.Sprintf("private sum of %s ≈ %.6g\n%s", r.Column, r.Value, r.Receipt)
}

// HTML renders the sum and the receipt.
func (r *SumResult) HTML() string {
	return fmt.Sprintf("<div class=\"privnotes-result\"><p>private sum of <code>%s</code> ≈ <b>%.6g</b></p>%s</div>",
		html.EscapeString(r.Column), r.Value, r.Receipt.HTML())
}

// Metadata carries the receipt into the output metadata.
func (r *SumResult) Metadata() map[string]any { return r.Receipt.Metadata() }

// HistogramResult is a private_histogram release: a noisy count for every
// key of the column's public domain, in its order.
type HistogramResult struct {
	Column string
	Keys   []string
	// Counts are the noisy counts, rounded to integers (they may be
	// negative for small counts).
	Counts  []float64
	Receipt *Receipt
}

// Get returns the count of a key.
func (r *HistogramResult) Get(key string) float64 {
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
		fmt.Fprintf(&b, "  %s %8.0f\n", padRight(k, width), r.Counts[i])
	}
	b.WriteString(r.Receipt.String())
	return b.String()
}

// HTML renders the counts as a table, then the receipt.
func (r *HistogramResult) HTML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<div class=\"privnotes-result\"><table><caption>private histogram of <code>%s</code></caption>\n<thead><tr><th>key</th><th>count (DP)</th></tr></thead>\n<tbody>\n",
		html.EscapeString(r.Column))
	for i, k := range r.Keys {
		if len(r.Keys) > histogramRows && i >= histogramRows/2 && i < len(r.Keys)-10 {
			if i == histogramRows/2 {
				fmt.Fprintf(&b, "<tr><th>⋮</th><td>%d more keys</td></tr>\n", len(r.Keys)-histogramRows/2-10)
			}
			continue
		}
		fmt.Fprintf(&b, "<tr><th style=\"text-align:left\">%s</th><td>%.0f</td></tr>\n", html.EscapeString(k), r.Counts[i])
	}
	b.WriteString("</tbody></table>\n")
	b.WriteString(r.Receipt.HTML())
	b.WriteString("</div>")
	return b.String()
}

// Metadata carries the receipt into the output metadata.
func (r *HistogramResult) Metadata() map[string]any { return r.Receipt.Metadata() }

// QuantileResult is a private_quantile release.
type QuantileResult struct {
	Column string
	// Q is the quantile asked for, Value the private estimate: a point of
	// the public grid over the column's bounds.
	Q, Value float64
	Receipt  *Receipt
}

func (r *QuantileResult) String() string {
	return fmt.Sprintf("private %s of %s ≈ %.6g\n%s", quantileName(r.Q), r.Column, r.Value, r.Receipt)
}

// HTML renders the quantile and the receipt.
func (r *QuantileResult) HTML() string {
	return fmt.Sprintf("<div class=\"privnotes-result\"><p>private %s of <code>%s</code> ≈ <b>%.6g</b></p>%s</div>",
		html.EscapeString(quantileName(r.Q)), html.EscapeString(r.Column), r.Value, r.Receipt.HTML())
}

// Metadata carries the receipt into the output metadata.
func (r *QuantileResult) Metadata() map[string]any { return r.Receipt.Metadata() }

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
	r, ok := res.(*HistogramResult)
	if !ok || r == nil || len(r.Keys) == 0 || len(r.Keys) != len(r.Counts) {
		panic(errorf(NameArgumentError, "%s: want a result of private_histogram, got %s", fn, typeName(res)))
	}
	title := a.str("title")
	if title == "" {
		title = fmt.Sprintf("private histogram of %s", r.Column)
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "count (DP)"
	n := len(r.Counts)
	bars, err := plotter.NewBarChart(plotter.Values(r.Counts), vg.Points(math.Max(1, math.Min(24, 420/float64(n)))))
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	bars.LineStyle.Width = 0
	p.Add(bars, plotter.NewGrid())
	labels := make([]string, n)
	step := max(1, n/40) // at most about 40 labels
	for i, k := range r.Keys {
		if i%step == 0 {
			labels[i] = shorten(k, 24)
		}
	}
	p.NominalX(labels...)
	if n > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = text.XRight, text.YCenter
	}
	width := max(6*vg.Inch, vg.Length(n)*0.2*vg.Inch)
	return render(p, title, min(width, 20*vg.Inch), 4.5*vg.Inch)
}
