package federated_test

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/federated"
)

// Plan first: the cost and the noise are known before any provider is
// asked for anything, so a ledger can be charged before data are read.
func ExamplePlanPCA() {
	pl, err := federated.PlanPCA(federated.PCAOptions{K: 2, Sparsity: 20, Iters: 15, Eps: 1, Delta: 1e-5}, 500)
	if err != nil {
		panic(err)
	}
	fmt.Println(pl.Cost)
	fmt.Printf("step noise multiplier %.2f, std %.2f per entry of Σ_x x xᵀ Q\n", pl.StepMultiplier, pl.StepStd)
	// Output:
	// federated.dpspca: GDP μ=0.2681 (calibrated to ε=1, δ=1e-05)
	// step noise multiplier 16.15, std 22.85 per entry of Σ_x x xᵀ Q
}

// Three providers hold rows that live on coordinates 1 and 4; the
// noise-free protocol (a baseline, not private) finds that support.
func ExampleRunPCANonPrivate() {
	var providers []*federated.PCAProvider
	for j := range 3 {
		x := mat.NewDense(4, 6, nil)
		for i := range 4 {
			x.Set(i, 1, float64(i+j+1)/10)
			x.Set(i, 4, float64(i-j)/20)
		}
		p, err := federated.NewPCAProvider(x, nil)
		if err != nil {
			panic(err)
		}
		providers = append(providers, p)
	}
	res, err := federated.RunPCANonPrivate(context.Background(), providers, federated.PCAOptions{K: 1, Sparsity: 2, Iters: 5})
	if err != nil {
		panic(err)
	}
	fmt.Println("support:", res.Support)
	// Output:
	// support: [1 4]
}
