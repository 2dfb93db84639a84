package release

import (
	"math"
	"reflect"
	"testing"
)

// A public table's schema: given bounds and domains are kept; without
// them, a numeric column is bounded by its values (widened around a
// single value) and a text column's domain is its distinct values,
// sorted.
func TestPublicTableSchema(t *testing.T) {
	rows := &PublicRows{Columns: []string{"a", "b", "c", "k"}, Numeric: []bool{true, true, true, false},
		Rows: [][]any{{1.0, 2.0, nil, "y"}, {3.0, 2.0, math.NaN(), "x"}, {-1.0, 2.0, nil, nil}}}
	for _, tc := range []struct {
		name    string
		bounds  map[string][2]float64
		domains map[string][]string
		want    map[string][2]float64
		dom     []string
	}{
		{"from the rows", nil, nil, map[string][2]float64{"a": {-1, 3}, "b": {1.5, 2.5}, "c": {0, 1}}, []string{"x", "y"}},
		{"given", map[string][2]float64{"a": {-10, 10}}, map[string][]string{"k": {"y", "z"}},
			map[string][2]float64{"a": {-10, 10}, "b": {1.5, 2.5}, "c": {0, 1}}, []string{"y", "z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := PublicTableSchema("synthetic:table", rows, tc.bounds, tc.domains)
			if !reflect.DeepEqual(sc.Bounds, tc.want) || !reflect.DeepEqual(sc.Categorical["k"], tc.dom) {
				t.Errorf("bounds %v, domain %v; want %v, %v", sc.Bounds, sc.Categorical["k"], tc.want, tc.dom)
			}
			if !reflect.DeepEqual(sc.Columns, []string{"a", "b", "c"}) || sc.PublicN != 3 || sc.Unit != "row" {
				t.Errorf("schema %+v", sc)
			}
		})
	}
}
