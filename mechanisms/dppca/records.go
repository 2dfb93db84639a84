package dppca

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// records are the private rows after the public rules of the package doc:
// record i is a row (or a pair difference of two rows) after a
// data-independent shuffle, with non-finite rows replaced by zero and the
// public mean, if any, subtracted. The caller's rows are never modified.
//
// The shuffle needs positions, so records read rows by index through
// rows.RandomAccess; its NumRows, the private n, sizes the permutation and
// the record count and enters nothing else (shapes and messages come from
// the plan). A *rows.Dense is read straight from its matrix, from several
// goroutines (it is read-only); any other RandomAccess is read by one
// goroutine at a time, since the interface promises nothing about
// concurrent ReadRow calls.
type records struct {
	src   rows.RandomAccess
	dense blas64.General // the matrix of a *rows.Dense source; Data nil otherwise
	d     int
	n     int     // number of records
	perm  []int32 // row order; nil keeps the input order
	pairs bool    // record i = (x_{2i+1} − x_{2i})/√2 in shuffled order
	mean  []float64
	pass  rowpass.Options
	// slots, set only when the data are padded (pad), maps record i to a
	// record of the data (≥ 0) or to a zero record (−1).
	slots []int32
}

// newRecords prepares the rows of src (at least one, d = src.Dim()
// columns); seed drives the shuffle (public randomness).
func newRecords(src rows.RandomAccess, opt *Options, shuffleSeed uint64) *records {
	nRows, d := src.NumRows(), src.Dim()
	r := &records{
		src: src, d: d, n: nRows,
		pairs: !opt.Centred && opt.Mean == nil,
		mean:  opt.Mean,
		pass:  rowpass.Options{Workers: opt.Workers, MinRows: max(256, 32768/max(d, 1))},
	}
	if m, ok := src.(*rows.Dense); ok {
		r.dense = m.Matrix().RawMatrix()
	}
	if !opt.KeepOrder {
		r.perm = make([]int32, nRows)
		for i := range r.perm {
			r.perm[i] = int32(i)
		}
		rng := rand.New(rand.NewChaCha8(seedKey(shuffleSeed)))
		for i := len(r.perm) - 1; i > 0; i-- {
			j := rng.IntN(i + 1)
			r.perm[i], r.perm[j] = r.perm[j], r.perm[i]
		}
	}
	if r.pairs {
		r.n = nRows / 2
	}
	return r
}

// pad raises the number of records to min by adding zero records, mixed
// among the data's records by a shuffle drawn from seed (public
// randomness), so that a run never fails, nor changes its shape, on the
// private row count. A zero record contributes a zero gradient; it fills
// groups and minibatches like any other record. See Plan.MinRows for why
// this is private.
func (r *records) pad(min int, seed uint64) {
	if r.n >= min {
		return
	}
	r.slots = make([]int32, min)
	for i := range r.slots {
		r.slots[i] = -1
		if i < r.n {
			r.slots[i] = int32(i)
		}
	}
	rng := rand.New(rand.NewChaCha8(seedKey(seed ^ 0x9e3779b97f4a7c15)))
	for i := len(r.slots) - 1; i > 0; i-- {
		j := rng.IntN(i + 1)
		r.slots[i], r.slots[j] = r.slots[j], r.slots[i]
	}
	r.n = min
}

func seedKey(seed uint64) [32]byte {
	var k [32]byte
	for i := range 8 {
		k[i] = byte(seed >> (8 * i))
	}
	copy(k[8:], "privnotes/dppca public shuffle")
	return k
}

// row copies row p (in shuffled order) into dst, or zeros for a row with a
// non-finite entry.
func (r *records) row(p int, dst []float64) {
	if r.perm != nil {
		p = int(r.perm[p])
	}
	if r.dense.Data == nil {
		r.src.ReadRow(p, dst)
		if !finite(dst) {
			clear(dst)
		}
		return
	}
	// A matrix's row is checked before the copy, as a view: this path
	// carries every run on in-memory data and avoids a call per row.
	src := r.dense.Data[p*r.dense.Stride : p*r.dense.Stride+r.d]
	for _, v := range src {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			clear(dst)
			return
		}
	}
	copy(dst, src)
}

// rowsOf returns the positions of the data rows record i is made of (none
// for a padding record), for the trace.
func (r *records) rowsOf(i int) []int {
	if r.slots != nil {
		if i = int(r.slots[i]); i < 0 {
			return nil
		}
	}
	pos := []int{i}
	if r.pairs {
		pos = []int{2 * i, 2*i + 1}
	}
	for k, p := range pos {
		if r.perm != nil {
			pos[k] = int(r.perm[p])
		}
	}
	return pos
}

// load writes record i into dst (len d); tmp is scratch of length d.
func (r *records) load(i int, dst, tmp []float64) {
	if r.slots != nil {
		if i = int(r.slots[i]); i < 0 {
			clear(dst)
			return
		}
	}
	if r.pairs {
		r.row(2*i, tmp)
		r.row(2*i+1, dst)
		floats.Sub(dst, tmp)
		floats.Scale(1/math.Sqrt2, dst)
		return
	}
	r.row(i, dst)
	if r.mean != nil {
		floats.Sub(dst, r.mean)
	}
}

// gradients writes g_i = x̃_i (x̃_iᵀ w) for records lo..hi−1 into out
// (row-major, (hi−lo)×d), in parallel. A gradient with a non-finite entry
// (overflow) is replaced by zero, a public rule.
func (r *records) gradients(lo, hi int, w, out []float64) {
	d := r.d
	if r.dense.Data == nil {
		// One goroutine reads the source (see records); the products still
		// run in parallel. The values are the same either way.
		tmp := make([]float64, d)
		for k := range hi - lo {
			r.load(lo+k, out[k*d:(k+1)*d], tmp)
		}
		rowpass.For(hi-lo, r.pass, func(_, a, b int) {
			for k := a; k < b; k++ {
				gradient(out[k*d:(k+1)*d], w)
			}
		})
		return
	}
	rowpass.For(hi-lo, r.pass, func(_, a, b int) {
		tmp := make([]float64, d)
		for k := a; k < b; k++ {
			g := out[k*d : (k+1)*d]
			r.load(lo+k, g, tmp)
			// gradient(g, w), written out: the hot loop of every run on a
			// matrix, where the call would cost about 2%.
			floats.Scale(floats.Dot(g, w), g)
			if !finite(g) {
				clear(g)
			}
		}
	})
}

// gradient turns the record g into g·(gᵀw) in place, or into zero if that
// has a non-finite entry (overflow), a public rule.
func gradient(g, w []float64) {
	floats.Scale(floats.Dot(g, w), g)
	if !finite(g) {
		clear(g)
	}
}

func finite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// randomUnit returns a uniformly random unit vector (public randomness).
func randomUnit(src source, d int) []float64 {
	w := make([]float64, d)
	for {
		src.s.FillStdNormal(w)
		if n := floats.Norm(w, 2); n > 0 {
			floats.Scale(1/n, w)
			return w
		}
	}
}

// begin draws a run's public randomness in a fixed order (the starting
// vector, then the shuffle seed) and prepares the records of data (at
// least one row of d columns); o must be validated.
//
// minRecords > 0 pads the records with zero records up to minRecords
// (records.pad); the padding's shuffle is derived from the same public
// seed, so a run draws the same randomness whether or not it pads.
func begin(data rows.RandomAccess, o *Options, knob *testKnob, minRecords int) (source, []float64, *records) {
	src := newSource(o.Noise, knob)
	w := randomUnit(src, data.Dim())
	seed := src.publicSeed()
	recs := newRecords(data, o, seed)
	if minRecords > 0 {
		recs.pad(minRecords, seed)
	}
	return src, w, recs
}

// step returns w + eta·g normalized, or w unchanged (the step is skipped)
// if that is zero or not finite; w itself is not modified.
func step(w []float64, eta float64, g []float64) []float64 {
	next := append([]float64(nil), w...)
	floats.AddScaled(next, eta, g)
	if normalize(next) {
		return next
	}
	return w
}

// component is the released d×1 estimate: w with its largest-magnitude
// entry made positive.
func component(w []float64) *mat.Dense {
	fixSign(w)
	return mat.NewDense(len(w), 1, w)
}

// normalize scales w to unit norm; it reports false if w is zero or not
// finite (then w is unchanged).
func normalize(w []float64) bool {
	n := floats.Norm(w, 2)
	if !(n > 0) || math.IsInf(n, 0) {
		return false
	}
	floats.Scale(1/n, w)
	return true
}
