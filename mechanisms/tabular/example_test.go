package tabular_test

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// A plan fixes the sensitivity, the rounding excess, the noise scale and
// the cost from public facts only; the run reads the column once.
func ExamplePlanSum() {
	p, err := tabular.PlanSum(0, 100, 1, 0, accounting.AddRemove)
	if err != nil {
		panic(err)
	}
	fmt.Printf("sensitivity %v, rounding excess %.3g, Laplace b = %.6g, cost %v\n", p.Sensitivity, p.Excess, p.Scale, p.Event)
	ages := rows.FromDense(mat.NewDense(4, 1, []float64{31, 45, 27, 130})) // 130 is clamped to 100
	sum, err := p.Run(context.Background(), ages, false, noise.NewSeeded(1))
	fmt.Println(err == nil && sum > 100 && sum < 300)
	// Output:
	// sensitivity 100, rounding excess 0.0066, Laplace b = 100.007, cost pure ε=1
	// true
}

// Numeric bins have public edges and keys; a value's bin is the last edge
// at or below it.
func ExampleNewNumericBins() {
	b, err := tabular.NewNumericBins(0, 100, 4)
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Keys(), b.Bin(25), b.Bin(100))
	// Output:
	// [[0, 25) [25, 50) [50, 75) [75, 100]] 1 3
}

// The quantile's output is a point of a public grid over the bounds; R is
// the most one loss level's weight exceeds the next, at most e^(ε/2).
func ExamplePlanQuantile() {
	p, err := tabular.PlanQuantile(0, 120, 0.5, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("grid of %d intervals, step %.4g; R = %.12f; cost %v\n", p.Grid, p.GridPoint(1), p.Ratio(), p.Event)
	// Output:
	// grid of 1048576 intervals, step 0.0001144; R = 1.648721270700; cost bounded-range ε=1
}
