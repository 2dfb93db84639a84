package sqlplan

import (
	"math"
	"strings"
	"testing"
)

// A shift is printed as one subtraction of its exact literal per column,
// after the clamp and before the clip, in every dialect; without one the
// statement is the shifted one without its subtractions; a shift of another length or a non-finite
// value is refused.
func TestMomentsShift(t *testing.T) {
	t.Parallel()
	cols := []string{"a", "b"}
	bounds := map[string][2]float64{"a": {0, 10}}
	for _, d := range []Dialect{DuckDB, PostgreSQL, ClickHouse} {
		plain, err := PrintMoments(Moments{Columns: cols, Bounds: bounds, Clip: 2}, d, "t")
		if err != nil {
			t.Fatal(err)
		}
		for k, print := range []func(Moments, Dialect, string) (string, error){PrintMoments, PrintGaussRowSum} {
			shift := []float64{0.1, -1.0 / 3}
			got, err := print(Moments{Columns: cols, Bounds: bounds, Clip: 2, Shift: shift}, d, "t")
			if err != nil {
				t.Fatal(err)
			}
			for j, c := range cols {
				v := d.Float(d.Ident(c))
				if b, ok := bounds[c]; ok {
					v = d.Clamp(v, d.Num(b[0]), d.Num(b[1]))
				}
				sub := "(" + v + " - " + d.Num(shift[j]) + ") AS "
				if !strings.Contains(got, sub) {
					t.Errorf("%T: column %s is not shifted by %v:\n%s", d, c, shift[j], got)
				}
				got = strings.Replace(got, sub, v+" AS ", 1)
			}
			// Nothing else changes.
			if k == 0 && got != plain {
				t.Errorf("%T: the shifted statement differs from the plain one beyond its shift:\n%s\n%s", d, got, plain)
			}
			for _, bad := range [][]float64{{1}, {1, 2, 3}, {math.NaN(), 0}, {0, math.Inf(-1)}, {1e101, 0}} {
				if _, err := print(Moments{Columns: cols, Clip: 2, Shift: bad}, d, "t"); err == nil {
					t.Errorf("%T: shift %v was printed", d, bad)
				}
			}
		}
	}
}
