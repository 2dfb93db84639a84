package federated

// Dealing one data set to several DPS-PCA providers (federated.md §1.2:
// N providers hold disjoint sets S_j, whose sizes n_j the server sees).
// The split is a public rule applied to the rows' order, not to their
// values: row i goes to provider i mod N.

import (
	"context"
	"fmt"
	"io"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// RoundRobin deals the rows of src to n parts by the public rule "row i
// goes to part i mod n", keeping their order, and returns the parts (nil
// for n < 1 or a nil src). Nothing is copied up front: each scan of part j
// scans src and keeps rows j, j+n, j+2n, …, so memory does not grow with
// the row count, and src must allow concurrent scans if the parts are
// scanned concurrently (providers answering in parallel). Labels and unit
// indices, if src has them, follow their rows. A *rows.Dense, already in
// memory, is dealt into strided views of its matrix instead (its labels
// and unit indices copied, 1/n of them per part), which read only their
// own rows rather than all of them: the same rows in the same order.
//
// A part left without rows (n above the row count) is an empty source
// with src's columns; a PCAProvider over it (NewPCAProviderSource) answers
// exactly as one holding a single zero row, as splitting a matrix round
// robin always gave such a provider.
func RoundRobin(src rows.Source, n int) []rows.Source {
	if src == nil || n < 1 {
		return nil
	}
	out := make([]rows.Source, n)
	d, isDense := src.(*rows.Dense)
	for j := range out {
		if isDense {
			if v := denseView(d, j, n); v != nil {
				out[j] = v
				continue
			}
		}
		out[j] = &dealt{src: src, j: j, n: n}
	}
	return out
}

// denseView returns rows j, j+n, … of d as a Dense over a strided view of
// its matrix (labels and units copied: 1/n of the parent's), or nil if
// there are none.
func denseView(d *rows.Dense, j, n int) rows.Source {
	total := d.NumRows()
	if j >= total {
		return nil
	}
	k := (total - j + n - 1) / n // rows j, j+n, …, j+(k−1)n
	g := d.Matrix().RawMatrix()
	var m mat.Dense
	m.SetRawMatrix(blas64.General{Rows: k, Cols: g.Cols, Stride: n * g.Stride,
		Data: g.Data[j*g.Stride : (j+(k-1)*n)*g.Stride+g.Cols]})
	out := rows.FromDense(&m)
	if y := d.Labels(); y != nil {
		mine := make([]float64, k)
		for i := range mine {
			mine[i] = y[j+i*n]
		}
		// The lengths match by construction, so these cannot fail.
		out, _ = out.WithLabels(mine)
	}
	if u := d.UnitIndex(); u != nil {
		mine := make([]int32, k)
		for i := range mine {
			mine[i] = u[j+i*n]
		}
		out, _ = out.WithUnits(mine, d.NumUnits())
	}
	return out
}

// dealt is part j of n of a source dealt round robin.
type dealt struct {
	src  rows.Source
	j, n int
}

func (s *dealt) Dim() int { return s.src.Dim() }

// HasLabels reports whether the parent's rows carry labels.
func (s *dealt) HasLabels() bool {
	l, ok := s.src.(rows.Labeled)
	return ok && l.HasLabels()
}

// NumUnits is the parent's number of unit indices (the indices are the
// parent's).
func (s *dealt) NumUnits() int {
	if u, ok := s.src.(rows.Units); ok {
		return u.NumUnits()
	}
	return 0
}

// dealtBatchRows is the size of the buffer a part reads its parent into.
const dealtBatchRows = 512

func (s *dealt) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := s.src.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &dealtCursor{s: s, cur: cur,
		buf: rows.NewBatch(s.Dim(), dealtBatchRows, s.HasLabels(), s.NumUnits() > 0)}, nil
}

// dealtCursor reads the parent a batch at a time and keeps the rows whose
// index in the parent's pass is ≡ j mod n.
type dealtCursor struct {
	s      *dealt
	cur    rows.Cursor
	buf    *rows.Batch
	base   int // the parent's index of buf's first row
	pos    int // the next row of buf to look at
	eof    bool
	closed bool
}

func (c *dealtCursor) Next(dst *rows.Batch) error {
	dst.N = 0
	if c.closed {
		return fmt.Errorf("federated: Next on a closed cursor")
	}
	dim := c.s.Dim()
	room := dst.Cap(dim)
	if room < 1 {
		return rows.ErrDim
	}
	for dst.N < room {
		if c.pos >= c.buf.N {
			if c.eof {
				break
			}
			c.base += c.buf.N
			c.pos = 0
			if err := c.cur.Next(c.buf); err == io.EOF {
				c.eof, c.buf.N = true, 0
				break
			} else if err != nil {
				return err
			}
			continue
		}
		// Skip to this part's next row: parent index ≡ j (mod n).
		c.pos += ((c.s.j-(c.base+c.pos))%c.s.n + c.s.n) % c.s.n
		if c.pos >= c.buf.N {
			continue
		}
		copy(dst.Row(dst.N, dim), c.buf.Row(c.pos, dim))
		if c.buf.Label != nil && len(dst.Label) > dst.N {
			dst.Label[dst.N] = c.buf.Label[c.pos]
		}
		if c.buf.Unit != nil && len(dst.Unit) > dst.N {
			dst.Unit[dst.N] = c.buf.Unit[c.pos]
		}
		dst.N++
		c.pos++
	}
	if dst.N == 0 && c.eof {
		return io.EOF
	}
	return nil
}

func (c *dealtCursor) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.cur.Close()
}
