package release

import (
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// varianceRange is the exact range of S2/C − (S1/C)² over the box, its
// extremes at the corners or at the stationary point C = 2b/a.
func TestVarianceRange(t *testing.T) {
	t.Parallel()
	const top = 1000.0
	for _, c := range []struct {
		name           string
		c, s1, s2      float64
		hc, h1, h2     float64
		wantLo, wantHi float64
	}{
		{"exact parts", 100, 0, 400, 0, 0, 0, 4, 4},
		{"sum of squares ± 100", 100, 0, 400, 0, 0, 100, 3, 5},
		{"S1 around 0: the max takes S1 = 0, the min |S1| = 10", 100, 0, 400, 0, 10, 100, 2.99, 5},
		{"count in [50, 100]", 75, 0, 400, 25, 0, 0, 4, 8},
		{"stationary point C = 2b/a inside [1, 100]", 50.5, 10, 150, 49.5, 0, 0, 1.49, 56.25},
		{"count below 1 throughout: the feasible range", 0.3, 0, 400, 0.2, 0, 0, 0, top},
		{"count may be 0: 0 is in", 1, 0, 40, 1, 0, 0, 0, 40},
		{"count at least 1 (C an integer ≥ 0.5)", 1.5, 0, 40, 1, 0, 0, 40.0 / 2, 40},
		{"no point of the box feasible", 100, 0, -1000, 0, 0, 1, 0, top},
		{"clipped at the top", 1, 0, 1000, 0, 0, 500, 500, top},
		{"wholly above the top: the feasible range", 1, 0, 1e6, 0, 0, 0, 0, top},
		{"NaN part", math.NaN(), 0, 1, 1, 1, 1, 0, top},
	} {
		lo, hi := varianceRange(c.c, c.s1, c.s2, c.hc, c.h1, c.h2, top)
		if math.Abs(lo-c.wantLo) > 1e-9 || math.Abs(hi-c.wantHi) > 1e-9 {
			t.Errorf("%s: [%v, %v], want [%v, %v]", c.name, lo, hi, c.wantLo, c.wantHi)
		}
	}
}

// The columns' ErrorModels: COUNT and COUNT(DISTINCT) rounded counts, SUM
// with its excess, AVG a ratio re-centred on the midpoint, VARIANCE and
// STDDEV three parts, QUANTILE the rank bound; all from public scales.
func TestSQLColumnModels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kind         sqlplan.AggKind
		want         string
		rounded      bool
		centre, step bool
		root         bool
	}{
		{sqlplan.Count, ErrLaplace, true, false, false, false},
		{sqlplan.CountDistinct, ErrLaplace, true, false, false, false},
		{sqlplan.Sum, ErrLaplace, false, false, false, false},
		{sqlplan.Avg, ErrRatio, false, true, true, false},
		{sqlplan.Variance, ErrVariance, false, true, true, false},
		{sqlplan.Stddev, ErrVariance, false, true, true, true},
		{sqlplan.Quantile, ErrExponential, false, false, false, false},
	} {
		sp := auditPlan(c.kind, 2, 10, nil)
		rels, err := sqlReleases(sp, 1, accounting.AddRemove, []float64{1}, 1, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := sqlOutputs(sp)
		m, ok := sqlErrors(sp.Outputs, rels, cols)["a"]
		if !ok || m.Kind != c.want || m.Rounded != c.rounded || (m.Centre == 6) != c.centre || (m.GridStep > 0) != c.step || m.Root != c.root {
			t.Errorf("%v: %+v (ok %v)", c.kind, m, ok)
		}
		switch m.Kind {
		case ErrLaplace:
			if h, _ := m.HalfWidth(DefaultLevel); m.HalfWidth95 != h || h <= 0 {
				t.Errorf("%v: half-width %v, stored %v", c.kind, h, m.HalfWidth95)
			}
		case ErrRatio, ErrVariance:
			if m.SumHalfWidth <= 0 || m.CountHalfWidth <= 0 || m.Lo != 2 || m.Hi != 10 {
				t.Errorf("%v: %+v", c.kind, m)
			}
			if m.Kind == ErrVariance && m.SquareHalfWidth <= m.SumHalfWidth {
				t.Errorf("%v: the sum of squares' half-width %v", c.kind, m.SquareHalfWidth)
			}
		case ErrExponential:
			if m.RankError95 <= 0 || m.Candidates != rels[0].qp.Grid+1 {
				t.Errorf("%v: %+v", c.kind, m)
			}
		}
	}
}

// With negligible noise the cell intervals close in on the true values:
// an AVG's sums are of x − Centre, so its interval is shifted back; a
// STDDEV's is the root of the variance's; and each interval at 0.99 holds
// the one at 0.9. Wrong parts give no interval.
func TestSQLCellIntervals(t *testing.T) {
	t.Parallel()
	// 100 values in [0, 10] with mean 7 and variance 4: centred on 5,
	// S1 = 200, S2 = 100·(4 + 2²) = 800.
	avg := ratioModel(false, 1e-6, 1e-6, 0, 0, 10)
	avg.Centre, avg.GridStep = 5, 0x1p-44
	lo, hi, err := avg.CellInterval(7, []float64{100, 200}, 0.95)
	if err != nil || math.Abs(lo-7) > 1e-6 || math.Abs(hi-7) > 1e-6 || lo > 7 || hi < 7 {
		t.Errorf("AVG [%v, %v] (%v), want ≈ 7", lo, hi, err)
	}
	vm := ratioModel(false, 1e-6, 1e-6, 0, 0, 10)
	vm.Kind, vm.Centre, vm.GridStep, vm.SquareScale = ErrVariance, 5, 0x1p-44, 1e-6
	lo, hi, err = vm.CellInterval(4, []float64{100, 200, 800}, 0.95)
	if err != nil || math.Abs(lo-4) > 1e-6 || math.Abs(hi-4) > 1e-6 || lo > 4 || hi < 4 {
		t.Errorf("VARIANCE [%v, %v] (%v), want ≈ 4", lo, hi, err)
	}
	vm.Root = true
	lo, hi, err = vm.CellInterval(2, []float64{100, 200, 800}, 0.95)
	if err != nil || math.Abs(lo-2) > 1e-6 || math.Abs(hi-2) > 1e-6 || lo > 2 || hi < 2 {
		t.Errorf("STDDEV [%v, %v] (%v), want ≈ 2", lo, hi, err)
	}
	// Noisy: the box at 1 − α/3 per part is what the interval uses.
	vm.Root = false
	vm.Scale, vm.CountScale, vm.SquareScale = 5, 2, 40
	lo90, hi90, _ := vm.CellInterval(4, []float64{100, 200, 800}, 0.9)
	lo99, hi99, _ := vm.CellInterval(4, []float64{100, 200, 800}, 0.99)
	if !(lo99 < lo90 && hi90 < hi99 && lo90 < 4 && 4 < hi90) {
		t.Errorf("VARIANCE at 0.9 [%v, %v], at 0.99 [%v, %v]", lo90, hi90, lo99, hi99)
	}
	hc, _ := noiseHalfWidth(ErrLaplace, 2, false, 1-0.1/3)
	h1, _ := noiseHalfWidth(ErrLaplace, 5, false, 1-0.1/3)
	h2, _ := noiseHalfWidth(ErrLaplace, 40, false, 1-0.1/3)
	blo, bhi := varianceRange(100, 200, 800, hc, h1, h2, 25)
	if math.Abs(lo90-blo) > 1e-9 || math.Abs(hi90-bhi) > 1e-9 {
		t.Errorf("VARIANCE at 0.9 [%v, %v], want the box's range [%v, %v]", lo90, hi90, blo, bhi)
	}
	for _, c := range []struct {
		m     ErrorModel
		parts []float64
	}{
		{avg, []float64{1}},
		{vm, []float64{1, 2}},
		{rankModel(10, 2), nil},
	} {
		if _, _, err := c.m.CellInterval(1, c.parts, 0.95); err == nil {
			t.Errorf("%s with parts %v: an interval", c.m.Kind, c.parts)
		}
	}
	if _, _, err := vm.CellInterval(4, []float64{100, 200, 800}, 1); err == nil {
		t.Error("level 1: an interval")
	}
}

// A table's parts survive the release's encoding; a table without any
// encodes as before.
func TestTablePartsEncoding(t *testing.T) {
	t.Parallel()
	tab := &Table{Columns: []string{"k", "m"}, Kinds: []string{"key", "avg"}, Rows: [][]any{{"a", 7.0}, {"b", 3.5}},
		Parts: map[string][][]float64{"m": {{100, 50.25}, {200, -75}}}}
	for _, v := range []*Table{tab, {Columns: tab.Columns, Kinds: tab.Kinds, Rows: tab.Rows}} {
		enc, _, err := EncodeShown(v, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Parts == nil && strings.Contains(string(enc), "parts") {
			t.Errorf("a table without parts encodes them: %s", enc)
		}
		dec, _, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		got := dec.(*Table)
		if len(got.Parts) != len(v.Parts) || v.Parts != nil && (got.Parts["m"][0][1] != 50.25 || got.Parts["m"][1][1] != -75) {
			t.Errorf("parts %v, want %v", got.Parts, v.Parts)
		}
	}
}

// A dry run states each column's data-independent error.
func TestSQLErrorText(t *testing.T) {
	t.Parallel()
	errs := map[string]ErrorModel{
		"n":   noiseModel(false, 4, true, 0),
		"m":   {Kind: ErrRatio, SumHalfWidth: 12.5, CountHalfWidth: 3},
		"v":   {Kind: ErrVariance, SumHalfWidth: 12.5, CountHalfWidth: 3, SquareHalfWidth: 700},
		"med": {Kind: ErrExponential, RankError95: 9},
	}
	got := sqlErrorText(errs)
	for _, want := range []string{"n ± 12", "m from its noisy centred sum (± 12.5) and count (± 3)", "v from its noisy count (± 3), centred sum (± 12.5) and sum of squares (± 700)", "med rank within ±9 rows"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
