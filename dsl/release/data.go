package release

import (
	"context"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Data is what a plan's run reads, after the charge: the dataset's public
// schema and its rows as a stream, with labels and unit indices when the
// schema has them.
type Data struct {
	Schema ledger.Schema
	Rows   rows.Source
	// Columns returns a source over the named columns, in that order, with
	// the unit indices of Rows: numeric values clamped to their public
	// bounds (Schema.Bounds) when they have some, categorical values as
	// the index of their category in Schema.Categorical (the domain's
	// length for "other"). Names must be columns of the schema.
	Columns func(names []string) (rows.Source, error)
	// SQL runs a printed statement on the data in the engine: a
	// snapshot, or data held in memory loaded as a memory table
	// (memoryData; nil in a build without the engine).
	SQL SQLReader

	close func() error
	// derived is set for a subset of a registered dataset, whose users
	// may not all have rows.
	derived bool
}

// dataOf adapts data held in memory (today's registry, synthetic data).
func dataOf(d *ledger.Data) (*Data, error) {
	src := rows.FromDense(d.X)
	if d.Y != nil {
		var err error
		if src, err = src.WithLabels(d.Y); err != nil {
			return nil, err
		}
	}
	if d.Users != nil {
		var err error
		if src, err = src.WithUnits(d.Users, max(d.NumUsers, 1)); err != nil {
			return nil, err
		}
	}
	return &Data{Schema: d.Schema, Rows: src, Columns: func(names []string) (rows.Source, error) {
		return projectFeatures(d.Schema, src, names)
	}}, nil
}

// projectFeatures is Data.Columns over a source of the schema's numeric
// feature columns.
func projectFeatures(sc ledger.Schema, src rows.Source, names []string) (rows.Source, error) {
	// A name may repeat (a subset's filter reads a column it also gives).
	idx, err := columnPositions(sc, names, true)
	if err != nil {
		return nil, err
	}
	p := &projected{parent: src, idx: idx, lo: make([]float64, len(idx)), hi: make([]float64, len(idx))}
	for t, name := range names {
		p.lo[t], p.hi[t] = math.Inf(-1), math.Inf(1)
		if b, ok := sc.Bounds[name]; ok {
			p.lo[t], p.hi[t] = b[0], b[1]
		}
	}
	return p, nil
}

// projected is a source over some columns of its parent, clamped.
type projected struct {
	parent rows.Source
	idx    []int
	lo, hi []float64
}

func (p *projected) Dim() int { return len(p.idx) }

// NumUnits passes the parent's unit count through.
func (p *projected) NumUnits() int {
	if u, ok := p.parent.(rows.Units); ok {
		return u.NumUnits()
	}
	return 0
}

func (p *projected) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := p.parent.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &projectedCursor{p: p, parent: cur}, nil
}

type projectedCursor struct {
	p      *projected
	parent rows.Cursor
	buf    *rows.Batch
}

func (c *projectedCursor) Next(dst *rows.Batch) error {
	dim, pdim := c.p.Dim(), c.p.parent.Dim()
	room := dst.Cap(dim)
	if room < 1 {
		dst.N = 0
		return rows.ErrDim
	}
	if c.buf == nil || c.buf.Cap(pdim) < room {
		c.buf = rows.NewBatch(pdim, room, false, dst.Unit != nil)
	}
	view := &rows.Batch{X: c.buf.X[:room*pdim]}
	if dst.Unit != nil {
		view.Unit = c.buf.Unit[:room]
	}
	if err := c.parent.Next(view); err != nil {
		dst.N = 0
		return err
	}
	for i := range view.N {
		row, out := view.Row(i, pdim), dst.Row(i, dim)
		for t, j := range c.p.idx {
			out[t] = min(max(row[j], c.p.lo[t]), c.p.hi[t])
		}
	}
	if dst.Unit != nil {
		copy(dst.Unit, view.Unit[:view.N])
	}
	dst.N = view.N
	return nil
}

func (c *projectedCursor) Close() error { return c.parent.Close() }

// unitSource returns one row per privacy unit: the rows themselves, or for
// unit=user the mean of each user's rows (a public rule, so one user moves
// one row: row-level mechanisms on these rows are user-level DP). Each
// mean is the sum of the user's rows in row order divided by their number.
// window is the plan's userWindow (setWindowedMemory): when the users fit
// in it (or it is 0) the means take one pass and are held, one row per
// user, as they always were; else every pass over the result reads the
// rows once per window of window users and holds only that window's
// means (rows.UserMeans), the same rows in the same order, so the release
// is the same to the bit and only the number of passes grows with the
// private number of users.
func unitSource(ctx context.Context, d *Data, window int) (rows.Source, error) {
	units, ok := d.Rows.(rows.Units)
	if d.Schema.Unit != "user" || !ok || units.NumUnits() == 0 {
		return d.Rows, nil
	}
	cols := d.Rows.Dim()
	nu := max(units.NumUnits(), 1)
	if window > 0 && nu > window {
		return rows.NewUserMeans(d.Rows, window, nil, nil)
	}
	out := mat.NewDense(nu, cols, nil)
	counts := make([]float64, nu)
	err := rows.ForEach(ctx, d.Rows, 1024, false, true, func(b *rows.Batch) error {
		for i := range b.N {
			u := b.Unit[i]
			if int(u) < 0 || int(u) >= nu {
				continue
			}
			row := out.RawRowView(int(u))
			for j, v := range b.Row(i, cols) {
				row[j] += v
			}
			counts[u]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Users without rows (in a subset) are left out; in registered data
	// every user has rows.
	present := 0
	for u := range nu {
		if counts[u] > 0 {
			row := out.RawRowView(u)
			for j := range row {
				row[j] /= counts[u]
			}
			present++
		}
	}
	if present < nu {
		packed := mat.NewDense(max(present, 1), cols, nil)
		k := 0
		for u := range nu {
			if counts[u] > 0 {
				packed.SetRow(k, out.RawRowView(u))
				k++
			}
		}
		if present == 0 {
			return noRows(cols), nil
		}
		out = packed
	}
	return rows.FromDense(out), nil
}

// rowCounter is a source that knows its number of rows without a pass:
// a snapshot's, from the counts in its hash-verified metadata (Parquet
// key-value metadata, checked against the file's row groups when it was
// opened). The count is private: it only feeds a mechanism.
type rowCounter interface{ NumRows() int64 }

// unitCount is the number of privacy units: users, or rows, taken from the
// data's own metadata when they have one (a registered snapshot: its
// whole row set, never a subset's) and else counted in one pass.
func unitCount(ctx context.Context, d *Data) (int, error) {
	if d.derived && d.Schema.Unit == "user" {
		return presentUnits(ctx, d.Rows)
	}
	if units, ok := d.Rows.(rows.Units); ok && d.Schema.Unit == "user" && units.NumUnits() > 0 {
		return units.NumUnits(), nil
	}
	if rc, ok := d.Rows.(rowCounter); ok && !d.derived && d.Schema.Unit != "user" {
		return int(rc.NumRows()), nil
	}
	// Rows held in memory (rows.Dense) know their number too: a count on
	// them needs no copy of the matrix.
	if rc, ok := d.Rows.(interface{ NumRows() int }); ok && !d.derived && d.Schema.Unit != "user" {
		return rc.NumRows(), nil
	}
	n := 0
	err := rows.ForEach(ctx, d.Rows, 4096, false, false, func(b *rows.Batch) error {
		n += b.N
		return nil
	})
	return n, err
}

// unitMatrix is unitSource read into memory, for the mechanisms that
// take a matrix.
func unitMatrix(ctx context.Context, d *Data) (*mat.Dense, error) {
	src, err := unitSource(ctx, d, 0)
	if err != nil {
		return nil, err
	}
	return matrixOf(ctx, src)
}

// presentUnits counts the distinct unit indices of a source's rows (the
// users of a subset).
func presentUnits(ctx context.Context, src rows.Source) (int, error) {
	u, ok := src.(rows.Units)
	if !ok {
		return 0, fmt.Errorf("release: user-level data without user indices")
	}
	seen := make([]bool, max(u.NumUnits(), 1))
	n := 0
	err := rows.ForEach(ctx, src, 4096, false, true, func(b *rows.Batch) error {
		for _, x := range b.Unit[:b.N] {
			if x >= 0 && int(x) < len(seen) && !seen[x] {
				seen[x] = true
				n++
			}
		}
		return nil
	})
	return n, err
}

// matrixOf reads a source into memory (for mechanisms that take a matrix).
func matrixOf(ctx context.Context, src rows.Source) (*mat.Dense, error) {
	d, err := rows.Collect(ctx, src)
	if err != nil {
		return nil, err
	}
	if d.Matrix() == nil {
		return &mat.Dense{}, nil
	}
	return d.Matrix(), nil
}

// scaledSource is src with every row scaled by scaleRows' rule, row by
// row as it is read (the same values as scaleRows, without a copy of the
// data).
func scaledSource(src rows.Source, clip float64) rows.Source {
	return &mapped{parent: src, f: func(dst, row []float64) { scaleRow(dst, row, clip) }}
}

// mapped is a source whose rows are f(row) of its parent's.
type mapped struct {
	parent rows.Source
	f      func(dst, row []float64)
}

func (m *mapped) Dim() int { return m.parent.Dim() }

func (m *mapped) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := m.parent.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &mappedCursor{m: m, parent: cur}, nil
}

type mappedCursor struct {
	m      *mapped
	parent rows.Cursor
}

func (c *mappedCursor) Next(dst *rows.Batch) error {
	if err := c.parent.Next(dst); err != nil {
		return err
	}
	dim := c.m.Dim()
	for i := range dst.N {
		row := dst.Row(i, dim)
		c.m.f(row, row)
	}
	return nil
}

func (c *mappedCursor) Close() error { return c.parent.Close() }

// scaleRow writes row scaled by min(1/clip, 1/‖row‖) into dst (which may
// be row), or zeros for a row with a non-finite value: scaleRows' rule.
func scaleRow(dst, row []float64, clip float64) {
	var ss float64
	for _, v := range row {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			clear(dst)
			return
		}
		ss += v * v
	}
	norm := math.Sqrt(ss)
	s := 1 / clip
	if norm > clip {
		s = 1 / norm
	}
	for j, v := range row {
		dst[j] = v * s
	}
}

// scaleRows returns the rows scaled by min(1/clip, 1/‖a‖) so that each has
// norm at most 1 (pca's public rule); non-finite rows become zero rows.
func scaleRows(x *mat.Dense, clip float64) *mat.Dense {
	if x.IsEmpty() {
		return x
	}
	r, c := x.Dims()
	out := mat.NewDense(r, c, nil)
	for i := range r {
		scaleRow(out.RawRowView(i), x.RawRowView(i), clip)
	}
	return out
}

func columnIndex(sc ledger.Schema, names []string) ([]int, error) {
	if len(names) == 0 {
		idx := make([]int, sc.D)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	return columnPositions(sc, names, false)
}

// columnPositions are the positions of the numeric columns names in the
// schema; a name listed twice is an error unless repeat.
func columnPositions(sc ledger.Schema, names []string, repeat bool) ([]int, error) {
	pos := map[string]int{}
	for i, c := range sc.Columns {
		pos[c] = i
	}
	idx := make([]int, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		i, ok := pos[n]
		if !ok {
			return nil, fmt.Errorf("no column %q; the columns are %v", n, sc.Columns)
		}
		if seen[n] && !repeat {
			return nil, fmt.Errorf("column %q listed twice", n)
		}
		seen[n] = true
		idx = append(idx, i)
	}
	return idx, nil
}

// noRows is a source of dim columns and no rows: a subset without users,
// which every mechanism must take like any other data.
type noRows int

func (e noRows) Dim() int { return int(e) }

func (e noRows) Scan(context.Context) (rows.Cursor, error) { return noRowsCursor{}, nil }

type noRowsCursor struct{}

func (noRowsCursor) Next(dst *rows.Batch) error {
	dst.N = 0
	return io.EOF
}

func (noRowsCursor) Close() error { return nil }
