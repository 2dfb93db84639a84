package runtime

import "github.com/privnotes/privnotes/dsl/release"

func (rt *Runtime) privateFedRep(ds any, kws ...KW) *FedRepResult {
	if f, ok := federationOf(ds); ok {
		return rt.federatedFedRep(f, kws)
	}
	rel, _ := rt.runPrivate("private_fedrep", ds, kws)
	return fedRepResult(rel)
}

func fedRepResult(rel *release.Release) *FedRepResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &FedRepResult{Receipt: rel.Receipt}
	}
	return &FedRepResult{U: rel.Value.(*release.FedRep).U, Columns: rel.Columns, Receipt: rel.Receipt}
}
