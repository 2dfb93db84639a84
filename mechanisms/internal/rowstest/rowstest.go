// Package rowstest provides row sources for the mechanisms' tests: a
// source that cuts the same rows into batches of random sizes, to check
// that no result depends on how a data layer delivers them.
package rowstest

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// ErrDisk is the error of a Jitter pass made to fail.
var ErrDisk = errors.New("disk on fire")

// Jitter serves the rows of D, with its labels and unit indices if any, in
// batches of random sizes, every pass cut differently. It is not a
// *rows.Dense, so passes over it stream. Fail > 0 makes a pass fail with
// ErrDisk after that many rows. With Norms set it stores its rows' norms
// (rows.Normed), as the data engine's row cache does. With Lend set its
// cursors also lend rows in place (rows.Viewer), as the memory-mapped row
// cache does; a consumer that asks for views gets D's own rows.
type Jitter struct {
	D     *rows.Dense
	Seed  uint64
	Fail  int
	Norms bool
	Lend  bool
}

// HasNorms reports whether batches carry the rows' norms (rows.Normed).
func (s *Jitter) HasNorms() bool { return s.Norms }

// Dim returns D's number of columns.
func (s *Jitter) Dim() int { return s.D.Dim() }

// HasLabels reports whether D has labels.
func (s *Jitter) HasLabels() bool { return s.D.HasLabels() }

// NumUnits returns D's number of unit indices.
func (s *Jitter) NumUnits() int { return s.D.NumUnits() }

// Scan starts a pass.
func (s *Jitter) Scan(ctx context.Context) (rows.Cursor, error) {
	s.Seed++
	return &cursor{s: s, ctx: ctx, rng: rand.New(rand.NewPCG(s.Seed, 9))}, nil
}

type cursor struct {
	s    *Jitter
	ctx  context.Context
	rng  *rand.Rand
	next int
	// norm parts of the last View
	big, rel []float64
}

// View lends D's next rows in place (see rows.Viewer) when s.Lend is set
// and D's rows are contiguous; the norm parts are computed into buffers
// of the cursor's.
func (c *cursor) View(dst *rows.Batch, want int, labels, units bool) error {
	*dst = rows.Batch{}
	n, d := c.s.D.NumRows(), c.s.D.Dim()
	if !c.s.Lend || (n > 0 && c.s.D.Matrix().RawMatrix().Stride != d) {
		return rows.ErrNoView
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if c.s.Fail > 0 && c.next >= c.s.Fail {
		return ErrDisk
	}
	if c.next >= n {
		return io.EOF
	}
	k := min(want, n-c.next)
	if c.s.Fail > 0 {
		k = min(k, c.s.Fail-c.next) // the next View fails
	}
	lo, hi := c.next, c.next+k
	dst.X = c.s.D.Matrix().RawMatrix().Data[lo*d : hi*d]
	if y := c.s.D.Labels(); y != nil && labels {
		dst.Label = y[lo:hi]
	}
	if u := c.s.D.UnitIndex(); u != nil && units {
		dst.Unit = u[lo:hi]
	}
	if c.s.Norms {
		c.big, c.rel = make([]float64, k), make([]float64, k)
		for i := range k {
			c.big[i], c.rel[i] = rows.StoredNorm(dst.Row(i, d))
		}
		dst.NormBig, dst.NormRel = c.big, c.rel
	}
	c.next = hi
	dst.N = k
	return nil
}

func (c *cursor) Next(dst *rows.Batch) error {
	n, d := c.s.D.NumRows(), c.s.D.Dim()
	dst.N = 0
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if c.s.Fail > 0 && c.next >= c.s.Fail {
		return ErrDisk
	}
	if c.next >= n {
		return io.EOF
	}
	k := min(1+c.rng.IntN(dst.Cap(d)), n-c.next)
	for i := range k {
		c.s.D.ReadRow(c.next+i, dst.Row(i, d))
		if y := c.s.D.Labels(); y != nil && len(dst.Label) > i {
			dst.Label[i] = y[c.next+i]
		}
		if u := c.s.D.UnitIndex(); u != nil && len(dst.Unit) > i {
			dst.Unit[i] = u[c.next+i]
		}
		if c.s.Norms && len(dst.NormBig) > i && len(dst.NormRel) > i {
			dst.NormBig[i], dst.NormRel[i] = rows.StoredNorm(dst.Row(i, d))
		}
	}
	c.next += k
	dst.N = k
	return nil
}

func (c *cursor) Close() error { return nil }
