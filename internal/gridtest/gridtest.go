// Package gridtest holds the cases with which each engine's tests check
// the grid's quantization (sqlplan.Grid, each dialect's Quantize) at
// ties: bounds that are themselves half steps of their grid, and values
// that are, so that an engine rounding half away from zero, or a GridOf
// doing so, differs from the grid's rounding half to even.
package gridtest

import (
	"math"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// Case is one aggregate's grid and the values to quantize with it.
type Case struct {
	Agg  sqlplan.Aggregate
	Grid sqlplan.Grid
	// Values are the bounds (first Lo's, then Hi's), their outer and
	// inner neighbours, and ties inside the grid near 0 and near each end.
	Values []float64
}

// Want is q of x as the grid defines it: x clamped to the bounds, then
// the engine's float64 operations, rounded half to even.
func (c Case) Want(x float64) int64 {
	v := min(max(x, c.Agg.Lo), c.Agg.Hi)
	return int64(math.RoundToEven((v - c.Grid.Centre) * (1 / c.Grid.Step)))
}

// Ties are SUM and AVG aggregates over bounds at k + ½ steps of 2^-47
// (odd and even k, negative and positive, the largest magnitude of a
// grid among them) at three scales, the last with a step above 1
// (PostgreSQL's flushed branch).
func Ties() []Case {
	const big, step = 1 << 47, 0x1p-47
	var out []Case
	for _, b := range [][2]float64{{-(big + 0.5), big + 0.5}, {-(big + 1.5), big + 2.5}, {0.5, big + 0.5}, {-(big + 3.5), -0.5}, {-(2*big - 0.5), 3.5}} {
		for _, scale := range []float64{1, 0x1p-100, 0x1p60} {
			for _, kind := range []sqlplan.AggKind{sqlplan.Sum, sqlplan.Avg} {
				a := sqlplan.Aggregate{Name: "a", Kind: kind, Lo: b[0] * step * scale, Hi: b[1] * step * scale}
				g, err := sqlplan.GridOf(a)
				if err != nil {
					panic(err) // the bounds are normal and finite
				}
				vs := []float64{a.Lo, a.Hi, math.Nextafter(a.Lo, math.Inf(-1)), math.Nextafter(a.Hi, math.Inf(1)),
					math.Nextafter(a.Lo, math.Inf(1)), math.Nextafter(a.Hi, math.Inf(-1))}
				for _, k := range []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5} {
					vs = append(vs, g.Centre+k*g.Step, g.Centre+(float64(g.Lo)+3+k)*g.Step, g.Centre+(float64(g.Hi)-3+k)*g.Step)
				}
				out = append(out, Case{Agg: a, Grid: g, Values: vs})
			}
		}
	}
	return out
}
