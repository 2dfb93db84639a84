package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// long reports whether the larger statistical runs are requested.
func long() bool { return os.Getenv("PRIVNOTES_LONG") == "1" }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// withKnob returns opt with a test knob attached.
func withKnob(opt Options, k testKnob) Options {
	opt.knob = &k
	return opt
}

// randomOrtho returns a Haar-random d×p orthonormal matrix from rng.
func randomOrtho(rng *rand.Rand, d, p int) *mat.Dense {
	g := mat.NewDense(d, p, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < p; j++ {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	orthonormalize(g)
	return g
}

// spikedRows draws n rows of a spiked model with the given top eigenvalues
// along a random orthonormal basis u and unit bulk variance; it returns the
// rows and u. Test-local so this package does not depend on synth's
// internals.
func spikedRows(rng *rand.Rand, n, d int, spikes []float64) (*mat.Dense, *mat.Dense) {
	k := len(spikes)
	u := randomOrtho(rng, d, k)
	x := mat.NewDense(n, d, nil)
	row := make([]float64, d)
	for i := 0; i < n; i++ {
		for j := range row {
			row[j] = rng.NormFloat64()
		}
		for l, s := range spikes {
			z := math.Sqrt(s) * rng.NormFloat64()
			for j := range row {
				row[j] += z * u.At(j, l)
			}
		}
		x.SetRow(i, row)
	}
	return x, u
}

// exactTop returns the top-k eigenvectors of C = Σ s_i² a_i a_iᵀ for the
// clipped rows of data.
func exactTop(t *testing.T, data *mat.Dense, clip float64, k int) *mat.Dense {
	t.Helper()
	c := prepareRows(data, clip, 1).gram(context.Background())
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		t.Fatal("eigendecomposition failed")
	}
	var v mat.Dense
	eig.VectorsTo(&v)
	d, _ := v.Dims()
	out := mat.NewDense(d, k, nil)
	for j := 0; j < k; j++ {
		for i := 0; i < d; i++ {
			out.Set(i, j, v.At(i, d-1-j))
		}
	}
	return out
}

// testRows is the tests' view of the clipped rows of a matrix: the
// production code (clipped) computes every row's scale and norm in each
// pass and keeps none, while tests inspect them, so here they are computed
// once, for the tests only. The passes run over rows.FromDense(data) and
// panic on an error (tests use a background context).
type testRows struct {
	c           *clipped
	m           *mat.Dense
	n           int
	scale, norm []float64
	pass        *rowpass.Options // the passes' options, for tests to change
}

// prepareRows returns the test view of data clipped at clip, with passes on
// at most workers goroutines.
func prepareRows(data *mat.Dense, clip float64, workers int) *testRows {
	n, _ := data.Dims()
	r := &testRows{c: newClipped(rows.FromDense(data), clip, workers, 2), m: data, n: n,
		scale: make([]float64, n), norm: make([]float64, n)}
	r.pass = &r.c.pass
	for i := range n {
		r.scale[i], r.norm[i] = rowScale(data.RawRowView(i), clip)
	}
	return r
}

func (r *testRows) row(i int) []float64 { return r.m.RawRowView(i) }

func (r *testRows) gram(ctx context.Context) *mat.SymDense {
	c, err := r.c.gram(ctx)
	if err != nil {
		panic(err)
	}
	return c
}

func (r *testRows) covTimes(x *mat.Dense) *mat.Dense {
	y, err := r.c.covTimes(context.Background(), x)
	if err != nil {
		panic(err)
	}
	return y
}

func (r *testRows) apmPass(x []float64) *apmAcc {
	acc, err := r.c.apmPass(context.Background(), x)
	if err != nil {
		panic(err)
	}
	return acc
}
