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

	"github.com/duckdb/duckdb-go/v2"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// ErrQuery is the one error of Query: its text is fixed, because DuckDB's
// own message can quote values of the data.
var ErrQuery = errors.New("snapshot: the private query could not be evaluated")

// Table is the table reference a printed statement reads the snapshot's
// rows through: a read_parquet of the verified file. On user-level data
// the privacy unit, stored as the dense index __pn_unit, is also named by
// the registered user column, which is how a plan names it (in
// COUNT(DISTINCT unit)). It also holds each row's position in the file
// as sqlplan.RowColumn (DuckDB's file_row_number, which the file's
// layout fixes), the order in which a plan bounds each user's rows.
// (DuckDB refuses file_row_number on a file with a column of that name:
// private_sql refuses such a user-level dataset before the charge.)
func (r *Reader) Table() string {
	t := "read_parquet(" + quoteString(r.path) + ")"
	if r.info.UserColumn != "" {
		t = "(SELECT * EXCLUDE (file_row_number), " + unitColumn + " AS " + quoteIdent(r.info.UserColumn) +
			", file_row_number AS " + sqlplan.RowColumn + " FROM read_parquet(" + quoteString(r.path) + ", file_row_number = true))"
	}
	return t
}

// Query runs stmt on the snapshot and returns every row of its result,
// each value as the driver scans it (string, float64, int64, *big.Int for
// 128-bit integers, nil for NULL), a MAP as its [][2]any key, value
// pairs. Any failure is ErrQuery.
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
	_, out, err := scanRows(rs)
	if err != nil {
		return nil, ErrQuery
	}
	return out, nil
}

// scanRows reads every row of rs, each value as the driver scans it
// (string, float64, int64, *big.Int copied out of the driver's buffer,
// nil for NULL), a MAP (a quantile's histogram) as its key, value pairs,
// in a form that names no driver type. Callers decide what its errors
// may say.
func scanRows(rs *sql.Rows) (cols []string, out [][]any, err error) {
	if cols, err = rs.Columns(); err != nil {
		return nil, nil, err
	}
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		for i, v := range row {
			switch x := v.(type) {
			case *big.Int:
				row[i] = new(big.Int).Set(x)
			case duckdb.OrderedMap:
				pairs := make([][2]any, x.Len())
				for j, k := range x.Keys() {
					pairs[j] = [2]any{k, x.Values()[j]}
				}
				row[i] = pairs
			}
		}
		out = append(out, row)
	}
	return cols, out, rs.Err()
}
