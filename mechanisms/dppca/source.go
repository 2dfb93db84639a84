package dppca

import (
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// testKnob alters a run for tests only; it cannot be set outside this
// package, so no caller can weaken a release with it.
type testKnob struct {
	noiseScale float64 // multiplies every noise scale (Laplace and Gaussian)
	trace      *trace  // receives non-private diagnostics
	// skipShuffle makes private Oja with shuffling visit the records in
	// input order: the broken twin of its audit.
	skipShuffle bool
}

// trace holds diagnostics that are NOT differentially private. Only tests
// in this package can ask for them.
type trace struct {
	groupEigen [][]float64 // Algorithm 4: λ^(j) per call
	truncated  []int       // Algorithm 5: truncated coordinates per call
	means      [][]float64 // Algorithm 5: exact truncated mean per call
	released   [][]float64 // Algorithm 5: the noisy mean per call (itself DP)
	reads      [][]int     // DP-PCA: the data rows each half-minibatch read
	order      []int32     // private Oja with shuffling: the secret record order
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

// read computes the gradients of records lo..hi−1 (records.gradients),
// noting in the trace which data rows they read.
func (s source) read(r *records, lo, hi int, w, out []float64) {
	if s.tr != nil {
		var read []int
		for i := lo; i < hi; i++ {
			read = append(read, r.rowsOf(i)...)
		}
		s.tr.reads = append(s.tr.reads, read)
	}
	r.gradients(lo, hi, w, out)
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
