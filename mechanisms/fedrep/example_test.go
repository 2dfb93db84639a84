package fedrep_test

import (
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/fedrep"
)

// The experiment's calibration (federated.md §2.3): 20000 users, ψ = 10,
// T = 5, δ = 1e-6, 20% of the budget for the initialisation, user-level
// replace-one neighbours. Known before any user is asked for anything.
func ExamplePlanRun() {
	pl, err := fedrep.PlanRun(fedrep.Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 5, Eps: 1, Delta: 1e-6}, 50, 20000)
	if err != nil {
		panic(err)
	}
	fmt.Println(pl.Cost)
	fmt.Printf("σ̂ = %.3g per entry of the averaged gradient (noise multiplier %.2f)\n", pl.StepAverageStd, pl.StepMultiplier)
	// Output:
	// fedrep: GDP μ=0.2367 (calibrated to ε=1, δ=1e-06)
	// σ̂ = 0.0106 per entry of the averaged gradient (noise multiplier 10.56)
}
