package linalg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/internal/rowstest"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// stream hides the concrete type of a source, so that PairwisePass cannot take
// the in-place path.
type stream struct{ rows.Source }

// TestKernelsIdenticalOverSources: Gram, SumSquares and CovTimes give the
// same bits and row count over a matrix summed in place, the same matrix
// streamed, a source cutting its batches at random, and a strided view
// (streamed, as its rows are not contiguous), for several worker counts.
func TestKernelsIdenticalOverSources(t *testing.T) {
	x := testInputs()["random"]
	n, d := x.Dims()
	wide := mat.NewDense(n, d+3, nil) // x as the left columns of a wider matrix
	for i := range n {
		copy(wide.RawRowView(i), x.RawRowView(i))
	}
	view := wide.Slice(0, n, 0, d).(*mat.Dense)
	q := mat.NewDense(d, 2, nil)
	q.Set(0, 0, 1)
	q.Set(d-1, 1, 0.5)
	type out struct {
		g, sub, sq, c []float64
		n             [4]int
	}
	eval := func(src rows.Source, opt rowpass.Options) out {
		r := Rows{Src: src, Scale: unitScale, Pass: opt}
		var o out
		var err [4]error
		ctx := context.Background()
		o.g, o.n[0], err[0] = r.Gram(ctx, nil)
		o.sub, o.n[1], err[1] = r.Gram(ctx, []int{1, 3})
		o.sq, o.n[2], err[2] = r.SumSquares(ctx)
		var c *mat.Dense
		c, o.n[3], err[3] = r.CovTimes(ctx, q)
		for _, e := range err {
			if e != nil {
				t.Fatal(e)
			}
		}
		o.c = c.RawMatrix().Data
		return o
	}
	want := eval(rows.FromDense(x), rowpass.Options{Workers: 1})
	for _, opt := range []rowpass.Options{{Workers: 1}, {Workers: 2, MinRows: 1}, {Workers: 3, MinRows: 300}} {
		for name, src := range map[string]rows.Source{
			"dense":      rows.FromDense(x),
			"streamed":   stream{rows.FromDense(x)},
			"jitter":     &rowstest.Jitter{D: rows.FromDense(x), Seed: uint64(opt.Workers)},
			"lent":       &rowstest.Jitter{D: rows.FromDense(x), Lend: true},
			"lent+norms": &rowstest.Jitter{D: rows.FromDense(x), Lend: true, Norms: true},
			"view":       rows.FromDense(view),
		} {
			got := eval(src, opt)
			if got.n != [4]int{n, n, n, n} {
				t.Errorf("%s %+v: row counts %v, want %d", name, opt, got.n, n)
			}
			for _, c := range []struct {
				kernel    string
				got, want []float64
			}{{"Gram", got.g, want.g}, {"Gram(cols)", got.sub, want.sub}, {"SumSquares", got.sq, want.sq}, {"CovTimes", got.c, want.c}} {
				for i := range c.want {
					if math.Float64bits(c.got[i]) != math.Float64bits(c.want[i]) {
						t.Errorf("%s %+v %s: entry %d = %v, want %v (bit identical)", name, opt, c.kernel, i, c.got[i], c.want[i])
						break
					}
				}
			}
		}
	}
}

// TestPassErrors: cancellation and a source's error end a pass with that
// error; a matrix of more than MaxRows rows is refused before any row is
// read, and a stream as soon as it has delivered more.
func TestPassErrors(t *testing.T) {
	x := testInputs()["random"]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, src := range map[string]rows.Source{"dense": rows.FromDense(x), "jitter": &rowstest.Jitter{D: rows.FromDense(x)}} {
		r := Rows{Src: src, Scale: unitScale}
		if _, _, err := r.SumSquares(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled pass gave %v", name, err)
		}
	}
	big := &mat.Dense{}
	big.SetRawMatrix(blas64.General{Rows: MaxRows + 1, Cols: 1, Stride: 1, Data: make([]float64, 1)})
	r := Rows{Src: rows.FromDense(big), Scale: func([]float64) float64 { panic("a row was read") }}
	if _, _, err := r.SumSquares(context.Background()); !errors.Is(err, ErrTooManyRows) {
		t.Errorf("MaxRows+1 rows in a matrix: %v", err)
	}
	// A stream is counted as it arrives: start the count just below the
	// limit instead of streaming 2^30 rows.
	c := &counting{Source: &rowstest.Jitter{D: rows.FromDense(x)}}
	cur, err := c.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.n = MaxRows - 2
	b := rows.NewBatch(5, 10, false, false)
	for range 10 {
		if err = cur.Next(b); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrTooManyRows) || b.N != 0 {
		t.Errorf("past MaxRows: %v (%d rows)", err, b.N)
	}
	// Lent rows are counted too.
	c = &counting{Source: &rowstest.Jitter{D: rows.FromDense(x), Lend: true}}
	if cur, err = c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.n = MaxRows - 2
	err = cur.(rows.Viewer).View(b, 10, false, false)
	if !errors.Is(err, ErrTooManyRows) || b.N != 0 {
		t.Errorf("past MaxRows, lent: %v (%d rows)", err, b.N)
	}
}

// TestScaledNorm checks ScaledNorm against the plain loops it replaced
// (a running maximum of |a_j| with a NaN/Inf check, then the sequential
// sum of (a_j/big)²), bit for bit, on rows of every kind.
func TestScaledNorm(t *testing.T) {
	ref := func(a []float64) (big, rel float64, ok bool) {
		for _, v := range a {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, false
			}
			big = math.Max(big, math.Abs(v))
		}
		if big == 0 {
			return 0, 0, true
		}
		ss := 0.0
		for _, v := range a {
			q := v / big
			ss += q * q
		}
		return big, math.Sqrt(ss), true
	}
	rng := rand.New(rand.NewPCG(4, 4))
	special := []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 1e-310, math.MaxFloat64, -math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 1, -1}
	for trial := range 20000 {
		d := 1 + rng.IntN(11)
		a := make([]float64, d)
		for j := range a {
			switch rng.IntN(4) {
			case 0:
				a[j] = special[rng.IntN(len(special))]
			default:
				a[j] = rng.NormFloat64() * math.Pow(2, float64(rng.IntN(2000)-1000))
			}
		}
		b0, r0, ok0 := ref(a)
		b1, r1, ok1 := ScaledNorm(a)
		if ok0 != ok1 || math.Float64bits(b0) != math.Float64bits(b1) || math.Float64bits(r0) != math.Float64bits(r1) {
			t.Fatalf("trial %d %v: ScaledNorm = (%v, %v, %v), the plain loops give (%v, %v, %v)", trial, a, b1, r1, ok1, b0, r0, ok0)
		}
	}
}

// BenchmarkCovTimes compares one pass of CovTimes (d = 100, p = 1) over a
// matrix summed in place and the same matrix streamed through
// rowpass.PairwiseScan (a copy into chunks), streamed with stored norms
// that the rule reads (Rows.FromNorm) instead of recomputing each row's
// exact norm, and the row rule alone.
func BenchmarkCovTimes(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, d = 100000, 100
	x := mat.NewDense(n, d, nil)
	raw := x.RawMatrix().Data
	for i := range raw {
		raw[i] = rng.NormFloat64() * 0.1
	}
	q := mat.NewDense(d, 1, nil)
	q.Set(0, 0, 1)
	fromNorm := func(big, rel float64, ok bool) float64 {
		if !ok || big == 0 {
			return 0
		}
		return math.Min(1, (1/big)/rel)
	}
	scale := func(a []float64) float64 { return fromNorm(ScaledNorm(a)) }
	for _, tc := range []struct {
		name   string
		src    rows.Source
		stored bool
	}{
		{"dense", rows.FromDense(x), false},
		{"streamed", stream{rows.FromDense(x)}, false},
		{"streamed+norms", normed{Source: stream{rows.FromDense(x)}}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := Rows{Src: tc.src, Scale: scale, Pass: rowpass.Options{MinRows: MinRowsFor(d)}}
			if tc.stored {
				r.FromNorm = fromNorm
			}
			for range b.N {
				if _, _, err := r.CovTimes(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("ScaledNorm", func(b *testing.B) {
		for range b.N {
			for i := range n {
				ScaledNorm(raw[i*d : (i+1)*d])
			}
		}
	})
}

// BenchmarkCovTimesBlock times the block sum of CovTimes on one block of
// rowpass.BlockRows rows of d = 20 (the data engine's benchmark shape)
// for p = 1 and 4: "rows" is CovTimes's kernel (per row: scale, p dot
// products and p updates of length d, SIMD inside gonum's floats), "block"
// the alternative that transposes the scaled block and makes the same
// sums as products of length BlockRows (Tᵀx_j, then T·w). The block form
// does not pay at these widths: the transpose costs what the longer
// vectors save, so CovTimes keeps the row kernel (both orders have the
// same rounding budget; see CovTimesRoundings).
func BenchmarkCovTimesBlock(b *testing.B) {
	const nb, d = rowpass.BlockRows, 20
	rng := rand.New(rand.NewPCG(2, 2))
	a := make([]float64, nb*d)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	s := make([]float64, nb)
	for i := range s {
		s[i] = 0.2
	}
	for _, p := range []int{1, 4} {
		xt := make([]float64, p*d)
		for i := range xt {
			xt[i] = rng.NormFloat64()
		}
		yt := make([]float64, p*d)
		b.Run(fmt.Sprintf("rows/p=%d", p), func(b *testing.B) {
			sa := make([]float64, d)
			for range b.N {
				clear(yt)
				for i := range nb {
					floats.ScaleTo(sa, s[i], a[i*d:(i+1)*d])
					for j := range p {
						w := floats.Dot(sa, xt[j*d:(j+1)*d])
						floats.AddScaled(yt[j*d:(j+1)*d], w, sa)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("block/p=%d", p), func(b *testing.B) {
			t := make([]float64, d*nb)
			w := make([]float64, nb)
			for range b.N {
				for i := range nb {
					for k, v := range a[i*d : (i+1)*d] {
						t[k*nb+i] = s[i] * v
					}
				}
				for j := range p {
					clear(w)
					for k := range d {
						floats.AddScaled(w, xt[j*d+k], t[k*nb:(k+1)*nb])
					}
					for k := range d {
						yt[j*d+k] = floats.Dot(t[k*nb:(k+1)*nb], w)
					}
				}
			}
		})
	}
}
