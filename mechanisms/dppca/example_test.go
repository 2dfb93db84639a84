package dppca_test

import (
	"context"
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/dppca"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// A DP-PCA run is planned without data: the plan validates the options,
// checks that the declared number of rows suffices, and states the cost to
// charge before the run reads anything.
func ExamplePlanDPPCA() {
	opt := dppca.Options{Eps: 0.8, Delta: 1e-7, Centred: true, PublicN: 200000}
	if _, err := dppca.PlanDPPCA(opt, 10); err != nil {
		fmt.Println("refused:", err != nil)
	}
	opt.PublicN = 1000000
	pl, err := dppca.PlanDPPCA(opt, 10)
	if err != nil {
		panic(err)
	}
	fmt.Println("cost:", pl.Cost)
	fmt.Println("steps:", pl.Steps, "groups:", pl.Groups, "rows needed:", pl.NeededN)

	// The run, on public synthetic data with seeded noise (tests only).
	data, _ := synth.Gaussian(1, 1000000, 10, []float64{1, 0.5})
	opt.Gap, opt.Noise = 0.5, noise.NewSeeded(1)
	res, err := dppca.Run(context.Background(), data.X, opt)
	if err != nil {
		panic(err)
	}
	fmt.Println("released a unit vector of dimension", res.Components.RawMatrix().Rows, "after", res.Steps, "steps")
	// Output:
	// refused: true
	// cost: dppca: approx ε=0.8, δ=1e-07
	// steps: 10 groups: 121 rows needed: 227600
	// released a unit vector of dimension 10 after 10 steps
}
