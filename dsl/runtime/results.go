package runtime

import (
	"encoding/json"
	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"

	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/gonum/mat"
)

// Receipt says what a release cost: the privacy receipt every result
// carries (release.Receipt). All of it is public.
type Receipt = release.Receipt

// noResult is how a nil or empty result displays (a variable declared but
// never assigned, or whose call was interrupted; a result without a
// receipt is no release): as text, not a panic.
const (
	noResult     = "no result"
	noResultHTML = "<div class=\"privnotes-result\"><p>no result</p></div>"
)

// PCAResult is a private_pca release.
type PCAResult struct {
	// Components has orthonormal columns (d×k), the leading direction first.
	Components *mat.Dense
	// Values are private estimates of the top eigenvalues of Σ aaᵀ over the
	// clipped rows, when the method computes them (npm, adaptive, gauss);
	// nil otherwise.
	Values []float64
	// Support lists the rows the federated method's estimate may use.
	Support []int
	// Right holds the right singular vectors (n×k) on a rectangular
	// matrix dataset, whose Components are then the left ones (m×k).
	Right *mat.Dense
	// Gap is the κ (relative eigengap guess) that private_pca(gap="auto")
	// selected privately; 0 for every other call.
	Gap float64
	// Center is the private mean the rows were centred by
	// (private_pca(center=true)), one value per column; nil otherwise.
	Center []float64
	// centerSums and centerCount are the noisy parts Center was computed
	// from, in units of the clip: its intervals need them (MeanInterval).
	centerSums  []float64
	centerCount float64
	// TotalVariance is the private estimate of the total variance (the
	// trace of the estimand), which method gauss releases as the trace of
	// its noisy matrix; 0 for the other methods.
	TotalVariance float64
	// ExplainedVarianceRatio is each component's eigenvalue estimate over
	// TotalVariance: its share of the private total variance estimate (not
	// of the true total), as sklearn's explained_variance_ratio_; nil when
	// the method releases no total (npm, adaptive) or it is not positive.
	ExplainedVarianceRatio []float64
	Method                 string
	Columns                []string
	releaseBase
}

// Component returns column j (1-based) of Components.
func (r *PCAResult) Component(j int) []float64 {
	if r == nil || r.Components == nil {
		panic(errorf(NameArgumentError, "component %d: no result (the PCAResult is nil or empty)", j))
	}
	_, k := r.Components.Dims()
	if j < 1 || j > k {
		panic(errorf(NameArgumentError, "component %d: the result has components 1..%d", j, k))
	}
	return mat.Col(nil, j-1, r.Components)
}

func (r *PCAResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Components == nil); ok {
		return s
	}
	d, k := r.Components.Dims()
	var b strings.Builder
	fmt.Fprintf(&b, "PCAResult(%s): %d component(s) over %d columns\n", r.Method, k, d)
	width := nameWidth(r.Columns, d)
	for i := range d {
		fmt.Fprintf(&b, "  %s", padRight(columnName(r.Columns, i), width))
		for j := range k {
			fmt.Fprintf(&b, " % .4f", r.Components.At(i, j))
		}
		b.WriteByte('\n')
		if d > 40 && i == 19 {
			fmt.Fprintf(&b, "  … (%d more rows)\n", d-20)
			break
		}
	}
	if r.Values != nil {
		fmt.Fprintf(&b, "  eigenvalue estimates: %v\n", fmtFloats(r.Values))
	}
	if r.ExplainedVarianceRatio != nil {
		fmt.Fprintf(&b, "  explained-variance ratio (of the private total variance estimate %.4g): %v\n", r.TotalVariance, fmtFloats(r.ExplainedVarianceRatio))
	}
	b.WriteString(r.spectralText())
	if r.Center != nil {
		fmt.Fprintf(&b, "  centred by the private mean: %v\n", fmtFloats(r.Center))
		if h, ok := r.meanHalfWidths(); ok {
			fmt.Fprintf(&b, "  the mean's 95 %% intervals, each within: ± %v (MeanInterval)\n", strings.Join(h, " "))
		}
	}
	if r.Gap != 0 {
		fmt.Fprintf(&b, "  gap=auto selected κ = %v\n", r.Gap)
	}
	writeRight(&b, r.Right)
	return r.text(b.String())
}

// HTML renders the components as a table, then the receipt.
func (r *PCAResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Components == nil); ok {
		return s
	}
	d, k := r.Components.Dims()
	var b strings.Builder
	fmt.Fprintf(&b, "<table class=\"privnotes-matrix\"><caption>private_pca (%s): %d component(s)</caption>\n<thead><tr><th>column</th>", html.EscapeString(r.Method), k)
	for j := range k {
		fmt.Fprintf(&b, "<th>PC%d</th>", j+1)
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for i := range d {
		if d > 60 && i >= 30 && i < d-10 {
			if i == 30 {
				fmt.Fprintf(&b, "<tr><th>⋮</th><td colspan=\"%d\">%d rows</td></tr>\n", k, d-40)
			}
			continue
		}
		name := fmt.Sprint(i)
		if i < len(r.Columns) {
			name = r.Columns[i]
		}
		fmt.Fprintf(&b, "<tr><th>%s</th>", html.EscapeString(name))
		for j := range k {
			fmt.Fprintf(&b, "<td>%.4f</td>", r.Components.At(i, j))
		}
		b.WriteString("</tr>\n")
	}
	if r.Values != nil {
		b.WriteString("<tr><th>eigenvalue (DP)</th>")
		for _, v := range r.Values {
			fmt.Fprintf(&b, "<td>%.4g</td>", v)
		}
		b.WriteString("</tr>\n")
	}
	if r.ExplainedVarianceRatio != nil {
		b.WriteString("<tr><th>explained-variance ratio (DP)</th>")
		for _, v := range r.ExplainedVarianceRatio {
			fmt.Fprintf(&b, "<td>%.4g</td>", v)
		}
		fmt.Fprintf(&b, "</tr>\n<tr><th>total variance (DP)</th><td colspan=\"%d\">%.4g (the ratios' denominator)</td></tr>\n", k, r.TotalVariance)
	}
	if h, t, ok := r.spectral(release.DefaultLevel); ok {
		fmt.Fprintf(&b, "<tr><th>± at 95 %%</th><td colspan=\"%d\">every eigenvalue ± %s at once; total variance ± %s</td></tr>\n", k, html.EscapeString(release.FormatHalfWidth(h)), html.EscapeString(release.FormatHalfWidth(t)))
	} else if e := r.errorLine(); e != "" {
		fmt.Fprintf(&b, "<tr><th>error</th><td colspan=\"%d\">%s</td></tr>\n", k, html.EscapeString(e))
	}
	if r.Center != nil {
		b.WriteString("<tr><th>centred by the private mean</th>")
		fmt.Fprintf(&b, "<td colspan=\"%d\">%s</td></tr>\n", k, html.EscapeString(fmtFloats(r.Center)))
		if h, ok := r.meanHalfWidths(); ok {
			fmt.Fprintf(&b, "<tr><th>the mean ± at 95 %%</th><td colspan=\"%d\">%s (each coordinate's interval lies within; MeanInterval)</td></tr>\n", k, html.EscapeString("± "+strings.Join(h, " ")))
		}
	}
	if r.Gap != 0 {
		fmt.Fprintf(&b, "<tr><th>gap=auto κ</th><td colspan=\"%d\">%v</td></tr>\n", k, r.Gap)
	}
	b.WriteString("</tbody></table>\n")
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *PCAResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// CountResult is a private_count release.
type CountResult struct {
	// Value is the noisy count, rounded to an integer (it may be negative
	// for tiny datasets); with by=, the total of the groups' noisy counts.
	Value float64
	releaseBase
	// GroupResult is set with by= (tabular.go): By, Keys, Values (one
	// noisy count per key) and Get(key).
	*GroupResult
}

func (r *CountResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil); ok {
		return s
	}
	if r.GroupResult != nil {
		return r.GroupResult.String()
	}
	return r.text(fmt.Sprintf("private count ≈ %.0f%s\n", r.Value, spaced(r.plusMinus([]float64{r.Value}, nil, nil, 0))) + r.intervalNote())
}

// HTML renders the count and the receipt.
func (r *CountResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil); ok {
		return s
	}
	if r.GroupResult != nil {
		return r.GroupResult.HTML()
	}
	return r.html(fmt.Sprintf("<p>private count ≈ <b>%.0f</b>%s</p>", r.Value, spaced(r.plusMinus([]float64{r.Value}, nil, nil, 0))) + r.intervalNoteHTML())
}

// Metadata carries the receipt into the output metadata.
func (r *CountResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// MeanResult is a private_mean release.
type MeanResult struct {
	Columns []string
	// Values are one mean per column; with by=, one mean per key of
	// GroupResult.Keys (Columns then names the one averaged column).
	Values []float64
	releaseBase
	// GroupResult is set with by= (tabular.go): By, Keys and Get(key).
	*GroupResult
	// sums and counts are the noisy parts the values divide (one count
	// for every column, or one per column): the intervals' input.
	sums, counts []float64
}

// Get returns the mean of a column by name; with by=, of a key.
func (r *MeanResult) Get(column string) float64 {
	if r == nil {
		panic(errorf(NameArgumentError, "Get(%q): no result (the MeanResult is nil)", column))
	}
	if r.GroupResult != nil {
		return r.GroupResult.Get(column)
	}
	for i, c := range r.Columns {
		if c == column && i < len(r.Values) {
			return r.Values[i]
		}
	}
	panic(errorf(NameArgumentError, "no column %q in this result; it has %v", column, r.Columns))
}

func (r *MeanResult) String() string {
	if r == nil {
		return noResult
	}
	// A grouped mean shows its groups (and their receipt) even without a
	// receipt of its own.
	if s, ok := r.shownText(r.GroupResult == nil && (r.Receipt == nil || len(r.Values) != len(r.Columns))); ok {
		return s
	}
	if r.GroupResult != nil {
		return r.GroupResult.String()
	}
	var b strings.Builder
	b.WriteString("private mean:\n")
	width := nameWidth(r.Columns, len(r.Columns))
	for i, c := range r.Columns {
		fmt.Fprintf(&b, "  %s % .6g%s\n", padRight(c, width), r.Values[i], spaced(r.plusMinus(r.Values, r.sums, r.counts, i)))
	}
	b.WriteString(r.intervalNote())
	return r.text(b.String())
}

// HTML renders the mean vector and the receipt.
func (r *MeanResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.GroupResult == nil && (r.Receipt == nil || len(r.Values) != len(r.Columns))); ok {
		return s
	}
	if r.GroupResult != nil {
		return r.GroupResult.HTML()
	}
	var b strings.Builder
	b.WriteString("<table><caption>private mean</caption>\n")
	for i, c := range r.Columns {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%.6g</td>%s</tr>\n", html.EscapeString(c), r.Values[i], pmCell(r.plusMinus(r.Values, r.sums, r.counts, i)))
	}
	b.WriteString("</table>\n")
	b.WriteString(r.intervalNoteHTML())
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *MeanResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// FedRepResult is a private_fedrep release: the shared representation.
type FedRepResult struct {
	// U is the d×k shared representation (orthonormal columns).
	U       *mat.Dense
	Columns []string
	releaseBase
}

func (r *FedRepResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.U == nil); ok {
		return s
	}
	d, k := r.U.Dims()
	return r.text(representationText(fmt.Sprintf("FedRepResult: shared representation U (%d×%d)", d, k), r.U, r.Columns) + errorTextLine(r.errorLine()))
}

// errorTextLine is a result text's line for the error statement e, or ""
// without one.
func errorTextLine(e string) string {
	if e == "" {
		return ""
	}
	return "  " + e + "\n"
}

// errorHTMLLine is errorTextLine's HTML form.
func errorHTMLLine(e string) string {
	if e == "" {
		return ""
	}
	return "<p class=\"privnotes-error\">" + html.EscapeString(e) + "</p>\n"
}

// representationText renders a d×k representation, one row per column
// name (FedRepResult and ClassifyJLResult).
func representationText(title string, u *mat.Dense, cols []string) string {
	d, k := u.Dims()
	var b strings.Builder
	b.WriteString(title + "\n")
	width := nameWidth(cols, d)
	for i := range d {
		fmt.Fprintf(&b, "  %s", padRight(columnName(cols, i), width))
		for j := range k {
			fmt.Fprintf(&b, " % .4g", u.At(i, j))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// representationHTML is representationText's HTML form.
func representationHTML(caption string, u *mat.Dense, cols []string) string {
	d, k := u.Dims()
	var b strings.Builder
	fmt.Fprintf(&b, "<table class=\"privnotes-matrix\"><caption>%s</caption>\n", html.EscapeString(caption))
	for i := range d {
		fmt.Fprintf(&b, "<tr><th>%s</th>", html.EscapeString(columnName(cols, i)))
		for j := range k {
			fmt.Fprintf(&b, "<td>%.4f</td>", u.At(i, j))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	return b.String()
}

// columnName is the name of column i, or its 1-based number.
func columnName(cols []string, i int) string {
	if i < len(cols) {
		return cols[i]
	}
	return fmt.Sprint(i + 1)
}

// nameWidth is the width of the widest of the d column names (at least
// 6), in characters, so that text tables line up.
func nameWidth(cols []string, d int) int {
	w := 6
	for i := range d {
		w = max(w, utf8.RuneCountInString(columnName(cols, i)))
	}
	return w
}

// padRight pads s with spaces to width characters.
func padRight(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// HTML renders U and the receipt.
func (r *FedRepResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.U == nil); ok {
		return s
	}
	d, k := r.U.Dims()
	return r.html(representationHTML(fmt.Sprintf("%s: U (%d×%d)", catalog.PrivateFedRep.Name, d, k), r.U, r.Columns) + errorHTMLLine(r.errorLine()))
}

// Metadata carries the receipt into the output metadata.
func (r *FedRepResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

func fmtFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.4g", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func denseOf(r, c int, data []float64) *mat.Dense {
	if r == 0 || c == 0 {
		return &mat.Dense{}
	}
	return mat.NewDense(r, c, data)
}

// rowsOf is a matrix as its rows, for JSON (mat.Dense marshals as {}).
func rowsOf(m *mat.Dense) [][]float64 {
	if m == nil || m.IsEmpty() {
		return nil
	}
	r, _ := m.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = mat.Row(nil, i, m)
	}
	return out
}

// MarshalJSON encodes every released field, the components as rows (one
// per column of the data, k values each).
func (r *PCAResult) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		Components [][]float64
		Values     []float64   `json:",omitempty"`
		Support    []int       `json:",omitempty"`
		Right      [][]float64 `json:",omitempty"`
		Gap        float64     `json:",omitempty"`
		Center     []float64   `json:",omitempty"`
		// TotalVariance and ExplainedVarianceRatio: method gauss only.
		TotalVariance          float64   `json:",omitempty"`
		ExplainedVarianceRatio []float64 `json:",omitempty"`
		Method                 string
		Columns                []string
		Receipt                *Receipt
	}{rowsOf(r.Components), r.Values, r.Support, rowsOrNil(r.Right), r.Gap, r.Center, r.TotalVariance, r.ExplainedVarianceRatio, r.Method, r.Columns, r.Receipt})
}

// MarshalJSON encodes every released field, U as rows.
func (r *FedRepResult) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		U       [][]float64
		Columns []string
		Receipt *Receipt
	}{rowsOf(r.U), r.Columns, r.Receipt})
}
