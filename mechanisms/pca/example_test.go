package pca_test

import (
	"context"
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// A private PCA run is planned first, without data: the plan validates the
// options and states the exact cost, which a caller charges to its ledger
// before the run reads any row.
func ExamplePlanNoisyPower() {
	data, err := synth.Spiked(1, 20000, 10, []float64{8, 4}, 1)
	if err != nil {
		panic(err)
	}
	opt := pca.Options{K: 2, Eps: 1, Delta: 1e-6, Clip: 6, Iters: 20,
		Noise: noise.NewSeeded(7)} // seeded for a reproducible example; omit in real use
	plan, err := pca.PlanNoisyPower(opt, 10)
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Cost)
	// ... charge plan.Cost here, then run exactly the planned mechanism:
	res, err := plan.Run(context.Background(), data.X)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d components, ‖sin Θ‖²_F < 0.01: %v\n", res.Components.RawMatrix().Cols, pca.SinThetaSq(data.U, res.Components) < 0.01)
	// Output:
	// pca/npm: Gaussian zCDP ρ=0.02436 (calibrated to ε=1, δ=1e-06)
	// 2 components, ‖sin Θ‖²_F < 0.01: true
}
