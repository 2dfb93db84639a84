package snapshot

// Private SQL (issue 27): the snapshot side of release.SQLReader. The
// execution core plans an analyst's query from public facts, prints ONE
// statement with dsl/sqlplan over Table(), and runs it here after the
// charge. The statement is printed from the plan, never copied from the
// analyst's text, and the reader's DuckDB may open this snapshot's file
// only (lockDown), so even a statement that named another file could not
// read it.

import (
	"context"
	"database/sql"
	"errors"
	"math/big"
)

// ErrQuery is the one error of Query: its text is fixed, because DuckDB's
// own message can quote values of the data.
var ErrQuery = errors.New("snapshot: the private query could not be evaluated")

// Table is the table reference a printed statement reads the snapshot's
// rows through: a read_parquet of the verified file.
func (r *Reader) Table() string { return "read_parquet(" + quoteString(r.path) + ")" }

// Query runs stmt on the snapshot and returns every row of its result,
// each value as the driver scans it (string, float64, int64, *big.Int for
// 128-bit integers, nil for NULL). Any failure is ErrQuery.
func (r *Reader) Query(ctx context.Context, stmt string) ([][]any, error) {
	if err := r.acquire(); err != nil {
		return nil, ErrQuery
	}
	defer r.release()
	db := sql.OpenDB(keepOpen{r.db})
	defer db.Close()
	rs, err := db.QueryContext(ctx, stmt)
	if err != nil {
		return nil, ErrQuery
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, ErrQuery
	}
	var out [][]any
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, ErrQuery
		}
		for i, v := range row {
			if b, ok := v.(*big.Int); ok {
				row[i] = new(big.Int).Set(b)
			}
		}
		out = append(out, row)
	}
	if rs.Err() != nil {
		return nil, ErrQuery
	}
	return out, nil
}
