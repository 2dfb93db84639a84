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
	r := &RegressionResult{Model: v.Model, Columns: rel.Columns, Coef: v.Coef, Intercept: v.Intercept, Ridge: v.Ridge,
		fit: v.Fit, releaseBase: releaseBase{rel.Receipt}}
	if v.Fit != nil {
		r.R2, r.ResidualStd = v.Fit.R2, v.Fit.ResidualStd
	}
	return r
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
	// R2 and ResidualStd are a linear fit's R² and residual std on its
	// training rows (clamped to the bounds), released when the call asked
	// for r2=true; 0 otherwise, for a logistic fit, and where the noisy
	// statistics leave them undefined (release.LinearFit).
	R2, ResidualStd float64
	fit             *release.LinearFit
	intervals       map[float64][2][]float64
	releaseBase
}

// CoefInterval returns the level confidence interval (level in (0, 1),
// e.g. 0.95) of coefficient i (the i-th x column) of a linear fit made
// with r2=true: the parametric bootstrap for DP of Ferrando, Wang and
// Sheldon (2022) from the released statistics and their public noise
// scales, post-processing only. A logistic fit has none: noisy gradient
// descent releases only its last iterate, whose noise has no closed form
// to re-draw around (docs/mechanisms.md).
func (r *RegressionResult) CoefInterval(i int, level float64) (lo, hi float64) {
	const fn = "CoefInterval"
	if r == nil || i < 0 || i >= len(r.Coef) {
		panic(errorf(NameArgumentError, "%s: coefficient %d does not exist (the fit has %d)", fn, i, len(r.Coef)))
	}
	return r.interval(fn, i+1, level)
}

// InterceptInterval is CoefInterval for the intercept.
func (r *RegressionResult) InterceptInterval(level float64) (lo, hi float64) {
	return r.interval("InterceptInterval", 0, level)
}

// interval is term k's interval (0 the intercept), computed once per level.
func (r *RegressionResult) interval(fn string, k int, level float64) (float64, float64) {
	mustLevel(fn, level)
	if r == nil || r.fit == nil {
		if r != nil && r.Model == "logistic" {
			panic(errorf(NameArgumentError, "%s: a logistic fit carries no coefficient intervals: noisy gradient descent releases only its last iterate", fn))
		}
		panic(errorf(NameArgumentError, "%s: this fit carries no intervals: call private_linear_regression with r2=true", fn))
	}
	iv, ok := r.intervals[level]
	if !ok {
		lo, hi := r.fit.Intervals(level)
		iv = [2][]float64{lo, hi}
		if r.intervals == nil {
			r.intervals = map[float64][2][]float64{}
		}
		r.intervals[level] = iv
	}
	return iv[0][k], iv[1][k]
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
	if r.fit == nil {
		fmt.Fprintf(&b, "%s\n  %-20s %.6g\n", r.title(), "intercept", r.Intercept)
		for j, c := range r.Coef {
			fmt.Fprintf(&b, "  %-20s %.6g\n", columnName(r.Columns, j), c)
		}
		return r.text(b.String())
	}
	lo, hi := r.InterceptInterval(release.DefaultLevel)
	fmt.Fprintf(&b, "%s\n  %-20s %-12s %s\n  %-20s %-12.6g [%.4g, %.4g]\n", r.title(), "term", "coefficient", "95 % interval", "intercept", r.Intercept, lo, hi)
	for j, c := range r.Coef {
		lo, hi := r.CoefInterval(j, release.DefaultLevel)
		fmt.Fprintf(&b, "  %-20s %-12.6g [%.4g, %.4g]\n", columnName(r.Columns, j), c, lo, hi)
	}
	fmt.Fprintf(&b, "  R² %.4g, residual std %.4g (on the training rows, clamped to the bounds)\n", r.R2, r.ResidualStd)
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
	if r.fit == nil {
		fmt.Fprintf(&b, "<p>%s</p><table><tr><th>term</th><th>coefficient</th></tr><tr><td>intercept</td><td>%.6g</td></tr>",
			html.EscapeString(r.title()), r.Intercept)
		for j, c := range r.Coef {
			fmt.Fprintf(&b, "<tr><td><code>%s</code></td><td>%.6g</td></tr>", html.EscapeString(columnName(r.Columns, j)), c)
		}
		b.WriteString("</table>")
		return r.html(b.String())
	}
	lo, hi := r.InterceptInterval(release.DefaultLevel)
	fmt.Fprintf(&b, "<p>%s</p><table><tr><th>term</th><th>coefficient</th><th>95 %% interval</th></tr><tr><td>intercept</td><td>%.6g</td><td>[%.4g, %.4g]</td></tr>",
		html.EscapeString(r.title()), r.Intercept, lo, hi)
	for j, c := range r.Coef {
		lo, hi := r.CoefInterval(j, release.DefaultLevel)
		fmt.Fprintf(&b, "<tr><td><code>%s</code></td><td>%.6g</td><td>[%.4g, %.4g]</td></tr>", html.EscapeString(columnName(r.Columns, j)), c, lo, hi)
	}
	fmt.Fprintf(&b, "</table><p>R² %.4g, residual std %.4g (on the training rows, clamped to the bounds)</p>", r.R2, r.ResidualStd)
	return r.html(b.String())
}

// Metadata carries the receipt into the output metadata.
func (r *RegressionResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}
