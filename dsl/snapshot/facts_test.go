package snapshot

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// goFacts is OwnerFacts computed by a pass in Go, row by row, as the
// owner's notes were before: the reference.
func goFacts(t *testing.T, r *Reader, columns []string, norm float64, maxClasses int) OwnerFacts {
	t.Helper()
	src, err := r.ParquetSource(columns)
	if err != nil {
		t.Fatal(err)
	}
	var f OwnerFacts
	d := len(columns)
	classes := map[float64]bool{}
	n := 0
	err = rows.ForEach(context.Background(), src, 7, false, false, func(b *rows.Batch) error {
		for i := range b.N {
			row := b.Row(i, d)
			var s float64
			for _, v := range row {
				s += v * v
			}
			if norm > 0 && math.Sqrt(s) > norm {
				f.OverNorm++
			}
			if classes != nil {
				if v := row[d-1]; v == math.Trunc(v) {
					classes[v] = true
				}
				if v := row[d-1]; v != math.Trunc(v) || len(classes) > maxClasses {
					classes = nil
				}
			}
		}
		n += b.N
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if classes != nil && n > len(classes) {
		f.LastClasses = len(classes)
	}
	return f
}

// OwnerFacts in DuckDB agree with a pass in Go: norms over clamped
// values (a row exactly at the norm is not over it), and the last
// column's classes (integers only, few, each in more than one row).
func TestOwnerFacts(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,few,frac,many,once\n")
	for i := range 60 {
		// a is clamped to [0, 3]; row 0 has the norm 5 exactly (3, 4).
		fmt.Fprintf(&b, "%d,%d,%d,%g,%d,%d\n", 3+i%5, 4+i%3, i%3, float64(i%3)+0.5*float64(i/59), i%12, i)
	}
	info, err := Build(context.Background(), Spec{From: write(t, dir, "f.csv", b.String()),
		Bounds: map[string][2]float64{"a": {0, 3}}}, dir, "f")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct {
		columns []string
		norm    float64
		want    OwnerFacts
	}{
		{[]string{"a", "b", "few"}, 5, OwnerFacts{OverNorm: 40, LastClasses: 3}},
		{[]string{"a", "b"}, 0, OwnerFacts{LastClasses: 3}},
		{[]string{"a", "b", "frac"}, 5.5, OwnerFacts{OverNorm: 40}}, // one fraction, in the last row
		{[]string{"a", "frac"}, 0, OwnerFacts{}},                    // found by the query that stops at it
		{[]string{"a", "many"}, 1e9, OwnerFacts{}},                  // 12 distinct values, above the limit
		{[]string{"a", "once"}, 4, OwnerFacts{OverNorm: 57}},        // 60 values in 60 rows: no classes
		{[]string{"many"}, -1, OwnerFacts{}},
	} {
		got, err := r.OwnerFacts(context.Background(), tc.columns, tc.norm, 10)
		if err != nil {
			t.Fatalf("%v: %v", tc.columns, err)
		}
		ref := goFacts(t, r, tc.columns, tc.norm, 10)
		if got != tc.want || got != ref {
			t.Errorf("%v, norm %g: %+v, want %+v (a pass in Go: %+v)", tc.columns, tc.norm, got, tc.want, ref)
		}
	}
	if _, err := r.OwnerFacts(context.Background(), []string{"nope"}, 1, 10); err == nil {
		t.Error("facts of an unknown column")
	}
}
