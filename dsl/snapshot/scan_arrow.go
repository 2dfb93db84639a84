//go:build duckdb_arrow

package snapshot

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// openWindow runs a window's query through DuckDB's Arrow interface and
// reads its result a record batch (DuckDB chunk, 2048 rows) at a time:
// numeric columns are handed out as the batch's own float64 buffers, with
// no per-value conversion. Builds without the tag duckdb_arrow use
// scan_rows.go, which gives the same values.
func openWindow(ctx context.Context, conn driver.Conn, q string, sp *scanSpec) (windowScan, error) {
	a, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return nil, err
	}
	rr, err := a.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	w := &arrowScan{rr: rr, sp: sp, codes: make([][]float64, len(sp.vals))}
	if rr.Schema().NumFields() != 1+len(sp.vals)+b2i(sp.units) {
		rr.Release()
		return nil, errors.New("unexpected columns")
	}
	return w, nil
}

// scanKind names the scan for measurements.
const scanKind = "Arrow"

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type arrowScan struct {
	rr    array.RecordReader
	sp    *scanSpec
	codes [][]float64 // buffers of categorical columns' indices
	val   [][]float64
}

// stringArray is what DuckDB's VARCHAR becomes, whichever Arrow string
// layout (string, large string, string view) its settings choose.
type stringArray interface {
	arrow.Array
	Value(i int) string
}

var errValue = errors.New("unexpected value")

func (w *arrowScan) next(c *chunk) error {
	if !w.rr.Next() {
		if err := w.rr.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	rec := w.rr.RecordBatch()
	n := int(rec.NumRows())
	rows, ok := rec.Column(0).(*array.Int64)
	if !ok || rows.NullN() != 0 {
		return errValue
	}
	if w.val == nil {
		w.val = make([][]float64, len(w.sp.vals))
	}
	for j, v := range w.sp.vals {
		col := rec.Column(1 + j)
		if v.categorical {
			s, ok := col.(stringArray)
			if !ok {
				return errValue
			}
			if cap(w.codes[j]) < n {
				w.codes[j] = make([]float64, n)
			}
			out := w.codes[j][:n]
			for i := range out {
				out[i] = v.other
				if !s.IsNull(i) {
					if k, in := v.codes[s.Value(i)]; in {
						out[i] = k
					}
				}
			}
			w.val[j] = out
			continue
		}
		f, ok := col.(*array.Float64)
		if !ok || f.NullN() != 0 {
			return errValue
		}
		w.val[j] = f.Float64Values()
	}
	c.n, c.row, c.val, c.unit = n, rows.Int64Values(), w.val, nil
	if w.sp.units {
		u, ok := rec.Column(int(rec.NumCols()) - 1).(*array.Int32)
		if !ok || u.NullN() != 0 {
			return errValue
		}
		c.unit = u.Int32Values()
	}
	return nil
}

func (w *arrowScan) close() error {
	w.rr.Release()
	return nil
}
