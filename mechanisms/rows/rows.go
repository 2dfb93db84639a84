// Package rows defines how mechanisms receive private data: as a stream of
// row batches, read in a fixed order into buffers the caller owns.
//
// A [Source] is re-readable: every [Source.Scan] starts a new pass over the
// same rows in the same order, so an iterative mechanism (a power method)
// makes one scan per iteration and holds no more than one batch at a time.
// A [Cursor] fills a [Batch] with the next rows and returns [io.EOF] when
// none are left, as database/sql/driver.Rows does.
//
// A Source has no length. The number of rows of private data is itself
// private (under add-remove neighbours it is what changes; under
// replace-one a filtered subset's size is a count query), so a mechanism
// learns it only by reading to the end, and may use it inside its
// computation but never in its shape, a message or an error. Methods that
// shuffle their rows need positions: they use the optional [RandomAccess]
// interface, or [Collect] the rows into memory when a source lacks it.
//
// The package is a leaf: it does no I/O of its own and imports nothing of
// privnotes. Data layers implement Source; [Dense] adapts a matrix.
package rows

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Batch is a buffer of rows owned by the caller. A cursor fills at most
// Cap() rows: row i's features go to X[i·dim : (i+1)·dim]; if the source has
// labels and Label is long enough, Label[i] is row i's label; if it has
// privacy units and Unit is long enough, Unit[i] is row i's unit (user)
// index. N is the number of rows the last Next filled.
type Batch struct {
	X     []float64
	Label []float64
	Unit  []int32
	N     int
	// First is the position of the batch's first row in its pass. The
	// pairwise passes that hand blocks of rows to mechanisms set it (a
	// mechanism over an in-memory source may keep per-row values);
	// cursors need not.
	First int
	// NormBig and NormRel, when a source with stored norms (Normed) fills
	// them, hold the two parts of each row's Euclidean norm as
	// linalg.ScaledNorm computes them from the row's features: ‖a‖ =
	// NormBig[i]·NormRel[i] (NormBig[i] = +Inf for a row that ScaledNorm
	// rejects). They are a deterministic function of the row, stored so
	// that a pass need not recompute them; a consumer that finds them nil
	// computes them itself.
	NormBig, NormRel []float64
}

// WithNorms gives b room for the norm parts of its rows (see NormBig).
func (b *Batch) WithNorms(n int) *Batch {
	b.NormBig, b.NormRel = make([]float64, n), make([]float64, n)
	return b
}

// NewBatch returns a batch with room for n rows of dim features, and for
// their labels and units when withLabels and withUnits are set.
func NewBatch(dim, n int, withLabels, withUnits bool) *Batch {
	b := &Batch{X: make([]float64, dim*n)}
	if withLabels {
		b.Label = make([]float64, n)
	}
	if withUnits {
		b.Unit = make([]int32, n)
	}
	return b
}

// Cap returns the number of rows of dim features the batch can hold.
func (b *Batch) Cap(dim int) int {
	if dim <= 0 {
		return 0
	}
	return len(b.X) / dim
}

// Row returns the features of row i of the last fill (dim per row).
func (b *Batch) Row(i, dim int) []float64 { return b.X[i*dim : (i+1)*dim] }

// Source is private data that can be read, any number of times, as a
// stream of rows in a fixed order.
type Source interface {
	// Dim is the number of feature columns (public schema).
	Dim() int
	// Scan starts a pass over the rows. The cursor must be closed.
	Scan(ctx context.Context) (Cursor, error)
}

// Cursor reads one pass of a Source.
type Cursor interface {
	// Next fills dst with the next rows, at most dst.Cap(Dim()) of them,
	// and sets dst.N. At the end of the rows it returns io.EOF with
	// dst.N == 0. A batch may hold fewer rows than its capacity before the
	// end; callers must not derive anything from batch sizes.
	Next(dst *Batch) error
	// Close releases the pass. It is safe to call more than once.
	Close() error
}

// Viewer is implemented by cursors that can lend their rows where the
// source keeps them (a read-only memory map of a file, say) instead of
// copying them into a caller's buffer. A pass that only reads its rows
// asks for views; any other consumer calls Next as usual.
type Viewer interface {
	// View sets dst's slices to the next rows of the pass, exactly
	// min(n, rows left) of them, and dst.N to their number: X always,
	// Label when labels is set and the source has labels, Unit when
	// units is set and the source has units, NormBig and NormRel when
	// the source stores norms (Normed). At the end of the rows it returns
	// io.EOF with dst.N == 0. The slices are read-only and stay valid
	// until the next View or Close; the caller must not write them. It
	// returns ErrNoView, before reading anything, when this pass cannot
	// lend its rows (a cursor decides that on its first call); the caller
	// then reads the same pass with Next.
	View(dst *Batch, n int, labels, units bool) error
}

// ErrNoView is View's answer when a cursor cannot lend its rows.
var ErrNoView = errors.New("rows: this cursor cannot lend its rows")

// Labeled is implemented by sources that carry a label per row (a
// regression or classification target).
type Labeled interface {
	HasLabels() bool
}

// Units is implemented by sources whose rows belong to privacy units
// (users) other than the rows themselves. NumUnits is the number of unit
// indices in use, 0..NumUnits()−1: like a row count it is private unless
// the data owner declared it, and a mechanism may use it only inside its
// computation.
type Units interface {
	NumUnits() int
}

// Normed is implemented by sources that can fill Batch.NormBig and
// Batch.NormRel with their rows' stored norm parts. A cursor of such a
// source fills them whenever both are long enough for the rows it fills.
type Normed interface {
	HasNorms() bool
}

// RandomAccess is implemented by sources whose rows can be read by
// position, for methods that visit rows in a shuffled order. NumRows is
// the private row count: a shuffle needs it, and it may enter nothing
// else (see the package doc).
type RandomAccess interface {
	Source
	NumRows() int
	// ReadRow copies the features of row i into dst (len Dim()).
	ReadRow(i int, dst []float64)
}

// ErrDim is returned when a batch or destination does not fit the
// source's dimension.
var ErrDim = errors.New("rows: buffer does not hold a whole row of the source's dimension")

// ForEach scans src once and calls f with every filled batch, in order,
// using a buffer of batchRows rows. It stops at the first error of the
// source or of f, or when ctx is cancelled.
func ForEach(ctx context.Context, src Source, batchRows int, withLabels, withUnits bool, f func(b *Batch) error) error {
	if batchRows < 1 {
		return fmt.Errorf("rows: ForEach needs batchRows ≥ 1, got %d", batchRows)
	}
	cur, err := src.Scan(ctx)
	if err != nil {
		return err
	}
	defer cur.Close()
	b := NewBatch(src.Dim(), batchRows, withLabels, withUnits)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := cur.Next(b)
		if err == io.EOF {
			return cur.Close()
		}
		if err != nil {
			return err
		}
		if err := f(b); err != nil {
			return err
		}
	}
}
