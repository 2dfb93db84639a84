// Package extreme makes data that stress the mechanisms' row rules, sums
// and noise scales, for the tests that check a plan accepted before the
// charge runs without error on any data: every finite extreme of float64,
// values whose squares overflow or underflow, NaN and ±Inf. It is public
// test data, never private data.
package extreme

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// kinds are the value kinds, cycled by row.
var kinds = []func(i, j int) float64{
	func(i, j int) float64 { return math.MaxFloat64 * math.Cos(float64(i+j)) },
	func(_, j int) float64 { return math.SmallestNonzeroFloat64 * float64(1+j) },
	func(int, int) float64 { return math.NaN() },
	func(_, j int) float64 { return math.Inf(1 - 2*(j%2)) },
	func(int, int) float64 { return 0 },
	func(i, j int) float64 { return math.Sin(float64(3*i + j)) },
	func(_, j int) float64 { return 1e160 * float64(j+1) }, // squares overflow
	func(_, j int) float64 { return 6e161 * float64(j%2) }, // 1/‖a‖² subnormal
	func(_, j int) float64 { return 1e200 * float64(j+1) }, // far beyond
}

// Kinds is the number of value kinds: rows i and i+Kinds hold the same kind.
var Kinds = len(kinds)

// Rows returns n rows of d columns; row i holds kind (i+shift) mod Kinds.
func Rows(n, d, shift int) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := range n {
		k := kinds[(i+shift)%len(kinds)]
		for j := range d {
			x.Set(i, j, k(i, j))
		}
	}
	return x
}
