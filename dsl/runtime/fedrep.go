package runtime

import "github.com/privnotes/privnotes/dsl/release"

func fedRepResult(rel *release.Release) *FedRepResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &FedRepResult{releaseBase: releaseBase{rel.Receipt}}
	}
	return &FedRepResult{U: rel.Value.(*release.FedRep).U, Columns: rel.Columns, releaseBase: releaseBase{rel.Receipt}}
}
