package noise_test

import (
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// A count released with discrete Laplace noise of scale b = 1/ε carries a
// 95 % interval computed from b alone: nothing about the data enters.
func ExampleLaplaceHalfWidth() {
	const eps = 0.5
	b := noise.LaplaceScale(1, eps, 1) // the count's noise scale
	h, _ := noise.LaplaceHalfWidth(b, 0.95)
	fmt.Printf("b = %.6f, 95%% half-width %.6f (continuous: b·ln 20 = %.6f)\n", b, h, 2*2.995732)
	g, _ := noise.GaussianHalfWidth(10, 0.95)
	fmt.Printf("Gaussian σ = 10: 95%% half-width %.6f\n", g)
	// Output:
	// b = 2.000000, 95% half-width 5.991465 (continuous: b·ln 20 = 5.991464)
	// Gaussian σ = 10: 95% half-width 19.599640
}
