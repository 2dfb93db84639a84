package release

// private_sum, private_histogram and private_quantile: the column analyses
// of mechanisms/tabular (a bounded sum with discrete Laplace or Gaussian
// noise, a histogram over a public domain, the exponential mechanism for a
// quantile). The planners resolve the call's column against the public
// schema (its bounds or its categorical domain) and fix everything before
// the charge; the runs read the one column through Data.Columns and
// cannot fail on its values.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// Sum is a private_sum release.
type Sum struct {
	Value float64
}

// Histogram is a private_histogram release: one noisy count per key, in
// the order of the public domain.
type Histogram struct {
	Keys   []string
	Counts []float64
}

// Quantile is a private_quantile release.
type Quantile struct {
	Q, Value float64
}

// tabColumn is a call's column as the public schema describes it.
type tabColumn struct {
	name    string
	numeric bool
	lo, hi  float64  // numeric columns with bounds
	bounded bool     // numeric: the owner declared bounds
	domain  []string // categorical columns
}

// columnOf resolves the col keyword. Unknown columns and centred data are
// refused here, before the charge.
func columnOf(fn string, src Ref, a *Args) tabColumn {
	sc := src.Schema
	col := a.Str("col")
	if dom, ok := sc.Categorical[col]; ok {
		return tabColumn{name: col, domain: dom}
	}
	for _, c := range sc.Columns {
		if c != col {
			continue
		}
		if sc.Center == "public-mean" {
			panic(Errorf(NameArgumentError, "%s: dataset %q was registered with --center public-mean, so its stored values of %q are centred on a public mean; sums, histograms and quantiles of a column need the data registered without centring", fn, src.Name, col))
		}
		b, ok := sc.Bounds[col]
		return tabColumn{name: col, numeric: true, lo: b[0], hi: b[1], bounded: ok}
	}
	cats := make([]string, 0, len(sc.Categorical))
	for c := range sc.Categorical {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	msg := fmt.Sprintf("%s: no column %q; numeric columns: %s", fn, col, listOrNone(sc.Columns))
	if len(cats) > 0 {
		msg += "; categorical columns: " + strings.Join(cats, ", ")
	}
	panic(Errorf(NameArgumentError, "%s", msg))
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// needBounds refuses a numeric column without public bounds and a
// categorical column, for the functions of values (sum, quantile).
func (c tabColumn) needBounds(fn string) {
	if !c.numeric {
		panic(Errorf(NameArgumentError, "%s: column %q is categorical; %s needs a numeric column with public bounds (private_histogram counts a categorical column's categories)", fn, c.name, fn))
	}
	if !c.bounded {
		panic(noBounds(fn, c.name))
	}
}

func noBounds(fn, col string) *Error {
	return Errorf(NameArgumentError, "%s: column %q has no public bounds; the data owner must declare them at registration (`privnotes dataset add … --bounds %s=lo:hi`): the noise is calibrated to them, so they cannot come from the data", fn, col, col)
}

// tabErr turns a mechanism's fixed-text planning error into an
// ArgumentError naming the call.
func tabErr(fn string, c tabColumn, err error) *Error {
	switch {
	case errors.Is(err, tabular.ErrBounds), errors.Is(err, tabular.ErrBoundsRange), errors.Is(err, tabular.ErrNarrowBins):
		return Errorf(NameArgumentError, "%s: the public bounds [%v, %v] of column %q: %v", fn, c.lo, c.hi, c.name, err)
	}
	return Errorf(NameArgumentError, "%s: %v", fn, err)
}

// registeredRelation is the neighbouring relation the owner registered,
// which binds the column analyses (they have no neighbour keyword).
func registeredRelation(fn string, src Ref) accounting.Neighbour {
	nb, err := accounting.ParseNeighbour(src.Schema.Neighbour)
	if err != nil {
		panic(Errorf(NameDatasetError, "%s: dataset %q has an unknown neighbouring relation %q in the registry: run `privnotes ledger verify`", fn, src.Name, src.Schema.Neighbour))
	}
	return nb
}

// unitWords names the privacy unit and its rule for a receipt's note.
func unitWords(sc ledger.Schema, userRule string) (unit, rule string) {
	if sc.Unit == "user" {
		return "users", "; user-level: " + userRule
	}
	return "rows", ""
}

// zcdpAdvice is the note of a pure-ε release on a dataset whose accountant
// composes in zCDP, where it costs ρ = ε²/2.
func zcdpAdvice(sc ledger.Schema, eps float64, gaussianHint bool) string {
	if sc.Accountant != accounting.ModeZCDP.String() {
		return ""
	}
	s := fmt.Sprintf(". Under this dataset's zcdp accountant a pure ε costs ρ=ε²/2=%.4g", accounting.PureToRho(eps))
	if gaussianHint {
		s += "; give delta (for example delta=1e-6) for Gaussian noise, whose cost composes far better with other calls"
	}
	return s
}

// columnSource is the one column of a call, after the charge.
func columnSource(d *Data, col string) (rows.Source, error) {
	if d.Columns == nil {
		return nil, errors.New("release: the data layer gives no column access")
	}
	return d.Columns([]string{col})
}

func planSum(env *Local, src Ref, a *Args) *Plan {
	const fn = "private_sum"
	sc := src.Schema
	c := columnOf(fn, src, a)
	c.needBounds(fn)
	eps, delta := a.Float("eps"), a.Float("delta")
	nb := registeredRelation(fn, src)
	sp, err := tabular.PlanSum(c.lo, c.hi, eps, delta, nb)
	if err != nil {
		panic(tabErr(fn, c, err))
	}
	if src.Derived != nil && nb == accounting.ReplaceOne {
		// A subset of replace-one data: replacing a row of the parent may
		// add it to the subset or remove it, so the subset's neighbours
		// are added, removed or replaced rows. The sum's sensitivity is
		// the larger of the two relations' (the only mechanism where
		// replace-one's is not already the larger: bounds that exclude 0).
		ar, err := tabular.PlanSum(c.lo, c.hi, eps, delta, accounting.AddRemove)
		if err != nil {
			panic(tabErr(fn, c, err))
		}
		if ar.Sensitivity > sp.Sensitivity {
			sp = ar
		}
	}
	unit, rule := unitWords(sc, "each user adds the mean of their clamped values")
	method := "sum/laplace"
	kind := fmt.Sprintf("discrete Laplace, scale b=%.4g", sp.Scale)
	calib := fmt.Sprintf("pure ε-DP with ε=%v%s", eps, zcdpAdvice(sc, eps, true))
	if sp.Gaussian {
		method = "sum/gaussian"
		kind = fmt.Sprintf("discrete Gaussian, std %.4g", sp.Scale)
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v via zCDP: ρ=%.4g", eps, delta, sp.Rho)
	}
	ev := sp.Event
	ev.Mechanism = method
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: []string{c.name},
		Noise: fmt.Sprintf("%s (sensitivity %.4g under %s, plus %.3g for the sum's floating-point rounding)", kind, sp.Sensitivity, nb, sp.Excess),
		Note: fmt.Sprintf("sum over %s of column %q clamped to its public bounds [%v, %v] (a NaN counts as 0 clamped)%s; %s; noise on the lattice of its scale",
			unit, c.name, c.lo, c.hi, rule, calib),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "bounds": []float64{c.lo, c.hi}})}
	users := sc.Unit == "user"
	p.run = func(ctx context.Context, d *Data) (any, error) {
		col, err := columnSource(d, c.name)
		if err != nil {
			return nil, err
		}
		v, err := sp.Run(ctx, col, users, env.sampler())
		if err != nil {
			return nil, err
		}
		return &Sum{Value: v}, nil
	}
	return p
}

func planHistogram(env *Local, src Ref, a *Args) *Plan {
	const fn = "private_histogram"
	sc := src.Schema
	c := columnOf(fn, src, a)
	nbins := a.Int("bins")
	var bins tabular.Binning
	var desc string
	if c.numeric {
		if !c.bounded {
			panic(noBounds(fn, c.name))
		}
		if nbins == 0 {
			panic(Errorf(NameArgumentError, "%s: column %q is numeric: give bins=N (1..%d), the number of equal-width bins over its public bounds [%v, %v]", fn, c.name, tabular.MaxBins, c.lo, c.hi))
		}
		nb, err := tabular.NewNumericBins(c.lo, c.hi, nbins)
		if err != nil {
			panic(tabErr(fn, c, err))
		}
		bins = nb
		desc = fmt.Sprintf("%d equal-width bins over the public bounds [%v, %v] (a value falls in the last bin whose left edge is at or below it; NaN in none)", nbins, c.lo, c.hi)
	} else {
		if nbins != 0 {
			panic(Errorf(NameArgumentError, "%s: column %q is categorical: it has one bin per category of its public domain (and %q), so bins must be left out", fn, c.name, ledger.OtherCategory))
		}
		cb, err := tabular.NewCategoryBins(c.domain, ledger.OtherCategory)
		if err != nil {
			panic(Errorf(NameArgumentError, "%s: column %q: %v", fn, c.name, err))
		}
		bins = cb
		desc = fmt.Sprintf("one bin per category of the public domain (%d) and %q for every other value", len(c.domain), ledger.OtherCategory)
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	nb := registeredRelation(fn, src)
	hp, err := tabular.PlanHistogram(bins, eps, delta, nb)
	if err != nil {
		panic(tabErr(fn, c, err))
	}
	unit, rule := unitWords(sc, "each user counts once, in the bin of their first row")
	method := "histogram/laplace"
	kind := fmt.Sprintf("discrete Laplace, scale b=%.4g per count (ℓ1 sensitivity %v under %s)", hp.Scale, hp.L1, nb)
	calib := fmt.Sprintf("pure ε-DP with ε=%v%s", eps, zcdpAdvice(sc, eps, true))
	if hp.Gaussian {
		method = "histogram/gaussian"
		kind = fmt.Sprintf("discrete Gaussian, std %.4g per count (ℓ2 sensitivity %.4g under %s)", hp.Scale, hp.L2, nb)
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v via zCDP: ρ=%.4g", eps, delta, hp.Rho)
	}
	ev := hp.Event
	ev.Mechanism = method
	keys := bins.Keys()
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: []string{c.name},
		Noise: kind,
		Note: fmt.Sprintf("counts of %s of column %q in %s%s; %s; every key is released, counts rounded to integers",
			unit, c.name, desc, rule, calib),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "keys": len(keys)})}
	users := sc.Unit == "user"
	p.run = func(ctx context.Context, d *Data) (any, error) {
		col, err := columnSource(d, c.name)
		if err != nil {
			return nil, err
		}
		counts, err := hp.Run(ctx, col, users, env.sampler())
		if err != nil {
			return nil, err
		}
		return &Histogram{Keys: append([]string(nil), keys...), Counts: counts}, nil
	}
	return p
}

func planQuantile(env *Local, src Ref, a *Args) *Plan {
	const fn = "private_quantile"
	sc := src.Schema
	c := columnOf(fn, src, a)
	c.needBounds(fn)
	eps, delta, q := a.Float("eps"), a.Float("delta"), a.Float("q")
	if delta != 0 {
		panic(Errorf(NameArgumentError, "%s: the exponential mechanism is pure ε-DP: leave delta out (delta=%v was given; it must be 0)", fn, delta))
	}
	qp, err := tabular.PlanQuantile(c.lo, c.hi, q, eps)
	if err != nil {
		panic(tabErr(fn, c, err))
	}
	nb := registeredRelation(fn, src)
	unit, rule := unitWords(sc, "one value per user, the mean of their clamped values")
	ev := qp.Event
	ev.Mechanism = "quantile/exponential"
	p := &Plan{Func: fn, Method: "quantile/exponential", Cost: ev, Eps: eps, Columns: []string{c.name},
		Noise: fmt.Sprintf("exponential mechanism, weights falling by R=%.6g ≤ e^(ε/2) per rank of distance from q·n (utility sensitivity 1 under %s)", qp.Ratio(), nb),
		Note: fmt.Sprintf("q=%v of %s of column %q clamped to its public bounds [%v, %v]%s; pure ε-DP with ε=%v; the value is a point of the public grid of %d equal steps over the bounds, drawn exactly with integer arithmetic%s",
			q, unit, c.name, c.lo, c.hi, rule, eps, qp.Grid, zcdpAdvice(sc, eps, false)),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "bounds": []float64{c.lo, c.hi}, "grid": qp.Grid})}
	users := sc.Unit == "user"
	p.run = func(ctx context.Context, d *Data) (any, error) {
		col, err := columnSource(d, c.name)
		if err != nil {
			return nil, err
		}
		v, err := qp.Run(ctx, col, users, env.sampler())
		if err != nil {
			return nil, err
		}
		return &Quantile{Q: q, Value: v}, nil
	}
	return p
}
