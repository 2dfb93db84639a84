package noise_test

import (
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// A mechanism calibrates sigma with GaussianScale, which adds the slack of
// the lattice (rounding, and the discrete noise's distance from the
// continuous Gaussian) to the sensitivity, and never uses delta2*z itself.
func ExampleGaussianScale() {
	const (
		delta2     = 1.0 // ℓ2 sensitivity of the released vector
		multiplier = 5.0 // noise multiplier z from the accountant
		m          = 100 // coordinates released
	)
	sigma := noise.GaussianScale(delta2, multiplier, m)
	fmt.Printf("sigma = %.13f\n", sigma)
	fmt.Printf("lattice step = 2^%d\n", exponent(noise.LatticeStep(sigma)))
	fmt.Println(sigma >= multiplier*(delta2+noise.GaussianSlack(sigma, m)))
	// Output:
	// sigma = 5.0000000005457
	// lattice step = 2^-38
	// true
}

func exponent(step float64) int {
	e := 0
	for ; step < 1; step *= 2 {
		e--
	}
	return e
}

// The release of a private vector: calibrate, then add noise in place with
// the crypto sampler. (No output: the noise is random.)
func ExampleSampler_AddGaussian() {
	sums := []float64{12.5, -3.25, 7} // clipped per-row contributions, summed
	sigma := noise.GaussianScale(1, 4, len(sums))
	noise.New().AddGaussian(sums, sigma)
}
