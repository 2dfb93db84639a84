package rows

import (
	"context"
	"fmt"
	"io"

	"gonum.org/v1/gonum/mat"
)

// Dense is a Source over rows held in memory: a matrix, with optional
// labels and unit indices per row. It implements RandomAccess, Labeled and
// Units. The matrix is read, never written; it must not change while a
// mechanism runs.
type Dense struct {
	x      *mat.Dense
	labels []float64
	units  []int32
	nUnits int
}

// FromDense returns a Source over the rows of x (nil or empty: no rows).
func FromDense(x *mat.Dense) *Dense { return &Dense{x: x} }

// WithLabels returns a copy of d whose row i has label y[i]; y must have
// one entry per row.
func (d *Dense) WithLabels(y []float64) (*Dense, error) {
	if len(y) != d.NumRows() {
		return nil, fmt.Errorf("rows: %d labels for a matrix of another row count", len(y))
	}
	c := *d
	c.labels = y
	return &c, nil
}

// WithUnits returns a copy of d whose row i belongs to unit u[i], an index
// in [0, n); u must have one entry per row.
func (d *Dense) WithUnits(u []int32, n int) (*Dense, error) {
	if len(u) != d.NumRows() {
		return nil, fmt.Errorf("rows: %d unit indices for a matrix of another row count", len(u))
	}
	for _, v := range u {
		if v < 0 || int(v) >= n {
			return nil, fmt.Errorf("rows: a unit index is outside [0, %d)", n)
		}
	}
	c := *d
	c.units, c.nUnits = u, n
	return &c, nil
}

// Matrix returns the matrix d reads (nil for none).
func (d *Dense) Matrix() *mat.Dense { return d.x }

// Dim returns the number of columns.
func (d *Dense) Dim() int {
	if d.x == nil || d.x.IsEmpty() {
		return 0
	}
	_, c := d.x.Dims()
	return c
}

// NumRows returns the number of rows.
func (d *Dense) NumRows() int {
	if d.x == nil || d.x.IsEmpty() {
		return 0
	}
	r, _ := d.x.Dims()
	return r
}

// HasLabels reports whether the rows carry labels.
func (d *Dense) HasLabels() bool { return d.labels != nil }

// NumUnits returns the number of unit indices (0 without units).
func (d *Dense) NumUnits() int { return d.nUnits }

// Labels returns the labels (nil without).
func (d *Dense) Labels() []float64 { return d.labels }

// UnitIndex returns the unit index of every row (nil without).
func (d *Dense) UnitIndex() []int32 { return d.units }

// ReadRow copies row i into dst.
func (d *Dense) ReadRow(i int, dst []float64) {
	copy(dst[:d.Dim()], d.x.RawRowView(i))
}

// Scan starts a pass over the rows in order.
func (d *Dense) Scan(ctx context.Context) (Cursor, error) {
	return &denseCursor{d: d, ctx: ctx}, nil
}

type denseCursor struct {
	d      *Dense
	ctx    context.Context
	next   int
	closed bool
}

func (c *denseCursor) Next(dst *Batch) error {
	dst.N = 0
	if c.closed {
		return fmt.Errorf("rows: Next on a closed cursor")
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	n, dim := c.d.NumRows(), c.d.Dim()
	if c.next >= n {
		return io.EOF
	}
	room := dst.Cap(dim)
	if room < 1 {
		return ErrDim
	}
	k := min(room, n-c.next)
	g := c.d.x.RawMatrix()
	if g.Stride == dim {
		copy(dst.X[:k*dim], g.Data[c.next*dim:(c.next+k)*dim])
	} else {
		for i := range k {
			copy(dst.X[i*dim:(i+1)*dim], g.Data[(c.next+i)*g.Stride:(c.next+i)*g.Stride+dim])
		}
	}
	if c.d.labels != nil && len(dst.Label) >= k {
		copy(dst.Label[:k], c.d.labels[c.next:c.next+k])
	}
	if c.d.units != nil && len(dst.Unit) >= k {
		copy(dst.Unit[:k], c.d.units[c.next:c.next+k])
	}
	c.next += k
	dst.N = k
	return nil
}

func (c *denseCursor) Close() error {
	c.closed = true
	return nil
}

// Collect reads every row of src into memory, with labels and units when
// the source has them. A source that is already a *Dense is returned as
// is. Methods that visit rows out of order use it on sources without
// RandomAccess; its memory grows with the private row count.
func Collect(ctx context.Context, src Source) (*Dense, error) {
	if d, ok := src.(*Dense); ok {
		return d, nil
	}
	dim := src.Dim()
	labeled := false
	if l, ok := src.(Labeled); ok {
		labeled = l.HasLabels()
	}
	nUnits := 0
	if u, ok := src.(Units); ok {
		nUnits = u.NumUnits()
	}
	var x, y []float64
	var units []int32
	n := 0
	err := ForEach(ctx, src, 1024, labeled, nUnits > 0, func(b *Batch) error {
		x = append(x, b.X[:b.N*dim]...)
		if labeled {
			y = append(y, b.Label[:b.N]...)
		}
		if nUnits > 0 {
			units = append(units, b.Unit[:b.N]...)
		}
		n += b.N
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &Dense{}
	if n > 0 && dim > 0 {
		out.x = mat.NewDense(n, dim, x)
	}
	if labeled {
		out.labels = y
	}
	if nUnits > 0 {
		out.units, out.nUnits = units, nUnits
	}
	return out, nil
}
