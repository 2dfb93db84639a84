package runtime

// The column analyses and Analyze Gauss/npm on the harness's live tables:
// a seeded sample of fixed forms (private_count, private_sum,
// private_mean with col= and columns=, private_histogram with categories
// and numeric bins, private_quantile, private_pca gauss, npm and centred
// gauss; with by=, max_groups= and on filter(...) subsets; row-level and
// user-level) runs on "pgcats" and "pgucats" beside the same call on the
// snapshots "cats" and "ucats" (runPGHarness). What a live table cannot
// run (the row-vector mean of a subset or of user-level data, PCA methods
// other than gauss and npm, centred npm, the functions that need the
// rows) is refused there before the charge, alike in every world.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"

	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// liveForm is one call of the live sample: the call on a snapshot
// dataset ("cats" or "ucats"), whose twin runs on the live table. refused
// marks a form the live table refuses before the charge where the
// snapshot may run it: its twin must give an ArgumentError that charges
// nothing, and the snapshot's outcome is not compared.
type liveForm struct {
	call    harnessCall
	refused bool
}

// liveRunFunctions are the private functions that run on a live table
// (dsl/release: the column analyses of engineTabular, private_pca's gauss
// and npm, and private_sql); every other private function is refused
// there. TestHarnessCoversEveryPrivateFunction checks that the live
// sample runs each of these and a refusal of each of the others, and the
// live harness that the engine agrees (checkLiveFunctions).
var liveRunFunctions = map[string]bool{
	"private_count": true, "private_sum": true, "private_mean": true, "private_histogram": true,
	"private_quantile": true, "private_pca": true, "private_sql": true,
}

// liveForms are the forms the live sample draws from.
func liveForms() []liveForm {
	kw := newKW
	pos := []KW{kw("col", "x1"), kw("op", ">="), kw("value", 0.0)}
	empty := []KW{kw("col", "x2"), kw("op", "<"), kw("value", -5.0)}
	on := func(ds, fn string, filter []KW, kws ...KW) liveForm {
		return liveForm{call: harnessCall{fn: fn, dataset: ds, kws: kws, filter: filter}}
	}
	refused := func(f liveForm) liveForm { f.refused = true; return f }
	rowMean := func(clip float64) []KW {
		return []KW{kw("columns", []string{"x1", "x2"}), kw("clip", clip), kw("eps", 1.0), kw("delta", 1e-6)}
	}
	return []liveForm{
		// Row-level counts, sums and one column's means, grouped and not.
		on("cats", "private_count", nil, kw("eps", 1.0)),
		on("cats", "private_count", nil, kw("by", "g"), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_count", nil, kw("by", "g"), kw("other", false), kw("consistent", true), kw("eps", 1.0)),
		on("cats", "private_count", nil, kw("eps", 1e-300)),
		on("cats", "private_sum", nil, kw("col", "x1"), kw("eps", 1.0)),
		on("cats", "private_sum", nil, kw("col", "x2"), kw("by", "g"), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_sum", nil, kw("col", "x1"), kw("by", "g"), kw("consistent", true), kw("eps", 1.0)),
		on("cats", "private_sum", nil, kw("col", "x1"), kw("eps", 1e300), kw("delta", 1e-6)),
		on("cats", "private_sum", nil, kw("col", "x3"), kw("eps", 1.0)), // no bounds: refused
		on("cats", "private_mean", nil, kw("col", "x2"), kw("eps", 1.0)),
		on("cats", "private_mean", nil, kw("col", "x2"), kw("by", "g"), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_mean", nil, kw("col", "x2"), kw("by", "g"), kw("other", false), kw("clamp", true), kw("eps", 1.0)),
		// Histograms of the categories and of numeric bins; quantiles.
		on("cats", "private_histogram", nil, kw("col", "g"), kw("eps", 1.0)),
		on("cats", "private_histogram", nil, kw("col", "x1"), kw("bins", 4), kw("eps", 1.0)),
		on("cats", "private_histogram", nil, kw("col", "x2"), kw("bins", 3), kw("nonnegative", false), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_histogram", nil, kw("col", "nope"), kw("eps", 1.0)),
		on("cats", "private_quantile", nil, kw("col", "x2"), kw("q", 0.5), kw("eps", 1.0)),
		on("cats", "private_quantile", nil, kw("col", "x1"), kw("q", 0.9), kw("eps", 1.0)),
		// The row-vector mean, with a clip above and below the rows' norms.
		on("cats", "private_mean", nil, rowMean(1)...),
		on("cats", "private_mean", nil, rowMean(0.1)...),
		// Analyze Gauss and npm on the engine's second moment.
		on("cats", "private_pca", nil, kw("k", 1), kw("method", "gauss"), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_pca", nil, kw("k", 2), kw("method", "gauss"), kw("clip", 0.1), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_pca", nil, kw("k", 1), kw("method", "gauss"), kw("center", true), kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_pca", nil, kw("k", 1), kw("method", "npm"), kw("iters", 3), kw("eps", 1.0), kw("delta", 1e-6)),
		// Subsets: the neighbour's row may enter or leave; one is empty.
		on("cats", "private_count", pos, kw("eps", 1.0), kw("delta", 1e-6)),
		on("cats", "private_sum", pos, kw("col", "x2"), kw("eps", 1.0)),
		on("cats", "private_mean", pos, kw("col", "x2"), kw("by", "g"), kw("eps", 1.0)),
		on("cats", "private_histogram", empty, kw("col", "x1"), kw("bins", 3), kw("eps", 1.0)),
		on("cats", "private_quantile", pos, kw("col", "x2"), kw("eps", 1.0)),
		// User-level data, each user's rows bounded in the table's --order.
		on("ucats", "private_count", nil, kw("eps", 1.0)),
		on("ucats", "private_count", nil, kw("by", "g"), kw("max_groups", 2), kw("eps", 1.0)),
		on("ucats", "private_sum", nil, kw("col", "x1"), kw("eps", 1.0), kw("delta", 1e-6)),
		on("ucats", "private_mean", nil, kw("col", "x2"), kw("by", "g"), kw("max_groups", 2), kw("eps", 1.0)),
		on("ucats", "private_histogram", nil, kw("col", "g"), kw("max_groups", 2), kw("eps", 1.0)),
		on("ucats", "private_histogram", nil, kw("col", "x1"), kw("bins", 4), kw("max_groups", 2), kw("eps", 1.0)),
		on("ucats", "private_quantile", nil, kw("col", "x2"), kw("q", 0.5), kw("eps", 1.0)),
		on("ucats", "private_sum", pos, kw("col", "x2"), kw("eps", 1.0)),
		// What the live table refuses before the charge.
		refused(on("cats", "private_mean", pos, rowMean(1)...)),
		refused(on("ucats", "private_mean", nil, rowMean(1)...)),
		refused(on("cats", "private_pca", pos, kw("k", 1), kw("method", "gauss"), kw("eps", 1.0), kw("delta", 1e-6))),
		refused(on("ucats", "private_pca", nil, kw("k", 1), kw("method", "gauss"), kw("eps", 1.0), kw("delta", 1e-6))),
		refused(on("cats", "private_pca", nil, kw("k", 1), kw("method", "npm"), kw("center", true), kw("eps", 1.0), kw("delta", 1e-6))),
		refused(on("cats", "private_pca", nil, kw("k", 1), kw("method", "adaptive"), kw("eps", 1.0), kw("delta", 1e-6))),
		refused(on("cats", "private_linear_regression", nil, kw("y", "x2"), kw("x", []string{"x1"}), kw("eps", 1.0), kw("delta", 1e-6))),
		refused(on("cats", "private_logistic_regression", nil, kw("y", "g"), kw("positive", "a"), kw("x", []string{"x1", "x2"}), kw("eps", 1.0), kw("delta", 1e-6), kw("iters", 3))),
		refused(on("cats", "private_synthesize", nil, kw("cols", []string{"g", "x1"}), kw("eps", 1.0), kw("delta", 1e-6), kw("rows", 10), kw("bins", 3))),
		refused(on("ucats", "private_fedrep", nil, kw("k", 1), kw("eps", 2.0), kw("delta", 1e-6), kw("rounds", 2))),
		refused(on("ucats", "private_classify_jl", nil, kw("k", 1), kw("eps", 2.0), kw("candidates", 20))),
		refused(on("cats", "private_low_rank", nil, kw("k", 1), kw("eps", 1.0), kw("delta", 1e-6))),
	}
}

// liveSample is every refused form (refused before the charge, they
// cost milliseconds, and they hold the refusals that keep user-level data
// and subsets off the live tables' row passes) and n of the forms that run
// there, drawn with seed (all of them when n is not below their number):
// a seed picks a subset, so every form runs for some seed and the default
// run stays short.
func liveSample(seed uint64, n int) []liveForm {
	var runs, out []liveForm
	for _, f := range liveForms() {
		if f.refused {
			out = append(out, f)
		} else {
			runs = append(runs, f)
		}
	}
	if n >= len(runs) {
		return append(runs, out...)
	}
	r := rand.New(rand.NewPCG(seed, 0x11fe))
	for _, i := range r.Perm(len(runs))[:n] {
		out = append(out, runs[i])
	}
	return out
}

// liveTwin is a form's call on the live twin of its dataset.
func liveTwin(c harnessCall) harnessCall {
	c.dataset = "pg" + c.dataset
	return c
}

// liveValuesDiffer says how a release on a live table differs from the
// snapshot's under the same seeded noise, or "" when they agree. The
// column analyses compute the same exact integer aggregates in both
// engines, so their values must be equal; the row-vector mean and PCA sum
// the clipped rows on a grid in the engine and in float64 on the
// snapshot, so they may differ by the rounding the plan charges for
// (TestRowMeanSameAsSnapshot, TestGaussSameAsSnapshot and
// TestNPMSameAsSnapshot in dsl/pgsource compare alike).
func liveValuesDiffer(c harnessCall, got, want any) string {
	clip := 1.0 // the harness's registered clip
	if v, ok := kwValue(c, "clip").(float64); ok {
		clip = v
	}
	switch w := want.(type) {
	case *MeanResult:
		g, ok := got.(*MeanResult)
		if !ok {
			return fmt.Sprintf("a %T, not a %T", got, want)
		}
		if kwValue(c, "col") != nil {
			break // one column's mean: exact sums and counts
		}
		tol := tabular.RowSumExcess(len(w.Columns), clip)
		if len(g.sums) != len(w.sums) || fmt.Sprint(g.counts) != fmt.Sprint(w.counts) || len(g.Values) != len(w.Values) {
			return fmt.Sprintf("sums %v, counts %v; the snapshot's %v, %v", g.sums, g.counts, w.sums, w.counts)
		}
		for j := range w.sums {
			if d := math.Abs(g.sums[j] - w.sums[j]); !(d <= tol) {
				return fmt.Sprintf("sum %d is %v, the snapshot's %v (tolerance %g)", j, g.sums[j], w.sums[j], tol)
			}
		}
		return ""
	case *PCAResult:
		g, ok := got.(*PCAResult)
		if !ok {
			return fmt.Sprintf("a %T, not a %T", got, want)
		}
		return pcaDiffer(c, clip, g, w)
	}
	if g, w := exactValues(got), exactValues(want); g != w {
		return fmt.Sprintf("%s; the snapshot's %s", g, w)
	}
	return ""
}

// pcaDiffer compares Analyze Gauss or npm on a live table with the
// snapshot's: the centre within the charged rounding of its sums (in
// units of the clip), the eigenvalues within the plan's charged rounding
// excess (in the data's units: ×clip²), the components parallel.
func pcaDiffer(c harnessCall, clip float64, g, w *PCAResult) string {
	k, _ := kwValue(c, "k").(int)
	iters, _ := kwValue(c, "iters").(int)
	center, _ := kwValue(c, "center").(bool)
	eps, _ := kwValue(c, "eps").(float64)
	delta, _ := kwValue(c, "delta").(float64)
	method, _ := kwValue(c, "method").(string)
	pl, err := pca.PlanMethod(method, pca.Options{K: k, Iters: iters, Eps: eps, Delta: delta, Clip: clip, Center: center}, len(w.Columns))
	if err != nil {
		return fmt.Sprintf("the plan of a released call: %v", err)
	}
	if len(g.Center) != len(w.Center) {
		return fmt.Sprintf("centre %v, the snapshot's %v", g.Center, w.Center)
	}
	for j := range w.Center {
		if d := math.Abs(g.Center[j] - w.Center[j]); !(d <= pca.CenterRoundingExcess()*clip) {
			return fmt.Sprintf("centre %v, the snapshot's %v", g.Center, w.Center)
		}
	}
	tol := pl.RoundingExcess * clip * clip
	if len(g.Values) != len(w.Values) {
		return fmt.Sprintf("eigenvalues %v, the snapshot's %v", g.Values, w.Values)
	}
	for j := range w.Values {
		if d := math.Abs(g.Values[j] - w.Values[j]); !(d <= tol) {
			return fmt.Sprintf("eigenvalue %d is %v, the snapshot's %v (tolerance %g)", j, g.Values[j], w.Values[j], tol)
		}
	}
	if g.Components == nil || w.Components == nil {
		return fmt.Sprintf("components %v, the snapshot's %v", g.Components != nil, w.Components != nil)
	}
	var dot mat.Dense
	dot.Mul(g.Components.T(), w.Components)
	for j := range k {
		if cos := math.Abs(dot.At(j, j)); !(cos >= 1-1e-6) {
			return fmt.Sprintf("component %d differs: |cos| = %v", j, cos)
		}
	}
	return ""
}

// exactValues is a release's values and keys, printed with every
// float64's shortest exact form.
func exactValues(v any) string {
	group := func(g *GroupResult) string {
		if g == nil {
			return ""
		}
		return fmt.Sprintf(" by %s %q %v", g.By, g.Keys, g.Values)
	}
	switch r := v.(type) {
	case *CountResult:
		return fmt.Sprintf("count %v%s", r.Value, group(r.GroupResult))
	case *SumResult:
		return fmt.Sprintf("sum %v%s", r.Value, group(r.GroupResult))
	case *MeanResult:
		return fmt.Sprintf("mean %v sums %v counts %v%s", r.Values, r.sums, r.counts, group(r.GroupResult))
	case *HistogramResult:
		return fmt.Sprintf("histogram %q %v", r.Keys, r.Counts)
	case *QuantileResult:
		return fmt.Sprintf("quantile %v", r.Value)
	}
	return releaseValues(v)
}

// kwValue is the value of the call's keyword name, or nil.
func kwValue(c harnessCall, name string) any {
	for _, k := range c.kws {
		if k.name == name {
			return k.value
		}
	}
	return nil
}

// checkLiveRefusal checks a refused form's twin: an ArgumentError that
// charges nothing (the refusals of the live table's limits say so; a
// matrix function on a row dataset is refused earlier, as on a snapshot).
func checkLiveRefusal(o outcome) string {
	if o.class != NameArgumentError || o.charged || !strings.Contains(o.text, "nothing was charged") && !strings.Contains(o.text, "takes a matrix dataset") {
		return fmt.Sprintf("%s charged=%v: %s (want an ArgumentError before the charge)", o.class, o.charged, o.text)
	}
	return ""
}

// Every private function of the catalog is in the live harness: the
// functions that run on a live table (liveRunFunctions) in a form the
// live table runs, every other one in a form it refuses; private_sql by
// the grammar's twins (pgCall).
func TestHarnessCoversLiveTables(t *testing.T) {
	runs, refuses := map[string]bool{}, map[string]bool{}
	for _, f := range liveForms() {
		if f.refused {
			refuses[f.call.fn] = true
		} else {
			runs[f.call.fn] = true
		}
		if f.call.dataset != "cats" && f.call.dataset != "ucats" {
			t.Errorf("live form %s: on %q, which has no live twin", f.call, f.call.dataset)
		}
	}
	for _, c := range sqlHarnessCalls(0) {
		if _, ok := pgCall(c); ok {
			runs[c.fn] = true
		}
	}
	for _, f := range catalog.Private() {
		switch {
		case liveRunFunctions[f.Name] && !runs[f.Name]:
			t.Errorf("%s runs on live tables, but no form of the live harness runs it there: add one to liveForms", f.Name)
		case !liveRunFunctions[f.Name] && !refuses[f.Name]:
			t.Errorf("%s is refused on live tables, but no form of the live harness checks the refusal: add one to liveForms", f.Name)
		case !liveRunFunctions[f.Name] && runs[f.Name]:
			t.Errorf("%s has a live form expected to run, but liveRunFunctions says live tables refuse it", f.Name)
		}
	}
	for fn := range liveRunFunctions {
		if f, ok := catalog.Lookup(fn); !ok || !f.Private {
			t.Errorf("liveRunFunctions names %s, which is not a private function of the catalog", fn)
		}
	}
}
