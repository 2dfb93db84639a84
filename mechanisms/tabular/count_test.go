package tabular

import (
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// A count is n plus the sampler's draw at the given scale, rounded: the
// same seed gives the same bits as drawing the noise directly, the value
// is an integer, and a zero scale releases n (the scale, not the count,
// decides the noise).
func TestCount(t *testing.T) {
	for _, c := range []struct {
		name  string
		count func(n int, scale float64, s *noise.Sampler) float64
		draw  func(s *noise.Sampler, scale float64) float64
	}{
		{"laplace", LaplaceCount, (*noise.Sampler).Laplace},
		{"gaussian", GaussianCount, (*noise.Sampler).Gaussian},
	} {
		for _, n := range []int{0, 1, 17, 1 << 30} {
			for _, scale := range []float64{0.5, 1.0000001, 40} {
				for seed := range uint64(5) {
					got := c.count(n, scale, noise.NewSeeded(seed))
					want := math.Round(float64(n) + c.draw(noise.NewSeeded(seed), scale))
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Errorf("%s n=%d scale=%v seed=%d: %v, want %v", c.name, n, scale, seed, got, want)
					}
					if got != math.Trunc(got) {
						t.Errorf("%s n=%d scale=%v seed=%d: %v is not an integer", c.name, n, scale, seed, got)
					}
				}
			}
			if got := c.count(n, 0, noise.NewSeeded(1)); got != float64(n) {
				t.Errorf("%s n=%d scale 0: %v, want n", c.name, n, got)
			}
		}
	}
}
