package snapshot

import (
	"database/sql"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/gridtest"
)

// TestDuckDBGridRange runs the DuckDB dialect's clamp, quantization and
// binning on the values that could break them (NULL, NaN, ±inf, ±max,
// the bounds and their neighbours) for awkward bounds: random 17-digit
// doubles, tiny and huge magnitudes, bounds whose scaled value lies near
// a rounding half. The printed quantization has no integer clamp
// (sqlplan's duckDB.Quantize argues q ∈ [Lo, Hi] from the clamp), so
// this checks the argument on the engine itself: every q lies in the
// grid's range and the bounds map to exactly Lo and Hi; every bin lies in
// [0, Bins]; NULL stays NULL; and the printed numbers read back as the
// same bits, which the argument needs.
func TestDuckDBGridRange(t *testing.T) {
	c, err := openDuck("")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	type bounds struct{ lo, hi float64 }
	cases := []bounds{{0, 200000}, {18, 90}, {-1.5, 1e6}, {-1e300, 1e300}, {1e-290, 3e-290}, {-7, -3}, {0.1, 0.3}}
	r := rand.New(rand.NewPCG(27, 1))
	for range 60 {
		a := r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-4))
		b := a + math.Abs(r.NormFloat64())*math.Pow(10, float64(r.IntN(12)-4))
		if a < b {
			cases = append(cases, bounds{a, b})
		}
	}
	values := func(lo, hi float64) []string {
		vs := []string{"NULL", "CAST('nan' AS DOUBLE)", "CAST('inf' AS DOUBLE)", "CAST('-inf' AS DOUBLE)"}
		for _, v := range []float64{lo, hi, math.Nextafter(lo, math.Inf(-1)), math.Nextafter(lo, math.Inf(1)),
			math.Nextafter(hi, math.Inf(-1)), math.Nextafter(hi, math.Inf(1)), lo/2 + hi/2, math.MaxFloat64, -math.MaxFloat64, 0} {
			vs = append(vs, sqlplan.DuckDB.Num(v))
		}
		return vs
	}
	for _, b := range cases {
		// The bounds as the engine reads them.
		var lo, hi float64
		if err := db.QueryRow("SELECT "+sqlplan.DuckDB.Num(b.lo)+", "+sqlplan.DuckDB.Num(b.hi)).Scan(&lo, &hi); err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(lo) != math.Float64bits(b.lo) || math.Float64bits(hi) != math.Float64bits(b.hi) {
			t.Errorf("Num(%v), Num(%v) read back as %v, %v", b.lo, b.hi, lo, hi)
		}
		for _, kind := range []sqlplan.AggKind{sqlplan.Sum, sqlplan.Avg} {
			g, err := sqlplan.GridOf(sqlplan.Aggregate{Name: "a", Kind: kind, Lo: b.lo, Hi: b.hi})
			if err != nil {
				continue // bounds the grid refuses
			}
			vs := values(b.lo, b.hi)
			var cols []string
			for _, v := range vs {
				cols = append(cols, sqlplan.DuckDB.Quantize(sqlplan.DuckDB.Clamp(v, sqlplan.DuckDB.Num(b.lo), sqlplan.DuckDB.Num(b.hi)), g))
			}
			got := make([]sql.NullInt64, len(cols))
			dst := make([]any, len(cols))
			for i := range got {
				dst[i] = &got[i]
			}
			if err := db.QueryRow("SELECT " + strings.Join(cols, ", ")).Scan(dst...); err != nil {
				t.Fatalf("[%v, %v] %s: %v", b.lo, b.hi, kind, err)
			}
			for i, q := range got {
				switch {
				case i == 0 && q.Valid:
					t.Errorf("[%v, %v] %s: NULL quantized to %d", b.lo, b.hi, kind, q.Int64)
				case i > 0 && (!q.Valid || q.Int64 < g.Lo || q.Int64 > g.Hi):
					t.Errorf("[%v, %v] %s: %s quantized to %v, outside [%d, %d]", b.lo, b.hi, kind, vs[i], q, g.Lo, g.Hi)
				}
			}
			// lo, below lo, −inf and −max map to Lo; hi, above hi,
			// NaN, inf and max to Hi.
			for _, i := range []int{4, 6, 3, 12} {
				if got[i].Int64 != g.Lo {
					t.Errorf("[%v, %v] %s: %s quantized to %d, want Lo = %d", b.lo, b.hi, kind, vs[i], got[i].Int64, g.Lo)
				}
			}
			for _, i := range []int{5, 9, 1, 2, 11} {
				if got[i].Int64 != g.Hi {
					t.Errorf("[%v, %v] %s: %s quantized to %d, want Hi = %d", b.lo, b.hi, kind, vs[i], got[i].Int64, g.Hi)
				}
			}
		}
		for _, bins := range []int{1, 3, 1000, 1 << 20} {
			qg, err := sqlplan.QuantileGridOf(sqlplan.Aggregate{Name: "q", Kind: sqlplan.Quantile, Lo: b.lo, Hi: b.hi, Bins: bins})
			if err != nil {
				continue
			}
			vs := values(b.lo, b.hi)
			var cols []string
			for _, v := range vs {
				cols = append(cols, sqlplan.DuckDB.Bin(sqlplan.DuckDB.Clamp(v, sqlplan.DuckDB.Num(b.lo), sqlplan.DuckDB.Num(b.hi)), qg))
			}
			got := make([]sql.NullInt64, len(cols))
			dst := make([]any, len(cols))
			for i := range got {
				dst[i] = &got[i]
			}
			if err := db.QueryRow("SELECT " + strings.Join(cols, ", ")).Scan(dst...); err != nil {
				t.Fatalf("[%v, %v] %d bins: %v", b.lo, b.hi, bins, err)
			}
			for i, q := range got {
				switch {
				case i == 0 && q.Valid:
					t.Errorf("[%v, %v] %d bins: NULL binned to %d", b.lo, b.hi, bins, q.Int64)
				case i > 0 && (!q.Valid || q.Int64 < 0 || q.Int64 > int64(bins)):
					t.Errorf("[%v, %v] %d bins: %s binned to %v, outside [0, %d]", b.lo, b.hi, bins, vs[i], q, bins)
				}
			}
			if got[4].Int64 != 0 {
				t.Errorf("[%v, %v] %d bins: lo binned to %d, want 0", b.lo, b.hi, bins, got[4].Int64)
			}
		}
	}
}

// At bounds that are grid ties, DuckDB's q of every value is the grid's
// (half to even), and its range is exactly [Lo, Hi]: the bounds map to
// Lo and Hi, as GridOf computes them.
func TestDuckDBGridTies(t *testing.T) {
	c, err := openDuck("")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	d := sqlplan.DuckDB
	for _, tc := range gridtest.Ties() {
		a, g := tc.Agg, tc.Grid
		cols := []string{d.Quantize(d.Clamp("CAST(NULL AS DOUBLE)", d.Num(a.Lo), d.Num(a.Hi)), g)}
		for _, v := range tc.Values {
			cols = append(cols, d.Quantize(d.Clamp(d.Num(v), d.Num(a.Lo), d.Num(a.Hi)), g))
		}
		got := make([]sql.NullInt64, len(cols))
		dst := make([]any, len(cols))
		for i := range got {
			dst[i] = &got[i]
		}
		if err := db.QueryRow("SELECT " + strings.Join(cols, ", ")).Scan(dst...); err != nil {
			t.Fatalf("[%v, %v] %s: %v", a.Lo, a.Hi, a.Kind, err)
		}
		if got[0].Valid {
			t.Errorf("[%v, %v] %s: NULL quantized to %d", a.Lo, a.Hi, a.Kind, got[0].Int64)
		}
		for i, v := range tc.Values {
			if q := got[i+1]; !q.Valid || q.Int64 != tc.Want(v) || q.Int64 < g.Lo || q.Int64 > g.Hi {
				t.Errorf("[%v, %v] %s: %v quantized to %v, want %d in [%d, %d]", a.Lo, a.Hi, a.Kind, v, q, tc.Want(v), g.Lo, g.Hi)
			}
		}
		if got[1].Int64 != g.Lo || got[2].Int64 != g.Hi {
			t.Errorf("[%v, %v] %s: the bounds quantized to %d, %d, want [%d, %d]", a.Lo, a.Hi, a.Kind, got[1].Int64, got[2].Int64, g.Lo, g.Hi)
		}
	}
}
