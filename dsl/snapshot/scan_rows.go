//go:build !duckdb_arrow

package snapshot

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
)

// chunkRows is how many rows a chunk of the row-by-row scan holds.
const chunkRows = 2048

// openWindow runs a window's query and reads its result row by row
// through database/sql/driver, the DuckDB driver's portable interface.
// Builds with the tag duckdb_arrow use scan_arrow.go instead.
func openWindow(ctx context.Context, conn driver.Conn, q string, sp *scanSpec) (windowScan, error) {
	qc, ok := conn.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("no QueryerContext")
	}
	rs, err := qc.QueryContext(ctx, q, nil)
	if err != nil {
		return nil, err
	}
	w := &rowScan{rs: rs, sp: sp, dest: make([]driver.Value, len(rs.Columns()))}
	if len(w.dest) != 1+len(sp.vals)+b2i(sp.units) {
		rs.Close()
		return nil, errors.New("unexpected columns")
	}
	w.c.row = make([]int64, chunkRows)
	w.c.val = make([][]float64, len(sp.vals))
	for j := range w.c.val {
		w.c.val[j] = make([]float64, chunkRows)
	}
	if sp.units {
		w.c.unit = make([]int32, chunkRows)
	}
	return w, nil
}

// scanKind names the scan for measurements.
const scanKind = "database/sql/driver rows"

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type rowScan struct {
	rs   driver.Rows
	sp   *scanSpec
	dest []driver.Value
	c    chunk // buffers the chunks handed out point into
}

var errValue = errors.New("unexpected value")

func (w *rowScan) next(c *chunk) error {
	n := 0
	for n < chunkRows {
		err := w.rs.Next(w.dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		r, ok := w.dest[0].(int64)
		if !ok {
			return errValue
		}
		w.c.row[n] = r
		for j, v := range w.sp.vals {
			d := w.dest[1+j]
			if v.categorical {
				code := v.other
				if s, ok := d.(string); ok {
					if k, in := v.codes[s]; in {
						code = k
					}
				} else if d != nil {
					return errValue
				}
				w.c.val[j][n] = code
				continue
			}
			f, ok := d.(float64)
			if !ok {
				return errValue
			}
			w.c.val[j][n] = f
		}
		if w.sp.units {
			u, ok := w.dest[len(w.dest)-1].(int32)
			if !ok {
				return errValue
			}
			w.c.unit[n] = u
		}
		n++
	}
	if n == 0 {
		return io.EOF
	}
	*c = w.c
	c.n = n
	return nil
}

func (w *rowScan) close() error { return w.rs.Close() }
