package release

// private_sum, private_histogram and private_quantile: the column analyses
// of mechanisms/tabular (a bounded sum with discrete Laplace or Gaussian
// noise, a histogram over a public domain, the exponential mechanism for a
// quantile). The planners resolve the call's column against the public
// schema (its bounds or its categorical domain) and fix everything before
// the charge, including the data pass as a statement of the data engine
// (tabsql.go); the runs execute it on a snapshot, or read the one column
// through Data.Columns on data without an engine, and cannot fail on its
// values.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
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
func columnOf(fn string, src Ref, a *Args) (tabColumn, error) {
	sc := src.Schema
	col := a.Str("col")
	if dom, ok := sc.Categorical[col]; ok {
		return tabColumn{name: col, domain: dom}, nil
	}
	for _, c := range sc.Columns {
		if c != col {
			continue
		}
		if sc.Center == "public-mean" {
			return tabColumn{}, Errorf(NameArgumentError, "%s: dataset %q was registered with --center public-mean, so its stored values of %q are centred on a public mean; sums, histograms and quantiles of a column need the data registered without centring", fn, src.Name, col)
		}
		b, ok := sc.Bounds[col]
		return tabColumn{name: col, numeric: true, lo: b[0], hi: b[1], bounded: ok}, nil
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
	return tabColumn{}, Errorf(NameArgumentError, "%s", msg)
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// needBounds refuses a numeric column without public bounds and a
// categorical column, for the functions of values (sum, quantile).
func (c tabColumn) needBounds(fn string) error {
	if !c.numeric {
		return Errorf(NameArgumentError, "%s: column %q is categorical; %s needs a numeric column with public bounds (private_histogram counts a categorical column's categories)", fn, c.name, fn)
	}
	if !c.bounded {
		return noBounds(fn, c.name)
	}
	return nil
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
func registeredRelation(fn string, src Ref) (accounting.Neighbour, error) {
	nb, err := accounting.ParseNeighbour(src.Schema.Neighbour)
	if err != nil {
		return 0, Errorf(NameDatasetError, "%s: dataset %q has an unknown neighbouring relation %q in the registry: run `privnotes ledger verify`", fn, src.Name, src.Schema.Neighbour)
	}
	return nb, nil
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

// boundedRangeAdvice is the note of an exponential-mechanism release on a
// dataset whose accountant composes in zCDP: it is ε-bounded range, which
// costs ρ = ε²/8 there (a quarter of a general pure ε's ε²/2).
func boundedRangeAdvice(sc ledger.Schema, eps float64) string {
	if sc.Accountant != accounting.ModeZCDP.String() {
		return ""
	}
	return fmt.Sprintf(". The exponential mechanism is ε-bounded range: this dataset's zcdp accountant prices it ρ=ε²/8=%.4g", accounting.BoundedRangeToRho(eps))
}

// columnSource is the one column of a call, after the charge.
func columnSource(d *Data, col string) (rows.Source, error) {
	if d.Columns == nil {
		return nil, errors.New("release: the data layer gives no column access")
	}
	return d.Columns([]string{col})
}

func planSum(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateSum.Name
	if optStr(a, "by") != "" {
		return planGroups(env, src, a, fn, tabular.GroupSum)
	}
	if err := noGrouping(fn, a); err != nil {
		return nil, err
	}
	sc := src.Schema
	c, err := columnOf(fn, src, a)
	if err != nil {
		return nil, err
	}
	if err := c.needBounds(fn); err != nil {
		return nil, err
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	sp, err := tabular.PlanSum(c.lo, c.hi, eps, delta, nb, gaussianCalibration(src))
	if err != nil {
		return nil, tabErr(fn, c, err)
	}
	if src.Derived != nil && nb == accounting.ReplaceOne {
		// A subset of replace-one data: replacing a row of the parent may
		// add it to the subset or remove it, so the subset's neighbours
		// are added, removed or replaced rows. The sum's sensitivity is
		// the larger of the two relations' (the only mechanism where
		// replace-one's is not already the larger: bounds that exclude 0).
		ar, err := tabular.PlanSum(c.lo, c.hi, eps, delta, accounting.AddRemove, gaussianCalibration(src))
		if err != nil {
			return nil, tabErr(fn, c, err)
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
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v %s", eps, delta, calibrationWords(sp.Event))
	}
	ev := sp.Event
	ev.Mechanism = method
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: []string{c.name},
		Noise: fmt.Sprintf("%s (sensitivity %.4g under %s, plus %.3g for the sum's floating-point rounding)", kind, sp.Sensitivity, nb, sp.Excess),
		Note: fmt.Sprintf("sum over %s of column %q clamped to its public bounds [%v, %v] (a NaN counts as 0 clamped)%s; %s; noise on the lattice of its scale",
			unit, c.name, c.lo, c.hi, rule, calib),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "bounds": []float64{c.lo, c.hi},
			ErrorParam: noiseModel(sp.Gaussian, sp.Scale, false, sp.Excess)})}
	p.setWindowedMemory(env, src, 0, 16, fmt.Sprintf("a pass over rows of width %d", readWidth(src)), "Sum a subset with fewer columns")
	sp.UserWindow = p.userWindow
	users := sc.Unit == "user"
	// The clamped sum in the engine, on the fixed-point grid: its terms
	// lie within half a grid step of the clamped values (of the users'
	// means) and its conversion rounds less than the pairwise sum's
	// SumExcess, which the plan charges (TestTabularGridWithinPlan).
	var pass *tabPass
	if users {
		pass, err = newTabUserPass(src, c, nil, 0, func(term *sqlplan.Expr) []sqlplan.Aggregate {
			return []sqlplan.Aggregate{tabSumOf(term, c.lo, c.hi)}
		}, nil)
	} else {
		pass, err = newTabPass(src, nil, []sqlplan.Aggregate{tabSum(c.name, c.lo, c.hi)}, 0, nil)
	}
	if err != nil {
		return nil, err
	}
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		if pass.usable(d) {
			ex, _, err := pass.exact(ctx, d)
			if err != nil {
				return nil, err
			}
			return &Sum{Value: sp.Release(ex[0][0], env.sampler())}, nil
		}
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
	return p, nil
}

func planHistogram(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateHistogram.Name
	sc := src.Schema
	c, err := columnOf(fn, src, a)
	if err != nil {
		return nil, err
	}
	nbins := a.Int("bins")
	var bins tabular.Binning
	var desc string
	if c.numeric {
		if !c.bounded {
			return nil, noBounds(fn, c.name)
		}
		if nbins == 0 {
			return nil, Errorf(NameArgumentError, "%s: column %q is numeric: give bins=N (1..%d), the number of equal-width bins over its public bounds [%v, %v]", fn, c.name, tabular.MaxBins, c.lo, c.hi)
		}
		nb, err := tabular.NewNumericBins(c.lo, c.hi, nbins)
		if err != nil {
			return nil, tabErr(fn, c, err)
		}
		bins = nb
		desc = fmt.Sprintf("%d equal-width bins over the public bounds [%v, %v] (a value falls in the last bin whose left edge is at or below it; NaN in none)", nbins, c.lo, c.hi)
	} else {
		if nbins != 0 {
			return nil, Errorf(NameArgumentError, "%s: column %q is categorical: it has one bin per category of its public domain (and %q), so bins must be left out", fn, c.name, ledger.OtherCategory)
		}
		cb, what, err := categoryBins(a, c.domain)
		if err != nil {
			return nil, Errorf(NameArgumentError, "%s: column %q: %v", fn, c.name, err)
		}
		bins = cb
		desc = "one bin per category of the public domain: " + what
	}
	if c.numeric && !optBool(a, "other", true) {
		return nil, Errorf(NameArgumentError, "%s: other=false applies to a categorical column; column %q is numeric, binned over its public bounds with no bucket of other values: leave other out", fn, c.name)
	}
	post := countRule(a)
	eps, delta := a.Float("eps"), a.Float("delta")
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	k, err := maxGroupsOf(fn, src, a, bins.Len(), fmt.Sprintf("the number of keys of the histogram of %q", c.name))
	if err != nil {
		return nil, err
	}
	hp, err := tabular.PlanHistogram(bins, k, eps, delta, nb, gaussianCalibration(src))
	if err != nil {
		return nil, tabErr(fn, c, err)
	}
	unit, rule := unitWords(sc, fmt.Sprintf("each user counts once in each of the first %d distinct bin(s) of their rows in row order", k))
	method := "histogram/laplace"
	kind := fmt.Sprintf("discrete Laplace, scale b=%.4g per count (ℓ1 sensitivity %v under %s)", hp.Scale, hp.L1, nb)
	calib := fmt.Sprintf("pure ε-DP with ε=%v%s", eps, zcdpAdvice(sc, eps, true))
	if hp.Gaussian {
		method = "histogram/gaussian"
		kind = fmt.Sprintf("discrete Gaussian, std %.4g per count (ℓ2 sensitivity %.4g under %s)", hp.Scale, hp.L2, nb)
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v %s", eps, delta, calibrationWords(hp.Event))
	}
	ev := hp.Event
	ev.Mechanism = method
	keys := bins.Keys()
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: []string{c.name},
		Noise: kind,
		Note: fmt.Sprintf("counts of %s of column %q in %s%s; %s; every key is released, counts rounded to integers%s",
			unit, c.name, desc, rule, calib, post.note()),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "keys": len(keys), "max_groups": k,
			ErrorParam: noiseModel(hp.Gaussian, hp.Scale, true, 0)})}
	p.setStreamMemory(src, binsMemory(len(keys)), groupUserBytes(k),
		fmt.Sprintf("%d keys, a pass over rows of width %d", len(keys), readWidth(src)), "Use fewer bins")
	users := sc.Unit == "user"
	key := tabKey(sc, c.name, optBool(a, "other", true))
	if c.numeric {
		key = tabBinKey(c.name, bins.(*tabular.NumericBins))
	}
	bound := 0
	if users {
		bound = k // each user once in each of their first k bins
	}
	pass, err := newTabPass(src, []sqlplan.Key{key}, []sqlplan.Aggregate{{Name: "n", Kind: sqlplan.Count}}, bound, nil)
	if err != nil {
		return nil, err
	}
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		if pass.usable(d) {
			ex, _, err := pass.exact(ctx, d)
			if err != nil {
				return nil, err
			}
			counts := hp.Release(ex[0], env.sampler())
			post.apply(counts)
			return &Histogram{Keys: append([]string(nil), keys...), Counts: counts}, nil
		}
		col, err := columnSource(d, c.name)
		if err != nil {
			return nil, err
		}
		counts, err := hp.Run(ctx, col, users, env.sampler())
		if err != nil {
			return nil, err
		}
		post.apply(counts)
		return &Histogram{Keys: append([]string(nil), keys...), Counts: counts}, nil
	}
	return p, nil
}

func planQuantile(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateQuantile.Name
	sc := src.Schema
	c, err := columnOf(fn, src, a)
	if err != nil {
		return nil, err
	}
	if err := c.needBounds(fn); err != nil {
		return nil, err
	}
	eps, delta, q := a.Float("eps"), a.Float("delta"), a.Float("q")
	if delta != 0 {
		return nil, Errorf(NameArgumentError, "%s: the exponential mechanism is pure ε-DP: leave delta out (delta=%v was given; it must be 0)", fn, delta)
	}
	qp, err := tabular.PlanQuantile(c.lo, c.hi, q, eps)
	if err != nil {
		return nil, tabErr(fn, c, err)
	}
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	unit, rule := unitWords(sc, "one value per user, the mean of their clamped values")
	ev := qp.Event
	ev.Mechanism = "quantile/exponential"
	p := &Plan{Func: fn, Method: "quantile/exponential", Cost: ev, Eps: eps, Columns: []string{c.name},
		Noise: fmt.Sprintf("exponential mechanism, weights falling by R=%.6g ≤ e^(ε/2) per rank of distance from q·n (utility sensitivity 1 under %s)", qp.Ratio(), nb),
		Note: fmt.Sprintf("q=%v of %s of column %q clamped to its public bounds [%v, %v]%s; pure ε-DP with ε=%v; the value is a point of the public grid of %d equal steps over the bounds, drawn exactly with integer arithmetic%s",
			q, unit, c.name, c.lo, c.hi, rule, eps, qp.Grid, boundedRangeAdvice(sc, eps)),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "bounds": []float64{c.lo, c.hi}, "grid": qp.Grid,
			ErrorParam: rankModel(qp.Grid+1, qp.Ratio())})}
	// The run bins the values on the grid as it reads them: its memory is
	// the grid's, not the rows' (tabular.QuantilePlan.Run).
	p.setWindowedMemory(env, src, mul(i64(qp.Grid)+2, tabular.QuantileBytesPerPoint), 16,
		fmt.Sprintf("a histogram over a grid of %d points, a pass over rows of width %d", qp.Grid+1, readWidth(src)), "Quantiles of a subset with fewer columns need less")
	qp.UserWindow = p.userWindow
	users := sc.Unit == "user"
	// private_sql's QUANTILE: the engine bins the clamped values (the
	// users' means) on the mechanism's grid, the mechanism samples the
	// histogram.
	quantile := func(x *sqlplan.Expr) []sqlplan.Aggregate {
		return []sqlplan.Aggregate{{Name: "q", Kind: sqlplan.Quantile, Arg: x, Lo: c.lo, Hi: c.hi, Bounds: sqlplan.FromSchema, Q: q, Bins: qp.Grid}}
	}
	var pass *tabPass
	if users {
		pass, err = newTabUserPass(src, c, nil, 0, quantile, qp)
	} else {
		pass, err = newTabPass(src, nil, quantile(tabCol(c.name, sqlplan.TypeNumber)), 0, qp)
	}
	if err != nil {
		return nil, err
	}
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		if pass.usable(d) {
			_, hists, err := pass.exact(ctx, d)
			if err != nil {
				return nil, err
			}
			v, err := qp.SampleHistogram(tabHistogram(hists[0][0], qp.Grid), env.sampler())
			if err != nil {
				return nil, err
			}
			return &Quantile{Q: q, Value: v}, nil
		}
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
	return p, nil
}

// Groups is a grouped release (private_count, private_sum or private_mean
// with by=): one value per key of the by column's public domain, in its
// order, then "other".
type Groups struct {
	// Stat is "count", "sum" or "mean".
	Stat string
	// Column is the summed or averaged column ("" for counts).
	Column string
	By     string
	Keys   []string
	Values []float64
	// Sums and Counts are a grouped mean's noisy sums and counts per key,
	// which Values divide (nil for counts and sums, and in means stored
	// before means carried their error).
	Sums, Counts []float64
	// Fitted are consistent=true's least-squares fits of the parts to
	// their total, before the nonnegative projection and the rounding:
	// post-processing of the noisy vector, released so that each value's
	// interval follows (ErrorModel.FittedInterval). Nil otherwise.
	Fitted []float64
}

// optStr, optInt and optFloat read a keyword that callers building Args
// by hand may leave out.
func optStr(a *Args, name string) string { s, _ := a.Vals[name].(string); return s }

func optInt(a *Args, name string, def int) int {
	if v, ok := a.Vals[name].(int); ok {
		return v
	}
	return def
}

func optFloat(a *Args, name string) float64 { f, _ := a.Vals[name].(float64); return f }

// groupDomain resolves the by keyword: a categorical column, whose public
// domain (and "other") gives the keys. A numeric or unknown column is
// refused here, before the charge.
func groupDomain(fn string, src Ref, by string) ([]string, error) {
	sc := src.Schema
	if dom, ok := sc.Categorical[by]; ok {
		return dom, nil
	}
	cats := CategoricalColumns(sc)
	have := "categorical columns: " + listOrNone(cats)
	if len(cats) == 0 {
		have = fmt.Sprintf("dataset %q has no categorical column: the data owner declares one at registration (`privnotes dataset add … --categories %s=a,b,c`, on a snapshot dataset)", src.Name, by)
	}
	for _, c := range sc.Columns {
		if c == by {
			return nil, Errorf(NameArgumentError, "%s: column %q is numeric; by= groups by a categorical column, whose public domain gives the keys (%s). To count or sum over ranges of a numeric column, use private_histogram(ds, col=%q, bins=N) for counts, or filter(ds, col=%q, op=\"<\", value=…) for one range at a time", fn, by, have, by, by)
		}
	}
	return nil, Errorf(NameArgumentError, "%s: no column %q to group by; %s", fn, by, have)
}

// maxGroupsOf is the call's max_groups (grouped releases and histograms):
// 1..keys on user-level data; on row-level data a row is in one group (one
// bin), so only 1. what names keys in the error.
func maxGroupsOf(fn string, src Ref, a *Args, keys int, what string) (int, error) {
	k := optInt(a, "max_groups", 1)
	if src.Schema.Unit != "user" {
		if k != 1 {
			return 0, Errorf(NameArgumentError, "%s: max_groups=%d applies to user-level data; dataset %q is row-level, where every row lies in exactly one group: leave max_groups out", fn, k, src.Name)
		}
		return 1, nil
	}
	if k < 1 || k > keys {
		return 0, Errorf(NameArgumentError, "%s: max_groups=%d must be an integer from 1 to %d, %s", fn, k, keys, what)
	}
	return k, nil
}

// noGrouping refuses max_groups and other=false on a call without by.
func noGrouping(fn string, a *Args) error {
	if k := optInt(a, "max_groups", 1); k != 1 {
		return Errorf(NameArgumentError, "%s: max_groups=%d needs by=\"column\" (a categorical column to group by)", fn, k)
	}
	if !optBool(a, "other", true) {
		return Errorf(NameArgumentError, "%s: other=false needs by=\"column\" (a categorical column to group by): it leaves out the key \"other\" of the groups", fn)
	}
	if optBool(a, "consistent", false) {
		return Errorf(NameArgumentError, "%s: consistent=true needs by=\"column\": it makes the groups' counts add up to their total", fn)
	}
	return nil
}

// columnsSource is some columns of a call, after the charge.
func columnsSource(d *Data, names []string) (rows.Source, error) {
	if d.Columns == nil {
		return nil, errors.New("release: the data layer gives no column access")
	}
	return d.Columns(names)
}

// planGroups plans private_count, private_sum or private_mean with by=:
// one value per key of the by column's public domain (mechanisms/tabular's
// PlanGroups).
func planGroups(env *Local, src Ref, a *Args, fn string, stat tabular.GroupStat) (*Plan, error) {
	sc := src.Schema
	by := optStr(a, "by")
	dom, err := groupDomain(fn, src, by)
	if err != nil {
		return nil, err
	}
	bins, keysWhat, err := categoryBins(a, dom)
	if err != nil {
		return nil, Errorf(NameArgumentError, "%s: column %q: %v", fn, by, err)
	}
	keys := bins.Keys()
	k, err := maxGroupsOf(fn, src, a, len(keys), fmt.Sprintf("the number of keys of %q (%s)", by, keysWhat))
	if err != nil {
		return nil, err
	}
	var c tabColumn
	if stat != tabular.GroupCount {
		if stat == tabular.GroupMean {
			if err := meanColumnOnly(fn, a, "by"); err != nil {
				return nil, err
			}
			if optStr(a, "col") == "" {
				return nil, Errorf(NameArgumentError, "%s: by= averages one column per group: give col=\"…\", a numeric column with public bounds", fn)
			}
		}
		if c, err = columnOf(fn, src, a); err != nil {
			return nil, err
		}
		if err := c.needBounds(fn); err != nil {
			return nil, err
		}
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	consistent := optBool(a, "consistent", false)
	if consistent && k != 1 {
		return nil, Errorf(NameArgumentError, "%s: consistent=true releases a total of the groups' %ss, which needs each unit in one group: leave max_groups out (it is %d)", fn, stat, k)
	}
	if consistent && stat == tabular.GroupSum && sc.Unit == "user" {
		return nil, Errorf(NameArgumentError, "%s: consistent=true on user-level data is not implemented for sums yet (the users' terms are summed per group only, and the total's rounding is not bounded); leave it out, or add the groups' sums yourself", fn)
	}
	spec := tabular.GroupSpec{Stat: stat, Groups: bins, Lo: c.lo, Hi: c.hi, MaxGroups: k, CountShare: meanCountShare,
		AddRemoveToo: src.Derived != nil && nb == accounting.ReplaceOne, Total: consistent}
	gp, err := tabular.PlanGroups(spec, eps, delta, nb, gaussianCalibration(src))
	if err != nil {
		if stat == tabular.GroupCount {
			return nil, Errorf(NameArgumentError, "%s: %v", fn, err)
		}
		return nil, tabErr(fn, c, err)
	}
	var post postRule
	switch stat {
	case tabular.GroupCount:
		post = countRule(a)
	case tabular.GroupMean:
		post = meanRule(a, c.lo, c.hi)
	}
	users := sc.Unit == "user"
	unit, rule := unitWords(sc, fmt.Sprintf("each user counts once in each of the first %d distinct group(s) of their rows in row order", k))
	if users && stat != tabular.GroupCount {
		rule += ", with the mean of their clamped values there"
	}
	base := stat.String() + "-by"
	method := base + "/laplace"
	var noiseText, calib string
	switch {
	case stat == tabular.GroupMean && !gp.Gaussian:
		noiseText = fmt.Sprintf("discrete Laplace, scale b=%.4g per key's sum (ℓ1 sensitivity %.4g under %s, plus %.3g for the sums' floating-point rounding) and b=%.4g per key's count (ℓ1 sensitivity %v)",
			gp.SumScale, gp.SumL1, nb, gp.Excess, gp.CountScale, gp.CountL1)
		calib = fmt.Sprintf("pure ε-DP with ε=%v: %.0f%% to the sums, %.0f%% to the counts (sequential composition); mean = noisy sum / max(noisy count, 1) per key, %s%s",
			eps, 100*(1-meanCountShare), 100*meanCountShare, post.meanWords(), zcdpAdvice(sc, eps, true))
	case stat == tabular.GroupMean:
		method = base + "/gaussian"
		noiseText = fmt.Sprintf("discrete Gaussian, std %.4g per key's sum (ℓ2 sensitivity %.4g under %s, plus %.3g for the sums' floating-point rounding) and std %.4g per key's count (ℓ2 sensitivity %.4g)",
			gp.SumScale, gp.SumL2, nb, gp.Excess, gp.CountScale, gp.CountL2)
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v %s, %.0f%% to the sums, %.0f%% to the counts; mean = noisy sum / max(noisy count, 1) per key, %s",
			eps, delta, calibrationWords(gp.Event), 100*(1-meanCountShare), 100*meanCountShare, post.meanWords())
	case gp.Gaussian:
		method = base + "/gaussian"
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v %s", eps, delta, calibrationWords(gp.Event))
	default:
		calib = fmt.Sprintf("pure ε-DP with ε=%v%s", eps, zcdpAdvice(sc, eps, true))
	}
	what := fmt.Sprintf("counts of %s", unit)
	cols := []string{by}
	switch stat {
	case tabular.GroupCount:
		if gp.Gaussian {
			noiseText = fmt.Sprintf("discrete Gaussian, std %.4g per key (ℓ2 sensitivity %.4g under %s)", gp.CountScale, gp.CountL2, nb)
		} else {
			noiseText = fmt.Sprintf("discrete Laplace, scale b=%.4g per key (ℓ1 sensitivity %v under %s)", gp.CountScale, gp.CountL1, nb)
		}
		calib += "; counts rounded to integers"
		if consistent {
			noiseText += ", on the counts and their total"
			calib += "; consistent=true (post-processing): the total of the counts is released in the same vector, and the parts shown are its least-squares fit to it, made nonnegative if asked and rounded so that they add up to the rounded total"
		}
	case tabular.GroupSum:
		if gp.Gaussian {
			noiseText = fmt.Sprintf("discrete Gaussian, std %.4g per key (ℓ2 sensitivity %.4g under %s, plus %.3g for the sums' floating-point rounding)", gp.SumScale, gp.SumL2, nb, gp.Excess)
		} else {
			noiseText = fmt.Sprintf("discrete Laplace, scale b=%.4g per key (ℓ1 sensitivity %.4g under %s, plus %.3g for the sums' floating-point rounding)", gp.SumScale, gp.SumL1, nb, gp.Excess)
		}
		if consistent {
			noiseText += ", on the sums and their total"
			calib += "; consistent=true (post-processing): the total of the sums is released in the same vector, and the parts shown are its least-squares fit to it"
			if c.lo >= 0 {
				calib += ", made nonnegative with the same total (the bounds are ≥ 0)"
			}
		}
		fallthrough
	case tabular.GroupMean:
		what = fmt.Sprintf("%ss over %s of column %q clamped to its public bounds [%v, %v] (a NaN counts as 0 clamped)", stat, unit, c.name, c.lo, c.hi)
		cols = []string{c.name, by}
	}
	ev := gp.Event
	ev.Mechanism = method
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: cols,
		Noise: noiseText,
		Note: fmt.Sprintf("%s per key of the categorical column %q: %s, every key released whatever the data%s; %s; noise on the lattice of its scale%s",
			what, by, keysWhat, rule, calib, post.note()),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "keys": len(keys), "max_groups": k})}
	if stat != tabular.GroupCount {
		p.Params["bounds"] = []float64{c.lo, c.hi}
	}
	switch {
	case consistent: // least-squares fits of the parts to their total (postprocess.go)
		p.Params[ErrorParam] = fittedModel(gp.Gaussian, max(gp.CountScale, gp.SumScale), len(keys), stat == tabular.GroupCount, gp.Excess, c.lo >= 0)
	case stat == tabular.GroupCount:
		p.Params[ErrorParam] = noiseModel(gp.Gaussian, gp.CountScale, true, 0)
	case stat == tabular.GroupSum:
		p.Params[ErrorParam] = noiseModel(gp.Gaussian, gp.SumScale, false, gp.Excess)
	default:
		p.Params[ErrorParam] = ratioModel(gp.Gaussian, gp.SumScale, gp.CountScale, gp.Excess, c.lo, c.hi)
	}
	p.setStreamMemory(src, binsMemory(len(keys)), groupUserBytes(k),
		fmt.Sprintf("%d keys, a pass over rows of width %d", len(keys), readWidth(src)), "Group by a column with fewer categories")
	aggs := func(x *sqlplan.Expr) []sqlplan.Aggregate {
		switch stat {
		case tabular.GroupCount:
			return []sqlplan.Aggregate{{Name: "n", Kind: sqlplan.Count}}
		case tabular.GroupSum:
			return []sqlplan.Aggregate{tabSumOf(x, c.lo, c.hi)}
		}
		return []sqlplan.Aggregate{{Name: "n", Kind: sqlplan.Count}, tabSumOf(x, c.lo, c.hi)}
	}
	key := tabKey(sc, by, optBool(a, "other", true))
	var pass *tabPass
	switch {
	case users && stat == tabular.GroupCount:
		// Each user once in each of their first k groups.
		pass, err = newTabPass(src, []sqlplan.Key{key}, aggs(nil), k, nil)
	case users:
		// One term per user in each of their first k groups: the mean
		// of their clamped values there.
		pass, err = newTabUserPass(src, c, &key, k, aggs, nil)
	default:
		pass, err = newTabPass(src, []sqlplan.Key{key}, aggs(tabCol(c.name, sqlplan.TypeNumber)), 0, nil)
	}
	if err != nil {
		return nil, err
	}
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		var vals, counts, sums []float64
		if pass.usable(d) {
			ex, _, err := pass.exact(ctx, d)
			if err != nil {
				return nil, err
			}
			switch stat {
			case tabular.GroupCount:
				counts = ex[0]
			case tabular.GroupSum:
				sums = ex[0]
				if consistent {
					sums = append(sums, tabTotal(sums))
				}
			default:
				counts, sums = ex[0], ex[1]
			}
			vals, counts, sums = gp.ReleaseParts(counts, sums, env.sampler())
		} else {
			s, err := columnsSource(d, cols)
			if err != nil {
				return nil, err
			}
			if vals, counts, sums, err = gp.RunParts(ctx, s, users, env.sampler()); err != nil {
				return nil, err
			}
		}
		vals, fits := consistentGroups(consistent, stat == tabular.GroupSum, vals, c.lo >= 0, post.nonnegative)
		post.apply(vals)
		return &Groups{Stat: stat.String(), Column: c.name, By: by, Keys: append([]string(nil), keys...), Values: vals, Sums: sums, Counts: counts, Fitted: fits}, nil
	}
	return p, nil
}

// meanColumnOnly refuses the row-vector form's keywords in private_mean's
// col= and by= forms.
func meanColumnOnly(fn string, a *Args, form string) error {
	if len(a.Strs("columns")) > 0 {
		return Errorf(NameArgumentError, "%s: give col= (one column clamped to its public bounds) or columns= (the row-vector form, rows clipped to a norm), not both", fn)
	}
	if optFloat(a, "clip") != 0 {
		return Errorf(NameArgumentError, "%s: clip= belongs to the row-vector form (columns=); with %s= the column's values are clamped to its public bounds instead, so leave clip out", fn, form)
	}
	return nil
}

// planColumnMean is private_mean(ds, col=…): the mean of one column clamped
// to its public bounds, a noisy sum over a noisy count in zCDP (tabular's
// GroupMean without a grouping column), released as a Mean of one value.
func planColumnMean(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateMean.Name
	sc := src.Schema
	if err := meanColumnOnly(fn, a, "col"); err != nil {
		return nil, err
	}
	c, err := columnOf(fn, src, a)
	if err != nil {
		return nil, err
	}
	if err := c.needBounds(fn); err != nil {
		return nil, err
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	spec := tabular.GroupSpec{Stat: tabular.GroupMean, Lo: c.lo, Hi: c.hi, MaxGroups: 1, CountShare: meanCountShare,
		AddRemoveToo: src.Derived != nil && nb == accounting.ReplaceOne}
	gp, err := tabular.PlanGroups(spec, eps, delta, nb, gaussianCalibration(src))
	if err != nil {
		return nil, tabErr(fn, c, err)
	}
	post := meanRule(a, c.lo, c.hi)
	unit, rule := unitWords(sc, "each user adds the mean of their clamped values and counts once")
	method := "bounded-mean/gaussian"
	noiseText := fmt.Sprintf("discrete Gaussian, std %.4g on the sum (sensitivity %.4g under %s, plus %.3g for the sum's floating-point rounding) and std %.4g on the count (sensitivity 1)",
		gp.SumScale, gp.SumL2, nb, gp.Excess, gp.CountScale)
	calib := fmt.Sprintf("calibrated to ε=%v, δ=%v %s, %.0f%% to the sum, %.0f%% to the count", eps, delta, calibrationWords(gp.Event), 100*(1-meanCountShare), 100*meanCountShare)
	if !gp.Gaussian {
		// Without delta: the pure-ε bounded mean (Laplace on both).
		method = "bounded-mean/laplace"
		noiseText = fmt.Sprintf("discrete Laplace, scale b=%.4g on the sum (sensitivity %.4g under %s, plus %.3g for the sum's floating-point rounding) and b=%.4g on the count (sensitivity %v)",
			gp.SumScale, gp.SumL1, nb, gp.Excess, gp.CountScale, gp.CountL1)
		calib = fmt.Sprintf("pure ε-DP with ε=%v: %.0f%% to the sum, %.0f%% to the count (sequential composition)%s", eps, 100*(1-meanCountShare), 100*meanCountShare, zcdpAdvice(sc, eps, true))
	}
	ev := gp.Event
	ev.Mechanism = method
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: []string{c.name},
		Noise: noiseText,
		Note: fmt.Sprintf("mean over %s of column %q clamped to its public bounds [%v, %v] (a NaN counts as 0 clamped)%s; %s; mean = noisy sum / max(noisy count, 1), %s%s",
			unit, c.name, c.lo, c.hi, rule, calib, post.meanWords(), post.note()),
		Params: publicParams(a, map[string]any{"unit": unit, "neighbour": nb.String(), "bounds": []float64{c.lo, c.hi},
			ErrorParam: ratioModel(gp.Gaussian, gp.SumScale, gp.CountScale, gp.Excess, c.lo, c.hi)})}
	p.setStreamMemory(src, 0, groupUserBytes(1), fmt.Sprintf("a pass over rows of width %d", readWidth(src)), "Average a subset with fewer columns")
	users := sc.Unit == "user"
	mean := func(x *sqlplan.Expr) []sqlplan.Aggregate {
		return []sqlplan.Aggregate{{Name: "n", Kind: sqlplan.Count}, tabSumOf(x, c.lo, c.hi)}
	}
	var pass *tabPass
	if users {
		pass, err = newTabUserPass(src, c, nil, 0, mean, nil)
	} else {
		pass, err = newTabPass(src, nil, mean(tabCol(c.name, sqlplan.TypeNumber)), 0, nil)
	}
	if err != nil {
		return nil, err
	}
	p.tab = pass
	p.run = func(ctx context.Context, d *Data) (any, error) {
		var vals, counts, sums []float64
		if pass.usable(d) {
			ex, _, err := pass.exact(ctx, d)
			if err != nil {
				return nil, err
			}
			vals, counts, sums = gp.ReleaseParts(ex[0], ex[1], env.sampler())
		} else {
			s, err := columnSource(d, c.name)
			if err != nil {
				return nil, err
			}
			if vals, counts, sums, err = gp.RunParts(ctx, s, users, env.sampler()); err != nil {
				return nil, err
			}
		}
		post.apply(vals)
		return &Mean{Values: vals, Sums: sums, Counts: counts}, nil
	}
	return p, nil
}
