package release

// private_linear_regression and private_logistic_regression: AdaSSP
// (Wang 2018) and noisy full-batch gradient descent (Bassily, Smith and
// Thakurta 2014) of mechanisms/regression, both in zCDP. The planners
// resolve y and x against the public schema (numeric columns need the
// owner's bounds; the analyst cannot give them, as for the column
// analyses), fix every noise scale before the charge, and the runs read
// the x columns and y through Data.Columns.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/mechanisms/regression"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// Regression is a private_linear_regression or private_logistic_regression
// release: one coefficient per x column, in order, and the intercept.
type Regression struct {
	// Model is "linear" or "logistic" (Predict gives a probability).
	Model     string
	Coef      []float64
	Intercept float64
	// Ridge is the ridge λ AdaSSP chose (a DP output); 0 for logistic.
	Ridge float64
	// Fit is a linear fit's R², residual std and what its coefficient
	// intervals need, when the call asked for r2=true; nil otherwise.
	Fit *LinearFit
}

// LinearFit is a linear fit's R², residual std and the released
// statistics its bootstrap intervals redraw (regression.LinearFit): the
// runtime reaches it through the execution core, as every mechanism.
type LinearFit = regression.LinearFit

// regColumns resolves y and x for fn: row-level, uncentred data, x
// numeric columns with owner bounds, listed once, y not among them.
// It returns the bounds of x and of a numeric y (or y's domain when it is
// categorical).
func regColumns(fn string, src Ref, a *Args) (x []regression.Bounds, y tabColumn, err error) {
	sc := src.Schema
	if sc.Unit == "user" {
		return nil, y, Errorf(NameArgumentError, "%s: dataset %q is user-level; regression is implemented for row-level data only (each row a privacy unit): ask the data owner for a row-level registration", fn, src.Name)
	}
	if sc.Center == "public-mean" {
		return nil, y, Errorf(NameArgumentError, "%s: dataset %q was registered with --center public-mean, so its stored values are centred on a public mean; regression needs the data registered without centring", fn, src.Name)
	}
	cols := a.Strs("x")
	if len(cols) == 0 || len(cols) > regression.MaxFeatures {
		return nil, y, Errorf(NameArgumentError, "%s: give x=[]string{...}, 1 to %d numeric feature columns (numeric columns: %s)", fn, regression.MaxFeatures, listOrNone(sc.Columns))
	}
	seen := map[string]bool{}
	for _, name := range cols {
		if seen[name] {
			return nil, y, Errorf(NameArgumentError, "%s: column %q is listed twice in x", fn, name)
		}
		seen[name] = true
		c, err := columnOf(fn, src, &Args{Vals: map[string]any{"col": name}})
		if err != nil {
			return nil, y, err
		}
		if err := c.needBounds(fn); err != nil {
			return nil, y, err
		}
		x = append(x, regression.Bounds{Lo: c.lo, Hi: c.hi})
	}
	y, err = columnOf(fn, src, &Args{Vals: map[string]any{"col": a.Str("y")}})
	if err != nil {
		return nil, y, err
	}
	if seen[y.name] {
		return nil, y, Errorf(NameArgumentError, "%s: the target %q is also a feature in x: leave it out of x", fn, y.name)
	}
	return x, y, nil
}

// regErr turns a mechanism's fixed-text planning error into an
// ArgumentError naming the call (and the columns for bounds).
func regErr(fn string, cols []string, err error) *Error {
	if errors.Is(err, regression.ErrBounds) {
		return Errorf(NameArgumentError, "%s: the public bounds of %s: %v", fn, strings.Join(cols, ", "), err)
	}
	return argErr(fn, err)
}

// regMemory is a regression's: a streamed pass over rows of the dataset's
// width, and the sums' accumulators (m float64 per worker and tree level).
func regMemory(p *Plan, src Ref, m int, advice string) {
	p.setStreamMemory(src, mul(i64(m), 8*64), 0,
		fmt.Sprintf("a pass over rows of width %d, %d sums", readWidth(src), m), advice)
}

func planLinearRegression(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateLinearRegression.Name
	x, y, err := regColumns(fn, src, a)
	if err != nil {
		return nil, err
	}
	if err := y.needBounds(fn); err != nil {
		return nil, err
	}
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	// A subset of replace-one data has added, removed or replaced rows as
	// neighbours; every AdaSSP sensitivity under replace-one is at least
	// its add-remove one, so the registered relation covers the subset.
	eps, delta, r2 := a.Float("eps"), a.Float("delta"), a.Bool("r2")
	xcols := a.Strs("x")
	lp, err := regression.PlanLinear(x, regression.Bounds{Lo: y.lo, Hi: y.hi}, eps, delta, nb, gaussianCalibration(src) == tabular.CalibrateGDP, r2)
	if err != nil {
		return nil, regErr(fn, append(append([]string(nil), xcols...), y.name), err)
	}
	ev := lp.Event
	const method = "regression/adassp"
	ev.Mechanism = method
	bounds := make([][]float64, 0, len(x)+1)
	for _, b := range x {
		bounds = append(bounds, []float64{b.Lo, b.Hi})
	}
	bounds = append(bounds, []float64{y.lo, y.hi})
	noiseText := fmt.Sprintf("discrete Gaussian: std %.4g on λ_min(XᵀX) (sensitivity %.4g), %.4g per entry of XᵀX (sensitivity %.4g), %.4g per entry of Xᵀy (sensitivity %.4g), under %s, floating-point rounding included",
		lp.Min.Sigma, lp.Min.Sens, lp.XX.Sigma, lp.XX.Sens, lp.XY.Sigma, lp.XY.Sens, nb)
	split := "a third each to a lower bound of λ_min (which sets the ridge λ), XᵀX and Xᵀy"
	params := map[string]any{"neighbour": nb.String(), "bounds": bounds}
	if r2 {
		noiseText += fmt.Sprintf("; %.4g on yᵀy (sensitivity %.4g)", lp.YY.Sigma, lp.YY.Sens)
		split = "20 % to yᵀy (for R², the residual std and the coefficient intervals), the rest a third each to a lower bound of λ_min (which sets the ridge λ), XᵀX and Xᵀy"
		params[ErrorParam] = ErrorModel{Kind: ErrBootstrap, Noise: ErrGaussian, Scale: lp.XY.Sigma, CountScale: lp.XX.Sigma, Replicates: regression.BootstrapReps}
	}
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: append([]string(nil), xcols...),
		Noise: noiseText,
		Note: fmt.Sprintf("AdaSSP least squares of %q on %s with an intercept: rows clamped to the columns' public bounds and each column mapped to [−1, 1] by them (a NaN counts as the midpoint), the coefficients mapped back; calibrated to ε=%v, δ=%v %s, %s",
			y.name, strings.Join(xcols, ", "), eps, delta, calibrationWords(ev), split),
		Params: publicParams(a, params)}
	q := len(x) + 1
	regMemory(p, src, q*(q+1)/2+q+1, "Fit on fewer columns")
	cols := append(append([]string(nil), xcols...), y.name)
	p.run = func(ctx context.Context, d *Data) (any, error) {
		s, err := columnsSource(d, cols)
		if err != nil {
			return nil, err
		}
		m, err := lp.Run(ctx, s, env.sampler())
		if err != nil {
			return nil, err
		}
		return &Regression{Model: "linear", Coef: m.Coef, Intercept: m.Intercept, Ridge: m.Ridge, Fit: m.Fit}, nil
	}
	return p, nil
}

func planLogisticRegression(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateLogisticRegression.Name
	x, y, err := regColumns(fn, src, a)
	if err != nil {
		return nil, err
	}
	pos, label := -1, fmt.Sprintf("%q clamped to [0, 1]", y.name)
	positive := optStr(a, "positive")
	switch {
	case !y.numeric && positive == "":
		return nil, Errorf(NameArgumentError, "%s: the label %q is categorical: name its positive class with positive=\"…\", one of %s", fn, y.name, strings.Join(y.domain, ", "))
	case !y.numeric:
		for i, c := range y.domain {
			if c == positive {
				pos = i
			}
		}
		if pos < 0 {
			return nil, Errorf(NameArgumentError, "%s: positive=%q is not a category of %q; its public domain: %s", fn, positive, y.name, strings.Join(y.domain, ", "))
		}
		label = fmt.Sprintf("1 where %q is %q, else 0", y.name, positive)
	case positive != "":
		return nil, Errorf(NameArgumentError, "%s: the label %q is numeric (0/1, clamped to [0, 1]): leave positive out, it names a categorical label's positive class", fn, y.name)
	}
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	// As for AdaSSP, replace-one's sensitivities bound add-remove's, so
	// the registered relation covers a subset's neighbours.
	eps, delta, l2, iters := a.Float("eps"), a.Float("delta"), a.Float("l2"), a.Int("iters")
	xcols := a.Strs("x")
	gp, err := regression.PlanLogistic(x, pos, iters, l2, eps, delta, nb, gaussianCalibration(src) == tabular.CalibrateGDP)
	if err != nil {
		return nil, regErr(fn, xcols, err)
	}
	ev := gp.Event
	const method = "regression/noisy-gd"
	ev.Mechanism = method
	bounds := make([][]float64, 0, len(x))
	for _, b := range x {
		bounds = append(bounds, []float64{b.Lo, b.Hi})
	}
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: append([]string(nil), xcols...),
		Noise: fmt.Sprintf("discrete Gaussian: std %.4g per gradient coordinate per step (sensitivity %.4g under %s, floating-point rounding included), %.4g on the row count",
			gp.Grad.Sigma, gp.Grad.Sens, nb, gp.Count.Sigma),
		Note: fmt.Sprintf("logistic regression of the label %s on %s with an intercept by %d noisy full-batch gradient steps (step %.4g, l2=%v): rows clamped to the features' public bounds and each feature mapped to [−1, 1] by them (l2 acts on that scale); calibrated to ε=%v, δ=%v %s, 90%% over the steps evenly, 10%% to the row count that scales the gradients",
			label, strings.Join(xcols, ", "), iters, gp.Step, l2, eps, delta, calibrationWords(ev)),
		Params: publicParams(a, map[string]any{"neighbour": nb.String(), "bounds": bounds})}
	regMemory(p, src, len(x)+2, "Fit on fewer columns")
	p.reportsSteps(iters)
	cols := append(append([]string(nil), xcols...), y.name)
	p.run = func(ctx context.Context, d *Data) (any, error) {
		s, err := columnsSource(d, cols)
		if err != nil {
			return nil, err
		}
		m, err := gp.Run(ctx, s, env.sampler(), p.progress.step)
		if err != nil {
			return nil, err
		}
		return &Regression{Model: "logistic", Coef: m.Coef, Intercept: m.Intercept}, nil
	}
	return p, nil
}

// EncodeRelease implements Value.
func (v *Regression) EncodeRelease(e *Encoder) {
	e.String("model", v.Model)
	e.Floats("coef", v.Coef)
	e.Float("intercept", v.Intercept)
	e.Float("ridge", v.Ridge)
	if f := v.Fit; f != nil {
		e.Floats("fit", []float64{f.R2, f.ResidualStd, f.N, f.YY, f.Ridge, f.SigmaXX, f.SigmaXY, f.CentreY, f.ScaleY})
		e.Floats("fit_xx", f.XX)
		e.Floats("fit_xy", f.XY)
		e.Floats("fit_theta", f.Theta)
		e.Floats("fit_centres", f.Centres)
		e.Floats("fit_scales", f.Scales)
	}
}

// DecodeRelease implements Value.
func (v *Regression) DecodeRelease(d *Decoder) error {
	v.Model = d.String("model")
	v.Coef = d.Floats("coef")
	v.Intercept = d.Float("intercept")
	v.Ridge = d.Float("ridge")
	// A release without r2 (and every release stored before r2 existed)
	// has no fit fields. A fit stored before the rows were unit-scaled
	// (8 numbers, no fit_scales) was fitted on rows only centred: scales
	// of 1 are exactly its map back.
	if fs := d.Floats("fit"); len(fs) == 8 || len(fs) == 9 {
		v.Fit = &regression.LinearFit{R2: fs[0], ResidualStd: fs[1], N: fs[2], YY: fs[3], Ridge: fs[4], SigmaXX: fs[5], SigmaXY: fs[6], CentreY: fs[7], ScaleY: 1,
			XX: d.Floats("fit_xx"), XY: d.Floats("fit_xy"), Theta: d.Floats("fit_theta"), Centres: d.Floats("fit_centres")}
		if len(fs) == 9 {
			v.Fit.ScaleY, v.Fit.Scales = fs[8], d.Floats("fit_scales")
		} else {
			for range v.Fit.Centres {
				v.Fit.Scales = append(v.Fit.Scales, 1)
			}
		}
		if q := len(v.Fit.XY); q != len(v.Coef)+1 || len(v.Fit.XX) != q*(q+1)/2 || len(v.Fit.Theta) != q || len(v.Fit.Centres) != q-1 || len(v.Fit.Scales) != q-1 {
			return fmt.Errorf("a regression's fit has inconsistent sizes")
		}
	}
	return d.Err()
}
