package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// blockRows is the number of rows drawn from one PCG stream. It fixes the
// stream layout, so changing it changes every data set: keep it constant.
const blockRows = 1024

// Stream tags separate the PCG streams of the different recipes and of the
// truth (e.g. a random subspace) from those of the rows.
const (
	tagTruth uint64 = 0x7472757468 // "truth"
	tagRows  uint64 = 0x726f7773   // "rows"
)

// maxCells bounds n·d so that a typo in a size gives an error rather than an
// attempt to allocate terabytes.
const maxCells = 1 << 31

// splitmix64 mixes a 64-bit value; it decorrelates the second PCG seed word
// of neighbouring blocks.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// newRand returns the PCG stream (seed, tag, index).
func newRand(seed, tag, index uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, splitmix64(tag^splitmix64(index))))
}

// fillRows fills the rows of x block by block, each block with its own
// stream, using all available cores. row writes one row into dst.
func fillRows(seed, tag uint64, x *mat.Dense, row func(r *rand.Rand, dst []float64)) {
	n, _ := x.Dims()
	blocks := (n + blockRows - 1) / blockRows
	parallelFor(blocks, func(b int) {
		r := newRand(seed, tag, uint64(b))
		for i := b * blockRows; i < min(n, (b+1)*blockRows); i++ {
			row(r, x.RawRowView(i))
		}
	})
}

// checkSizes validates the common size arguments n (rows) and d (columns).
func checkSizes(recipe string, n, d int) error {
	if n < 1 {
		return fmt.Errorf("synth.%s: n = %d rows; need n ≥ 1", recipe, n)
	}
	if d < 1 {
		return fmt.Errorf("synth.%s: d = %d columns; need d ≥ 1", recipe, d)
	}
	if n > maxCells/d {
		return fmt.Errorf("synth.%s: n·d = %d·%d exceeds %d cells; use a smaller data set", recipe, n, d, maxCells)
	}
	return nil
}

// haar returns a d×k matrix with orthonormal columns, uniformly (Haar)
// distributed: the Q factor of a Gaussian matrix, with column signs chosen
// so that R has a positive diagonal (this makes the distribution exactly
// Haar rather than depending on the QR routine's sign convention).
func haar(r *rand.Rand, d, k int) *mat.Dense {
	g := mat.NewDense(d, k, nil)
	for i := range d {
		for j := range k {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	u := mat.NewDense(d, k, nil)
	u.Copy(q.Slice(0, d, 0, k))
	for j := range k {
		if rr.At(j, j) < 0 {
			for i := range d {
				u.Set(i, j, -u.At(i, j))
			}
		}
	}
	return u
}

// ClipRows scales every row of x whose Euclidean norm exceeds bound down to
// norm bound, in place, and returns how many rows it scaled. It is the
// public-data analogue of the mechanisms' clipping.
func ClipRows(x *mat.Dense, bound float64) (int, error) {
	if !(bound > 0) || math.IsInf(bound, 1) {
		return 0, fmt.Errorf("synth.ClipRows: bound = %v; need a finite bound > 0", bound)
	}
	n, _ := x.Dims()
	clipped := 0
	for i := range n {
		row := x.RawRowView(i)
		var ss float64
		for _, v := range row {
			ss += v * v
		}
		if nrm := math.Sqrt(ss); nrm > bound {
			s := bound / nrm
			for j := range row {
				row[j] *= s
			}
			clipped++
		}
	}
	return clipped, nil
}

// parallelFor runs body(i) for i in [0, n) on all cores; iterations are
// interleaved over workers, so body must write only to i's own outputs.
func parallelFor(n int, body func(i int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				body(i)
			}
		}()
	}
	wg.Wait()
}
