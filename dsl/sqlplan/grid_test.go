package sqlplan

import (
	"math"
	"testing"
)

// TieBounds' scale: bounds in [1, 2) have the grid step 2^-47.
const tieStep = 0x1p-47

// Bounds that are themselves ties of the grid (an odd or even integer
// and a half of steps) map to their ends rounded half to even, the
// engines' rounding, not half away from zero; at every scale (the step
// scales with the bounds, so the ties stay ties).
func TestGridOfTies(t *testing.T) {
	const big = 1 << 47
	cases := []struct {
		lo, hi float64 // in steps of 2^-47
		loQ    int64
		hiQ    int64
	}{
		{-(big + 0.5), big + 0.5, -big, big},           // even floor: half away would give ∓1 more
		{-(big + 1.5), big + 2.5, -(big + 2), big + 2}, // odd, then even
		{0.5, big + 0.5, 0, big},                       // a positive tie at 0
		{-(big + 3.5), -0.5, -(big + 4), 0},            // a negative tie at 0
		{-(2*big - 0.5), 3.5, -(2 * big), 4},           // the grid's largest magnitude
		{-(big + 0.25), big + 0.75, -big, big + 1},     // no ties
		{-(big + 1e6 + 0.5), -(big + 0.5), -(big + 1e6), -big},
	}
	for _, c := range cases {
		for _, scale := range []float64{1, 0x1p-100, 0x1p100, 0x1p-900, 0x1p900} {
			a := Aggregate{Name: "s", Kind: Sum, Lo: c.lo * tieStep * scale, Hi: c.hi * tieStep * scale}
			g, err := GridOf(a)
			if err != nil {
				t.Fatalf("[%v, %v]: %v", a.Lo, a.Hi, err)
			}
			if g.Step != tieStep*scale || g.Lo != c.loQ || g.Hi != c.hiQ {
				t.Errorf("[%v, %v] steps at scale %g: grid step %g, [%d, %d], want %g, [%d, %d]", c.lo, c.hi, scale, g.Step, g.Lo, g.Hi, tieStep*scale, c.loQ, c.hiQ)
			}
		}
	}
}

// chRoundEven's float arithmetic (Go's float64 is IEEE's, as
// ClickHouse's) rounds half to even exactly, at ties, their neighbours,
// the branch ends and beyond, for both its forms.
func TestChRoundEvenArithmetic(t *testing.T) {
	shift := func(w float64) float64 { return (w + roundEvenShift) - roundEvenShift }
	general := func(w float64) float64 {
		const p = 0x1p52
		switch {
		case math.Abs(w) >= p:
			return w
		case w < 0:
			return p - (p - w)
		}
		return (w + p) - p
	}
	var ws []float64
	for _, w := range []float64{0, 0.5, 1.5, 2.5, 0.49999999999999994, 0.5000000000000001, 3, 1e6 + 0.5, 0x1p48 + 0.5, 0x1p48 - 0.5, 0x1p51 - 0.5, 0x1p51, 0x1p52 - 0.5, 0x1p52 - 1.5, 0x1p52, 0x1p52 + 2, 0x1p60, 5e-324, math.MaxFloat64} {
		ws = append(ws, w, -w, math.Nextafter(w, 0), math.Nextafter(w, math.Inf(1)), -math.Nextafter(w, math.Inf(1)))
	}
	for _, w := range ws {
		want := math.RoundToEven(w)
		if math.Abs(w) <= 1<<51 {
			if got := shift(w); got != want {
				t.Errorf("shift form of %v: %v, want %v", w, got, want)
			}
		}
		if got := general(w); got != want {
			t.Errorf("general form of %v: %v, want %v", w, got, want)
		}
	}
}
