package tabular

import (
	"math"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// CountSensitivity is the sensitivity, ℓ1 and ℓ2, of a count of privacy
// units. Under add-remove a neighbour changes the count by 1; under
// replace-one it does not change it, but the count is noised as if it did,
// so that the number of units is never released exactly.
const CountSensitivity = 1

// LaplaceCount releases the count n of privacy units by the discrete
// Laplace mechanism (Dwork, McSherry, Nissim and Smith 2006, on the
// integer lattice; Canonne, Kamath and Steinke 2020's sampler): n plus
// discrete Laplace noise of scale b, rounded to an integer. With
// b = noise.LaplaceScale(CountSensitivity, ε, 1) it is ε-DP. The caller
// counts n from the data after the release was charged; n is private and
// enters only the returned value.
func LaplaceCount(n int, b float64, s *noise.Sampler) float64 {
	return math.Round(float64(n) + s.Laplace(b))
}

// GaussianCount releases the count n of privacy units by the discrete
// Gaussian mechanism (Canonne, Kamath and Steinke 2020): n plus discrete
// Gaussian noise of standard deviation sigma, rounded to an integer. With
// sigma = noise.GaussianScale(CountSensitivity, z, 1) and z = 1/√(2ρ) it
// is ρ-zCDP (Bun and Steinke 2016, Prop. 1.6).
func GaussianCount(n int, sigma float64, s *noise.Sampler) float64 {
	return math.Round(float64(n) + s.Gaussian(sigma))
}
