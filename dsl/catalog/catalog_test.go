package catalog

import (
	"reflect"
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

// DefaultValue converts a literal to its parameter's type, gives a
// parameter without one its type's zero value, and refuses a literal
// that does not parse.
func TestDefaultValue(t *testing.T) {
	tests := []struct {
		p       Param
		want    any
		wantErr bool
	}{
		{Param{Type: "int", Default: "3"}, 3, false},
		{Param{Type: "int", Default: "-1"}, -1, false},
		{Param{Type: "int"}, 0, false},
		{Param{Type: "int", Default: "1.5"}, nil, true},
		{Param{Type: "float", Default: "0.5"}, 0.5, false},
		{Param{Type: "float", Default: "1e-6"}, 1e-6, false},
		{Param{Type: "float"}, 0.0, false},
		{Param{Type: "float", Default: "x"}, nil, true},
		{Param{Type: "string", Default: `"npm"`}, "npm", false},
		{Param{Type: "string", Default: `""`}, "", false},
		{Param{Type: "string"}, "", false},
		{Param{Type: "string", Default: "npm"}, nil, true},
		{Param{Type: "bool", Default: "true"}, true, false},
		{Param{Type: "bool", Default: "false"}, false, false},
		{Param{Type: "bool"}, false, false},
		{Param{Type: "bool", Default: "yes"}, nil, true},
		{Param{Type: "[]string", Default: "nil"}, []string(nil), false},
		{Param{Type: "dataset"}, nil, false},
	}
	for _, tt := range tests {
		got, err := tt.p.DefaultValue()
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s %q: got %#v, want an error", tt.p.Type, tt.p.Default, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %q: got %#v, %v; want %#v", tt.p.Type, tt.p.Default, got, err, tt.want)
		}
	}
}

// Every keyword's default literal parses, to a value of its type: a
// table bug is caught here rather than in a cell.
func TestDefaultsParse(t *testing.T) {
	kinds := map[string]reflect.Kind{"int": reflect.Int, "float": reflect.Float64, "string": reflect.String,
		"bool": reflect.Bool, "[]string": reflect.Slice}
	for _, f := range Funcs {
		d, err := f.Defaults()
		if err != nil {
			t.Error(err)
			continue
		}
		if len(d) != len(f.Keywords) {
			t.Errorf("%s: %d defaults for %d keywords", f.Name, len(d), len(f.Keywords))
		}
		for _, p := range f.Keywords {
			k, ok := kinds[p.Type]
			if !ok {
				continue
			}
			if v := reflect.ValueOf(d[p.Name]); v.Kind() != k {
				t.Errorf("%s: default of %s is %#v, not a %s", f.Name, p.Name, d[p.Name], p.Type)
			}
		}
	}
}
