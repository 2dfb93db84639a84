// Streaming noisy power method: Hardt and Price, "The Noisy Power Method"
// (NeurIPS 2014), Figure 2 (SPM) and Theorem 3.2. Spec: power_methods.md
// §3, §7 (cost).
//
// NOT PRIVATE: SPM releases a function of the raw samples with no noise.
// It is a non-private baseline for the private methods; never run it on
// private data whose output reaches a user.

package pca

import (
	"context"
	"fmt"
	"io"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// StreamOptions configures StreamingPower.
type StreamOptions struct {
	// P is the number of columns iterated (default 1), 1 ≤ P ≤ d.
	P int
	// Iters is L, the number of blocks (required, 1 ≤ L ≤ m).
	Iters int
	// Start is the source of the public random start X_0; nil uses
	// noise.New(). A seeded sampler makes runs reproducible.
	Start *noise.Sampler
}

// StreamResult is the output of StreamingPower.
type StreamResult struct {
	// Basis is X_L (d×p, orthonormal columns).
	Basis *mat.Dense
	// BlockSize is T_b = ⌊m/L⌋; Used = L·T_b samples were read, the
	// remaining m − Used were not.
	BlockSize, Used int
}

// StreamingPower runs SPM on a stream of m samples in R^d, read one at a
// time by next, which fills dst (length d) with the next sample and
// returns false when the stream ends. Block ℓ of T_b = ⌊m/L⌋ samples forms
// Y_ℓ = Σ z_i(z_iᵀX_{ℓ−1}) and X_ℓ = QR(Y_ℓ); the last m − L·T_b samples
// are not read. Memory is O(d·p): no sample is kept. It is NOT
// differentially private (a baseline). ctx is checked between blocks.
func StreamingPower(ctx context.Context, next func(dst []float64) bool, d, m int, opt StreamOptions) (*StreamResult, error) {
	if next == nil {
		return nil, fmt.Errorf("pca spm: no stream")
	}
	if d < 1 {
		return nil, fmt.Errorf("pca spm: samples need at least one coordinate, got d=%d", d)
	}
	p := opt.P
	if p == 0 {
		p = 1
	}
	if p < 1 || p > d {
		return nil, fmt.Errorf("pca spm: p=%d columns with d=%d: use 1 ≤ p ≤ d", p, d)
	}
	L := opt.Iters
	if L < 1 || L > maxIters {
		return nil, fmt.Errorf("pca spm: iters=%d: set 1 ≤ iters ≤ %d", L, maxIters)
	}
	if m < L {
		return nil, fmt.Errorf("pca spm: %d samples cannot fill %d blocks: use iters ≤ m", m, L)
	}
	tb := m / L
	s := opt.Start
	if s == nil {
		s = noise.New()
	}
	x := randomOrthonormal(source{s: s, scale: 1}, d, p)
	z := make([]float64, d)
	w := make([]float64, p)
	zv := blas64.Vector{N: d, Inc: 1, Data: z}
	wv := blas64.Vector{N: p, Inc: 1, Data: w}
	for l := 1; l <= L; l++ {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pca spm: stopped before block %d: %w", l, ctx.Err())
		}
		y := mat.NewDense(d, p, nil)
		yg := y.RawMatrix()
		xg := x.RawMatrix()
		for i := 0; i < tb; i++ {
			if !next(z) {
				return nil, fmt.Errorf("pca spm: the stream ended after %d samples but m=%d were announced", (l-1)*tb+i, m)
			}
			blas64.Gemv(blas.Trans, 1, xg, zv, 0, wv) // w = Xᵀz
			blas64.Ger(1, zv, wv, yg)                 // Y += z wᵀ
		}
		orthonormalize(y)
		x = y
	}
	return &StreamResult{Basis: x, BlockSize: tb, Used: L * tb}, nil
}

// StreamingPowerRows runs StreamingPower over the rows of data in order
// (m = number of rows): StreamingPowerSource over rows.FromDense(data). It
// is NOT differentially private.
func StreamingPowerRows(ctx context.Context, data *mat.Dense, opt StreamOptions) (*StreamResult, error) {
	if data == nil {
		return nil, fmt.Errorf("pca spm: no data matrix")
	}
	return StreamingPowerSource(ctx, rows.FromDense(data), opt)
}

// StreamingPowerSource runs StreamingPower over the rows of src in order,
// holding one batch of rows at a time. SPM's block size ⌊m/L⌋ needs the
// number of rows m first: a source that knows it (rows.RandomAccess) is
// read once, any other is counted in a first pass and read in a second.
// It is NOT differentially private (its errors may name m: a baseline for
// public data).
func StreamingPowerSource(ctx context.Context, src rows.Source, opt StreamOptions) (*StreamResult, error) {
	if src == nil {
		return nil, fmt.Errorf("pca spm: no data")
	}
	const batchRows = 256
	d := src.Dim()
	var m int
	if ra, ok := src.(rows.RandomAccess); ok {
		m = ra.NumRows()
	} else if err := rows.ForEach(ctx, src, batchRows, false, false, func(b *rows.Batch) error {
		m += b.N
		return nil
	}); err != nil {
		return nil, fmt.Errorf("pca spm: counting the samples: %w", err)
	}
	cur, err := src.Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("pca spm: %w", err)
	}
	defer cur.Close()
	b := rows.NewBatch(d, batchRows, false, false)
	pos := 0
	var readErr error // the source's, reported instead of a short stream
	next := func(dst []float64) bool {
		for pos >= b.N {
			if readErr != nil {
				return false
			}
			pos = 0
			if err := cur.Next(b); err != nil {
				if err != io.EOF {
					readErr = err
				}
				return false
			}
		}
		copy(dst, b.Row(pos, d))
		pos++
		return true
	}
	res, err := StreamingPower(ctx, next, d, m, opt)
	if err != nil && readErr != nil {
		return nil, fmt.Errorf("pca spm: %w", readErr)
	}
	return res, err
}
