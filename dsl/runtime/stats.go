package runtime

import (
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func countResult(rel *release.Release) *CountResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &CountResult{releaseBase: releaseBase{rel.Receipt}}
	}
	if g := groupResult(rel); g != nil { // by= (tabular.go)
		return &CountResult{Value: total(g.Values), releaseBase: releaseBase{rel.Receipt}, GroupResult: g}
	}
	return &CountResult{Value: rel.Value.(*release.Count).Value, releaseBase: releaseBase{rel.Receipt}}
}

func meanResult(rel *release.Release) *MeanResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &MeanResult{releaseBase: releaseBase{rel.Receipt}}
	}
	if g := groupResult(rel); g != nil { // by= (tabular.go)
		return &MeanResult{Values: g.Values, Columns: []string{g.Column}, releaseBase: releaseBase{rel.Receipt}, GroupResult: g}
	}
	m := rel.Value.(*release.Mean)
	return &MeanResult{Values: m.Values, Columns: rel.Columns, releaseBase: releaseBase{rel.Receipt}, sums: m.Sums, counts: m.Counts}
}

// remaining implements remaining(ds): the dataset's public budget state.
func (rt *Runtime) remaining(ds any, kws ...KW) Budget {
	noKeywords("remaining", kws)
	rt.current("remaining")
	src := rt.resolve("remaining", ds)
	if src.synth != nil {
		panic(errorf(NameDatasetError, "remaining: synthetic data is public and has no budget"))
	}
	if src.server != "" {
		panic(errorf(NameNotAvailable, "remaining: dataset %q is on server %s, whose ledger holds its budget: each receipt of a call there states what remains", src.name, src.server))
	}
	st, err := rt.mustStore().Status(src.name)
	if err != nil {
		panic(errorf(NameLedgerError, "remaining(%q): %v", src.name, err))
	}
	fits, err := rt.mustStore().Fits(src.name)
	if err != nil {
		panic(errorf(NameLedgerError, "remaining(%q): %v", src.name, err))
	}
	return budgetOf(st, fits)
}

func budgetOf(st *ledger.Status, fits accounting.Fits) Budget {
	return Budget{Dataset: st.Dataset, Accountant: st.Mode, Eps: st.Remaining.Eps, Delta: st.Remaining.Delta,
		Spent: st.Spent, Total: st.Budget, Charges: st.Charges,
		FitsPure: fits.Pure, FitsQuantile: fits.BoundedRange, FitsGaussian: fits.Gaussian, FitsDelta: fits.GaussianDelta}
}

// fitsText says what one more call may spend (release.FitsText).
func fitsText(f accounting.Fits) string { return release.FitsText(f) }
