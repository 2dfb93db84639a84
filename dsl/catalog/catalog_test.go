package catalog

import (
	"sort"
	"testing"
)

// Lookup finds an entry itself, not a copy: dsl/release keys its planners
// by the pointer, and Local.Plan finds the key by name.
func TestLookupReturnsTheEntry(t *testing.T) {
	for _, f := range []*Func{PrivatePCA, PrivateLowRank, PrivateFedRep, PrivateClassifyJL,
		PrivateCount, PrivateMean, PrivateSum, PrivateHistogram, PrivateQuantile} {
		got, ok := Lookup(f.Name)
		if !ok || got != f {
			t.Errorf("Lookup(%q) = %p, %v; want the entry %p", f.Name, got, ok, f)
		}
		if !f.Private {
			t.Errorf("%s is not marked private", f.Name)
		}
	}
	if _, ok := Lookup("no_such_function"); ok {
		t.Error("Lookup found a function the catalog does not have")
	}
}

// The table is sorted (Lookup searches it), names are unique, and every
// private function takes the keywords all of them share.
func TestFuncsTable(t *testing.T) {
	if !sort.SliceIsSorted(Funcs, func(i, j int) bool { return Funcs[i].Name < Funcs[j].Name }) {
		t.Error("Funcs is not sorted by name")
	}
	for i := 1; i < len(Funcs); i++ {
		if Funcs[i-1].Name == Funcs[i].Name {
			t.Errorf("%s is declared twice", Funcs[i].Name)
		}
	}
	private := Private()
	if len(private) < 9 {
		t.Errorf("Private() lists %d functions", len(private))
	}
	for _, f := range private {
		for _, kw := range []string{"eps", "delta", "dry_run", "name"} {
			p, ok := f.Keyword(kw)
			if !ok {
				t.Errorf("%s has no %s keyword", f.Name, kw)
				continue
			}
			if p.CostFree {
				t.Errorf("%s's %s keyword is marked CostFree, but it is (or decides) the cost", f.Name, kw)
			}
		}
		switch f.DatasetFrom {
		case "":
			if len(f.Positional) == 0 || f.Positional[0].Type != "dataset" {
				t.Errorf("%s: a private function's first argument is its dataset", f.Name)
			}
		case DatasetFromQuery:
			if len(f.Positional) == 0 || f.Positional[0].Type != "string" || f.Positional[0].Name != "query" {
				t.Errorf("%s: a private function that names its dataset in a query takes the query first", f.Name)
			}
		default:
			t.Errorf("%s: unknown DatasetFrom %q", f.Name, f.DatasetFrom)
		}
	}
}
