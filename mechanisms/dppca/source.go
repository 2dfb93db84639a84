package dppca

import (
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// testKnob alters a run for tests only; it cannot be set outside this
// package, so no caller can weaken a release with it.
type testKnob struct {
	noiseScale float64 // multiplies every noise scale (Laplace and Gaussian)
	trace      *trace  // receives non-private diagnostics
}

// trace holds diagnostics that are NOT differentially private. Only tests
// in this package can ask for them.
type trace struct {
	groupEigen [][]float64 // Algorithm 4: λ^(j) per call
	truncated  []int       // Algorithm 5: truncated coordinates per call
	means      [][]float64 // Algorithm 5: exact truncated mean per call
	released   [][]float64 // Algorithm 5: the noisy mean per call (itself DP)
}

// source draws the noise of a run, with the test-only scale.
type source struct {
	s     *noise.Sampler
	scale float64
	tr    *trace
}

func newSource(s *noise.Sampler, k *testKnob) source {
	if s == nil {
		s = noise.New()
	}
	src := source{s: s, scale: 1}
	if k != nil {
		src.scale = k.noiseScale
		src.tr = k.trace
	}
	return src
}

func (s source) laplace(b float64) float64 {
	if b*s.scale > 0 {
		return s.s.Laplace(b * s.scale)
	}
	return 0
}

func (s source) gaussianVec(x []float64, sigma float64) {
	if sigma*s.scale > 0 {
		s.s.AddGaussian(x, sigma*s.scale)
	}
}

// publicSeed draws 64 bits of PUBLIC randomness (shuffles, starting
// vectors) from the sampler.
func (s source) publicSeed() uint64 {
	hi := uint64(s.s.Uniform() * (1 << 32))
	lo := uint64(s.s.Uniform() * (1 << 32))
	return hi<<32 | lo
}
