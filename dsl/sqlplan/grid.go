package sqlplan

import (
	"fmt"
	"math"
)

// GridBits is the resolution of an aggregate's fixed-point grid: the
// largest magnitude of a (centred) clamped value is at most 2^GridBits
// grid steps. 48 bits keep a square (2^96) summed over 2^30 rows below
// 2^127, the range of the engine's 128-bit integers, and put the grid's
// rounding near 2^-49 of the bounds, far below any noise.
const GridBits = 48

// MaxRows is the most rows the grid's integer sums are sized for: the
// data registry's limit (mechanisms/tabular.MaxRows, 2^30).
const MaxRows = 1 << 30

// Grid is the fixed-point form in which the printed statement sums an
// aggregate's values. Each clamped value c becomes the integer
//
//	q = clamp(round((c − Centre) / Step), Lo, Hi)
//
// (an exact integer in the engine's BIGINT; NULL stays NULL; for c in
// the aggregate's bounds the clamp changes nothing, as Lo and Hi are the
// rounded ends themselves, so the DuckDB and PostgreSQL statements omit
// it), where round is to
// the nearest integer with ties to even: the IEEE default, which DuckDB's
// and PostgreSQL's casts of a double to a 64-bit integer do by themselves
// (a written-out round cost DuckDB as much as the integer sum), and
// ClickHouse's dialect by one addition and subtraction (chRoundEven).
// Only the grid rounds so: the SQL function round stays DuckDB's half
// away from zero in every dialect (Dialect.Func). The statement returns
// Σ q, and Σ q² for a variance, as exact 128-bit integer sums. Integer
// addition is exact and associative, so the sums do
// not depend on the engine's summation order or parallelism: the only
// rounding left is the conversion of the final integer to float64, which
// the noise step charges (see RoundingExcess). Step is a power of two,
// so scaling by it is exact.
type Grid struct {
	Centre float64 // 0 for SUM, the midpoint (lo + hi)/2 otherwise
	Step   float64 // a power of two
	Lo, Hi int64   // the integer range of q
}

// Low and High are the grid's value range [Lo·Step, Hi·Step]: the range
// of a term q·Step of the released sums, from which the noise step takes
// their sensitivities. It contains [lo − Centre, hi − Centre] up to the
// grid's rounding (half a step).
func (g Grid) Low() float64  { return float64(g.Lo) * g.Step }
func (g Grid) High() float64 { return float64(g.Hi) * g.Step }

// Magnitude is the largest |q·Step| of a term.
func (g Grid) Magnitude() float64 { return max(math.Abs(g.Low()), math.Abs(g.High())) }

// RoundingExcess bounds how much further apart than their exact values
// the float64 conversions of two neighbouring data sets' sums can be,
// for terms of magnitude at most m (Magnitude, or its square for Σ q²):
// each exact sum S has |S| ≤ MaxRows·m, and its correctly rounded
// conversion moves it by at most 2^-53·|S|, so two sums move apart by at
// most 2·2^-53·MaxRows·m = 2^-22·m. Scaling by Step is exact. The bound
// holds for any summation order, since the integer sum is exact.
func RoundingExcess(m float64) float64 {
	return m * 0x1p-22 * (1 + 0x1p-50)
}

// MaxVarianceBound bounds the half-width (hi − lo)/2 of a VARIANCE or
// STDDEV, so that its squares and their sums stay finite.
const MaxVarianceBound = 0x1p480

// GridOf returns the grid of a SUM, AVG, VARIANCE or STDDEV aggregate.
// It fails (before any charge) for bounds whose magnitude is too small to
// have a normal-range grid step (below about 2^-970) or, for a variance,
// too large to square.
func GridOf(a Aggregate) (Grid, error) {
	var g Grid
	switch a.Kind {
	case Sum:
	case Avg, Variance, Stddev:
		g.Centre = a.Lo/2 + a.Hi/2 // halves first: no overflow for huge bounds
	default:
		return g, fmt.Errorf("sqlplan: %s has no grid", a.Kind)
	}
	if !finite(a.Lo) || !finite(a.Hi) || !(a.Lo < a.Hi) {
		return g, fmt.Errorf("sqlplan: aggregate %s has invalid bounds [%g, %g]", a.Name, a.Lo, a.Hi)
	}
	// The same float64 operations the engine performs on the clamped
	// bounds (x − Centre, then · 1/Step, then round half to even), so
	// that [Lo, Hi] is exactly the range of the engine's q, which the
	// statements therefore do not clamp again (duckDB.Quantize). Rounding
	// the bounds half away from zero instead would widen [Lo, Hi] by a
	// step beyond the engine's range for a bound at an odd half step:
	// harmless for privacy (the sensitivities would be wider), but no
	// longer the range the engine's q takes.
	lo, hi := a.Lo-g.Centre, a.Hi-g.Centre
	m := max(math.Abs(lo), math.Abs(hi))
	if m == 0 || math.IsInf(m, 0) {
		return g, fmt.Errorf("sqlplan: aggregate %s has invalid bounds [%g, %g]", a.Name, a.Lo, a.Hi)
	}
	_, e := math.Frexp(m) // m < 2^e
	if e-GridBits < -1000 {
		return g, refuse(a.Name, -1, "the clamping bounds [%g, %g] are too close to 0 to be summed exactly; scale the value (e.g. x * 1e6) and the bounds", a.Lo, a.Hi)
	}
	if (a.Kind == Variance || a.Kind == Stddev) && (m > MaxVarianceBound || e-GridBits < -480) {
		return g, refuse(a.Name, -1, "the clamping bounds [%g, %g] are too wide or too narrow for a variance (its half-width must lie between 2^-430 and 2^480, so that squares stay in float64's normal range); scale the value and the bounds", a.Lo, a.Hi)
	}
	g.Step = math.Ldexp(1, e-GridBits)
	inv := 1 / g.Step // exact: a power of two up to 2^1000
	g.Lo = int64(math.RoundToEven(lo * inv))
	g.Hi = int64(math.RoundToEven(hi * inv))
	return g, nil
}

// QuantileGrid is the histogram grid of a QUANTILE aggregate: bin b of a
// clamped value c is the first grid point Lo + b·Step at or above it,
//
//	b = clamp(⌈(c − Lo) / Step⌉, 0, Bins),
//
// with Step = (Hi − Lo)/Bins computed as the mechanism computes it (so
// the grid points are the mechanism's). The engine's rounding of the
// quotient can put a value one bin off a grid point it lies on; that moves
// the released quantile by at most one step and does not touch privacy,
// since the bin depends on the row's value alone.
type QuantileGrid struct {
	Lo, Step float64
	Bins     int
}

// QuantileGridOf returns a QUANTILE aggregate's histogram grid; it fails
// when the caller has not set the aggregate's Bins.
func QuantileGridOf(a Aggregate) (QuantileGrid, error) {
	if a.Kind != Quantile {
		return QuantileGrid{}, fmt.Errorf("sqlplan: %s has no quantile grid", a.Kind)
	}
	if a.Bins < 1 || a.Bins > MaxQuantileBins || !finite(a.Lo) || !finite(a.Hi) || !(a.Lo < a.Hi) {
		return QuantileGrid{}, fmt.Errorf("sqlplan: printing %s %s: its grid is not planned (%d bins over [%g, %g]): %w", a.Kind, a.Name, a.Bins, a.Lo, a.Hi, ErrNotYet)
	}
	step := (a.Hi - a.Lo) / float64(a.Bins)
	if !(step > 0) || math.IsInf(step, 0) {
		return QuantileGrid{}, fmt.Errorf("sqlplan: aggregate %s has an invalid quantile grid over [%g, %g]", a.Name, a.Lo, a.Hi)
	}
	return QuantileGrid{Lo: a.Lo, Step: step, Bins: a.Bins}, nil
}

// MaxQuantileBins bounds a quantile's grid: a histogram of at most
// MaxQuantileBins+1 counts per group comes back from the engine.
const MaxQuantileBins = 1 << 24
