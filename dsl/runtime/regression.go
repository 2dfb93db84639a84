package runtime

// private_linear_regression and private_logistic_regression: their result
// (mechanisms/regression through the execution core).

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/privnotes/privnotes/dsl/release"
)

func init() { resultType(regressionResult) }

func regressionResult(rel *release.Release) *RegressionResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &RegressionResult{releaseBase: releaseBase{rel.Receipt}}
	}
	v := rel.Value.(*release.Regression)
	return &RegressionResult{Model: v.Model, Columns: rel.Columns, Coef: v.Coef, Intercept: v.Intercept, Ridge: v.Ridge,
		releaseBase: releaseBase{rel.Receipt}}
}

// RegressionResult is a private_linear_regression or
// private_logistic_regression release: a fitted model, all of it the
// post-processing of noisy statistics.
type RegressionResult struct {
	// Model is "linear" or "logistic".
	Model string
	// Columns are the feature columns, in the order of Coef.
	Columns []string
	// Coef holds one coefficient per feature column; Intercept the
	// constant term (on the columns' own scale).
	Coef      []float64
	Intercept float64
	// Ridge is the ridge λ AdaSSP added (itself private; 0 for logistic).
	Ridge float64
	releaseBase
}

// Predict returns the model's prediction for row (one value per feature
// column, in order): Intercept + Σ Coef_j·row_j for a linear model, the
// positive class's probability σ(that) for a logistic one. Missing
// trailing values count as 0.
func (r *RegressionResult) Predict(row []float64) float64 {
	if r == nil {
		return math.NaN()
	}
	v := r.Intercept
	for j, c := range r.Coef {
		if j < len(row) {
			v += c * row[j]
		}
	}
	if r.Model == "logistic" {
		if v >= 0 {
			return 1 / (1 + math.Exp(-v))
		}
		e := math.Exp(v)
		return e / (1 + e)
	}
	return v
}

func (r *RegressionResult) title() string {
	if r.Model == "logistic" {
		return "private logistic regression (Predict gives the positive class's probability)"
	}
	return fmt.Sprintf("private linear regression (ridge λ = %.4g)", r.Ridge)
}

func (r *RegressionResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Receipt == nil || r.Coef == nil); ok {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  %-20s %.6g\n", r.title(), "intercept", r.Intercept)
	for j, c := range r.Coef {
		fmt.Fprintf(&b, "  %-20s %.6g\n", columnName(r.Columns, j), c)
	}
	return r.text(b.String())
}

// HTML renders the coefficients and the receipt.
func (r *RegressionResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Receipt == nil || r.Coef == nil); ok {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<p>%s</p><table><tr><th>term</th><th>coefficient</th></tr><tr><td>intercept</td><td>%.6g</td></tr>",
		html.EscapeString(r.title()), r.Intercept)
	for j, c := range r.Coef {
		fmt.Fprintf(&b, "<tr><td><code>%s</code></td><td>%.6g</td></tr>", html.EscapeString(columnName(r.Columns, j)), c)
	}
	b.WriteString("</table>")
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *RegressionResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}
