// Sampler: crypto/rand (or seeded, tests only) randomness feeding the exact
// samplers of exact.go, for scalars, vectors and matrices.

package noise

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	mathrand "math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// Sampler draws noise. The zero value and New draw from crypto/rand;
// NewSeeded draws from a seeded ChaCha8 stream for tests and benchmarks.
// A Sampler is safe for concurrent use.
type Sampler struct {
	seeded bool

	// crypto: each concurrent caller takes its own buffer of crypto/rand
	// bytes; every byte is used once.
	pool sync.Pool

	// seeded: one stream, serialised so that outputs are reproducible.
	mu  sync.Mutex
	src *bitSource
}

// New returns a Sampler whose randomness comes from crypto/rand only.
func New() *Sampler { return &Sampler{} }

// NewSeeded returns a deterministic Sampler for tests and benchmarks. Its
// output is a fixed function of seed; it must never be reachable from a
// notebook cell.
func NewSeeded(seed uint64) *Sampler {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], "privnotes/noise seeded stream")
	stream := mathrand.NewChaCha8(key)
	return &Sampler{seeded: true, src: newBitSource(func(p []byte) {
		_, _ = stream.Read(p) // ChaCha8.Read never fails
	})}
}

// newBitSource returns an empty source: its first read refills the buffer.
func newBitSource(fill func([]byte)) *bitSource {
	b := &bitSource{fill: fill}
	b.pos = len(b.buf)
	return b
}

func cryptoFill(p []byte) {
	if _, err := cryptorand.Read(p); err != nil {
		// crypto/rand documents that Read does not fail; if it ever does,
		// no noise may be produced.
		panic(fmt.Sprintf("noise: crypto/rand failed: %v", err))
	}
}

// acquire returns a bit source for the caller's exclusive use until release.
func (s *Sampler) acquire() *bitSource {
	if s.seeded {
		s.mu.Lock()
		return s.src
	}
	if b, ok := s.pool.Get().(*bitSource); ok {
		return b
	}
	return newBitSource(cryptoFill)
}

func (s *Sampler) release(b *bitSource) {
	if s.seeded {
		s.mu.Unlock()
		return
	}
	s.pool.Put(b)
}

// Gaussian returns one sample of the discrete Gaussian on the lattice of
// sigma (see LatticeStep) with scale sigma rounded up to the lattice; its
// std is within a relative 1e-12 of sigma. Gaussian(0) is 0. It panics on
// a sigma outside {0} ∪ [MinScale, MaxScale].
func (s *Sampler) Gaussian(sigma float64) float64 {
	checkScale("sigma", sigma)
	if sigma == 0 {
		return 0
	}
	l := latticeFor(sigma)
	b := s.acquire()
	neg, u, v := b.discreteGaussian(l.units)
	s.release(b)
	return l.place(0, neg, u, v)
}

// Laplace returns one sample of the discrete Laplace distribution on the
// lattice of b, P(x) ∝ exp(-|x|/b'), with b' = b rounded up to the lattice
// (relative change below 1e-12). Laplace(0) is 0. It panics on a b outside
// {0} ∪ [MinScale, MaxScale].
func (s *Sampler) Laplace(b float64) float64 {
	checkScale("b", b)
	if b == 0 {
		return 0
	}
	l := latticeFor(b)
	src := s.acquire()
	neg, u, v := src.discreteLaplace(l.units)
	s.release(src)
	return l.place(0, neg, u, v)
}

// AddGaussian rounds each x[i] to the lattice of sigma and adds an
// independent Gaussian sample, in place. The rounding costs
// GaussianSlack(sigma, len(x)) of ℓ2 sensitivity; use GaussianScale to pick
// sigma. sigma == 0 leaves x unchanged. It panics on an invalid sigma or a
// NaN/infinite x[i] (the mechanism must clip first).
func (s *Sampler) AddGaussian(x []float64, sigma float64) {
	checkScale("sigma", sigma)
	if sigma == 0 || len(x) == 0 {
		return
	}
	checkFinite(x)
	l := latticeFor(sigma)
	b := s.acquire()
	defer s.release(b)
	addGaussian(b, l, x)
}

// checkFinite panics, before anything is changed, if a query value is NaN
// or infinite. The message names no value: the values are private.
func checkFinite(x []float64) {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			panic(errNonFinite)
		}
	}
}

const errNonFinite = "noise: a query value is NaN or infinite; mechanisms must clip or reject such values before adding noise (nothing was changed)"

// AddLaplace rounds each x[i] to the lattice of b and adds independent
// discrete Laplace noise, in place. The rounding costs LaplaceSlack(b,
// len(x)) of ℓ1 sensitivity; use LaplaceScale to pick b.
func (s *Sampler) AddLaplace(x []float64, b float64) {
	checkScale("b", b)
	if b == 0 || len(x) == 0 {
		return
	}
	checkFinite(x)
	l := latticeFor(b)
	src := s.acquire()
	defer s.release(src)
	for i, xi := range x {
		xl := l.round(xi)
		neg, u, v := src.discreteLaplace(l.units)
		x[i] = l.place(xl, neg, u, v)
	}
}

func addGaussian(b *bitSource, l lattice, x []float64) {
	for i, xi := range x {
		xl := l.round(xi)
		neg, u, v := b.discreteGaussian(l.units)
		x[i] = l.place(xl, neg, u, v)
	}
}

// parallelMin is the number of entries from which a crypto Sampler spreads
// a matrix over the available cores.
const parallelMin = 4096

// forRows runs do over rows [0, n) of a matrix whose row i holds
// rowLen(i) entries to noise. A crypto Sampler splits the rows into
// contiguous ranges of about equal entry counts, one per core, each with
// its own randomness; a seeded Sampler runs them in order so that its
// output is reproducible.
func (s *Sampler) forRows(n int, rowLen func(i int) int, do func(b *bitSource, lo, hi int)) {
	total := 0
	for i := 0; i < n; i++ {
		total += rowLen(i)
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	if s.seeded || workers < 2 || total < parallelMin {
		b := s.acquire()
		defer s.release(b)
		do(b, 0, n)
		return
	}
	var wg sync.WaitGroup
	lo, acc, w := 0, 0, 1
	for i := 0; i < n; i++ {
		acc += rowLen(i)
		if acc*workers >= w*total || i == n-1 {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				b := s.acquire()
				defer s.release(b)
				do(b, lo, hi)
			}(lo, i+1)
			lo, w = i+1, w+1
		}
	}
	wg.Wait()
}

// AddGaussianMatrix does AddGaussian on every entry of m (r·c coordinates
// for the slack). A crypto Sampler uses all cores for large matrices; a
// seeded one runs row by row so that its output is reproducible.
func (s *Sampler) AddGaussianMatrix(m *mat.Dense, sigma float64) {
	checkScale("sigma", sigma)
	if sigma == 0 || m.IsEmpty() {
		return
	}
	raw := m.RawMatrix()
	for i := 0; i < raw.Rows; i++ {
		checkFinite(raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols])
	}
	l := latticeFor(sigma)
	s.forRows(raw.Rows, func(int) int { return raw.Cols }, func(b *bitSource, lo, hi int) {
		for i := lo; i < hi; i++ {
			addGaussian(b, l, raw.Data[i*raw.Stride:i*raw.Stride+raw.Cols])
		}
	})
}

// AddSymmetricGaussian adds symmetric Gaussian noise to the square matrix
// m (Analyze Gauss): each entry of the upper triangle including the
// diagonal is rounded to the lattice and gets an independent sample, and
// the lower triangle is overwritten with the mirror image, so the lower
// triangle of the input is ignored (with sigma == 0 m is only mirrored).
// The slack is over d(d+1)/2 coordinates. It panics if m is not square.
func (s *Sampler) AddSymmetricGaussian(m *mat.Dense, sigma float64) {
	checkScale("sigma", sigma)
	if m.IsEmpty() {
		return
	}
	r, c := m.Dims()
	if r != c {
		panic(fmt.Sprintf("noise: AddSymmetricGaussian needs a square matrix, got %d×%d", r, c))
	}
	raw := m.RawMatrix()
	for i := 0; i < r; i++ {
		checkFinite(raw.Data[i*raw.Stride+i : i*raw.Stride+c])
	}
	if sigma != 0 {
		l := latticeFor(sigma)
		s.forRows(r, func(i int) int { return c - i }, func(b *bitSource, lo, hi int) {
			for i := lo; i < hi; i++ {
				addGaussian(b, l, raw.Data[i*raw.Stride+i:i*raw.Stride+c])
			}
		})
	}
	for i := 0; i < r; i++ {
		for j := 0; j < i; j++ {
			raw.Data[i*raw.Stride+j] = raw.Data[j*raw.Stride+i]
		}
	}
}

// wordSource adapts a bit source to math/rand/v2 for public randomness.
type wordSource struct{ b *bitSource }

func (w wordSource) Uint64() uint64 { return w.b.word() }

// StdNormal returns a continuous standard normal sample. It is PUBLIC
// randomness (random starting vectors, synthetic data), not a privacy
// primitive: floating-point normals must never be added to private values.
func (s *Sampler) StdNormal() float64 {
	b := s.acquire()
	defer s.release(b)
	return mathrand.New(wordSource{b}).NormFloat64()
}

// Uniform returns a PUBLIC uniform sample in [0, 1) with 53 random bits.
func (s *Sampler) Uniform() float64 {
	b := s.acquire()
	defer s.release(b)
	return float64(b.word()>>11) * 0x1p-53
}

// FillStdNormal fills x with PUBLIC standard normal samples (see StdNormal).
func (s *Sampler) FillStdNormal(x []float64) {
	b := s.acquire()
	defer s.release(b)
	r := mathrand.New(wordSource{b})
	for i := range x {
		x[i] = r.NormFloat64()
	}
}

// Bernoulli returns true with probability exactly num/den
// (0 <= num <= den, 0 < den < 2^55). It panics otherwise.
func (s *Sampler) Bernoulli(num, den uint64) bool {
	if den == 0 || num > den || den >= 1<<55 {
		panic(fmt.Sprintf("noise: Bernoulli(%d/%d) needs 0 <= num <= den, 0 < den < 2^55", num, den))
	}
	b := s.acquire()
	defer s.release(b)
	return b.bernoulliFrac(num, den)
}

// BernoulliExpNeg returns true with probability exactly exp(-num/den)
// (num >= 0, 0 < den < 2^55), sampled with integer arithmetic only.
func (s *Sampler) BernoulliExpNeg(num, den uint64) bool {
	if den == 0 || den >= 1<<55 {
		panic(fmt.Sprintf("noise: BernoulliExpNeg(%d/%d) needs 0 < den < 2^55", num, den))
	}
	b := s.acquire()
	defer s.release(b)
	for ; num > den; num -= den {
		if !b.bernoulliExpNeg1() {
			return false
		}
	}
	return b.bernoulliExpNegFrac(num, den)
}

// DiscreteGaussianInt returns a sample of the discrete Gaussian on the
// integers with P(z) ∝ exp(-z²/(2s²)), for an integer s in [1, 2^50].
func (s *Sampler) DiscreteGaussianInt(scale uint64) int64 {
	checkIntScale(scale)
	b := s.acquire()
	defer s.release(b)
	neg, u, v := b.discreteGaussian(scale)
	return signedMagnitude(neg, u, v, scale)
}

// DiscreteLaplaceInt returns a sample of the discrete Laplace distribution
// on the integers with P(z) ∝ exp(-|z|/t), for an integer t in [1, 2^50].
func (s *Sampler) DiscreteLaplaceInt(t uint64) int64 {
	checkIntScale(t)
	b := s.acquire()
	defer s.release(b)
	neg, u, v := b.discreteLaplace(t)
	return signedMagnitude(neg, u, v, t)
}

func checkIntScale(t uint64) {
	if t == 0 || t > 1<<50 {
		panic(fmt.Sprintf("noise: integer scale %d must be in [1, 2^50]", t))
	}
}

// signedMagnitude returns ±(u + t·v), saturating at ±MaxInt64 (reachable
// only with probability below exp(-2^12)).
func signedMagnitude(neg bool, u, v uint64, t uint64) int64 {
	var mag uint64
	if v > (math.MaxInt64-u)/t {
		mag = math.MaxInt64
	} else {
		mag = u + t*v
	}
	if neg {
		return -int64(mag)
	}
	return int64(mag)
}
