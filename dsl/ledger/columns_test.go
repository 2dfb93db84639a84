package ledger

import (
	"reflect"
	"testing"
)

// TestPublicColumns: the registry's public facts per column, in order:
// features, categorical columns by name, the label; the user column is an
// identifier and is left out.
func TestPublicColumns(t *testing.T) {
	s := Schema{
		Columns:     []string{"income", "age"},
		Bounds:      map[string][2]float64{"age": {0, 120}},
		Categorical: map[string][]string{"region": {"north", "south"}, "kind": {"a"}},
		Unit:        "user", UserColumn: "uid",
		Label: "y", LabelClip: 5,
	}
	got := s.PublicColumns()
	want := []ColumnFact{
		{Name: "income", Kind: "numeric"},
		{Name: "age", Kind: "numeric", Bounded: true, Bounds: [2]float64{0, 120}},
		{Name: "kind", Kind: "categorical", Domain: []string{"a"}},
		{Name: "region", Kind: "categorical", Domain: []string{"north", "south"}},
		{Name: "y", Kind: "label", Bounded: true, Bounds: [2]float64{-5, 5}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PublicColumns() =\n%+v\nwant\n%+v", got, want)
	}
	tests := []struct {
		f     ColumnFact
		limit int
		want  string
	}{
		{want[0], 0, "no public bounds"},
		{want[1], 0, "bounds [0, 120]"},
		{want[3], 0, `domain {north, south} (other values: "other")`},
		{want[3], 1, `domain {north, … (2 categories)} (other values: "other")`},
		{want[4], 0, "bounds [-5, 5]"},
	}
	for _, tc := range tests {
		if got := tc.f.Public(tc.limit); got != tc.want {
			t.Errorf("%s.Public(%d) = %q, want %q", tc.f.Name, tc.limit, got, tc.want)
		}
	}
}
