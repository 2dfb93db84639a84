package snapshot

// Public tables (issue 31): a synthetic table released by
// private_synthesize is public, so the analyst may query it exactly and as
// often as they like. Its rows are loaded into a DuckDB of their own, in
// memory and locked down before any row goes in (no file, no network, no
// extension, configuration locked), so that whatever SQL text runs there
// can read nothing but those public rows. Private data never enter such a
// database.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// PublicTableName is the name of the table a public table's rows are held
// in; Table returns it quoted.
const PublicTableName = "__pn_public"

// PublicTable is an in-memory, locked-down DuckDB holding one table of
// public rows. It implements release's SQLReader (Query, Table), so that
// private_sql's printed statement runs on it as on a snapshot.
type PublicTable struct {
	c  *duckdb.Connector
	db *sql.DB
}

// OpenPublicTable loads rows into a new in-memory DuckDB as the table
// PublicTableName (and as name, when name is not ""): a DOUBLE column per
// numeric column (float64 or nil cells), a VARCHAR column per other
// column (string or nil cells).
func OpenPublicTable(ctx context.Context, name string, cols []string, numeric []bool, rows [][]any) (*PublicTable, error) {
	if len(cols) == 0 || len(numeric) != len(cols) {
		return nil, errors.New("snapshot: a public table needs columns, each numeric or not")
	}
	c, err := openDuck("")
	if err != nil {
		return nil, fmt.Errorf("snapshot: opening a public table: %w", err)
	}
	t := &PublicTable{c: c, db: sql.OpenDB(c)}
	if err := t.load(ctx, name, cols, numeric, rows); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *PublicTable) load(ctx context.Context, name string, cols []string, numeric []bool, rows [][]any) error {
	// Locked first: no statement, ours or the analyst's, may reach a file.
	if err := lockDown(ctx, t.c, nil, nil); err != nil {
		return fmt.Errorf("snapshot: locking a public table: %w", err)
	}
	defs := make([]string, len(cols))
	for i, c := range cols {
		typ := "VARCHAR"
		if numeric[i] {
			typ = "DOUBLE"
		}
		defs[i] = quoteIdent(c) + " " + typ
	}
	conn, err := t.c.Connect(ctx)
	if err != nil {
		return fmt.Errorf("snapshot: a public table: %w", err)
	}
	defer conn.Close()
	ex := conn.(driver.ExecerContext)
	if _, err := ex.ExecContext(ctx, "CREATE TABLE "+quoteIdent(PublicTableName)+" ("+strings.Join(defs, ", ")+")", nil); err != nil {
		return fmt.Errorf("snapshot: creating a public table: %w", err)
	}
	ap, err := duckdb.NewAppenderFromConn(conn, "", PublicTableName)
	if err != nil {
		return fmt.Errorf("snapshot: a public table: %w", err)
	}
	vals := make([]driver.Value, len(cols))
	for i, r := range rows {
		if len(r) != len(cols) {
			ap.Close()
			return fmt.Errorf("snapshot: public table row %d has %d cells, not %d", i, len(r), len(cols))
		}
		for j, v := range r {
			switch x := v.(type) {
			case nil:
				vals[j] = nil
			case float64:
				if !numeric[j] {
					ap.Close()
					return fmt.Errorf("snapshot: public table row %d: a number in text column %q", i, cols[j])
				}
				vals[j] = x
			case string:
				if numeric[j] {
					ap.Close()
					return fmt.Errorf("snapshot: public table row %d: text in numeric column %q", i, cols[j])
				}
				vals[j] = x
			default:
				ap.Close()
				return fmt.Errorf("snapshot: public table row %d: a cell of type %T", i, v)
			}
		}
		if err := ap.AppendRow(vals...); err != nil {
			ap.Close()
			return fmt.Errorf("snapshot: filling a public table: %w", err)
		}
	}
	if err := ap.Close(); err != nil {
		return fmt.Errorf("snapshot: filling a public table: %w", err)
	}
	if name != "" && name != PublicTableName {
		if _, err := ex.ExecContext(ctx, "CREATE VIEW "+quoteIdent(name)+" AS SELECT * FROM "+quoteIdent(PublicTableName), nil); err != nil {
			return fmt.Errorf("snapshot: naming a public table %q: %w", name, err)
		}
	}
	return nil
}

// Table is the reference private_sql's printed statement reads the rows
// through.
func (t *PublicTable) Table() string { return quoteIdent(PublicTableName) }

// Query runs one statement and returns its rows as Reader.Query does
// (integers as int64 or *big.Int, DOUBLE as float64, text as string, nil
// for NULL, a MAP as [][2]any pairs). The data are public, so DuckDB's
// own message is returned.
func (t *PublicTable) Query(ctx context.Context, stmt string) ([][]any, error) {
	_, rows, err := t.query(ctx, stmt)
	return rows, err
}

func (t *PublicTable) query(ctx context.Context, stmt string) ([]string, [][]any, error) {
	rs, err := t.db.QueryContext(ctx, stmt)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	return scanRows(rs)
}

// Select runs an analyst's exact query over the public rows: one SELECT
// statement (checked with DuckDB's own parser first, so that no other
// kind of statement runs), whose FROM names the table by the name it was
// opened with. It returns the result's column names and rows, each cell a
// float64 (every number), a string, or nil.
func (t *PublicTable) Select(ctx context.Context, query string) ([]string, [][]any, error) {
	names, err := oneSelect(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	// Every table the query names is this table (the only one there is).
	for _, n := range names {
		if n == PublicTableName {
			continue
		}
		if _, err := t.db.ExecContext(ctx, "CREATE OR REPLACE TEMP VIEW "+quoteIdent(n)+" AS SELECT * FROM "+quoteIdent(PublicTableName)); err != nil {
			return nil, nil, fmt.Errorf("naming the table %q: %w", n, err)
		}
	}
	cols, rows, err := t.query(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		for i, v := range r {
			r[i] = plainCell(v)
		}
	}
	return cols, rows, nil
}

// oneSelect checks that query is exactly one SELECT statement
// (json_serialize_sql serializes SELECT statements only and reports an
// error for anything else) and returns the table names it reads.
func oneSelect(ctx context.Context, query string) ([]string, error) {
	js, err := ParseSQL(ctx, query)
	if err != nil {
		return nil, err
	}
	var ast struct {
		Error        bool   `json:"error"`
		ErrorMessage string `json:"error_message"`
		Statements   []any  `json:"statements"`
	}
	if err := json.Unmarshal(js, &ast); err != nil {
		return nil, fmt.Errorf("snapshot: reading the parsed query: %w", err)
	}
	if ast.Error {
		return nil, fmt.Errorf("give one SELECT statement: %s", ast.ErrorMessage)
	}
	if len(ast.Statements) != 1 {
		return nil, fmt.Errorf("give one SELECT statement, not %d statements", len(ast.Statements))
	}
	seen := map[string]bool{}
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "BASE_TABLE" {
				if n, ok := x["table_name"].(string); ok && n != "" && !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(ast.Statements[0])
	return names, nil
}

// plainCell is a result cell as a float64, a string or nil.
func plainCell(v any) any {
	switch x := v.(type) {
	case nil, string, float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case int16:
		return float64(x)
	case int8:
		return float64(x)
	case uint64:
		return float64(x)
	case uint32:
		return float64(x)
	case uint16:
		return float64(x)
	case uint8:
		return float64(x)
	case bool:
		if x {
			return 1.0
		}
		return 0.0
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f
	case duckdb.Decimal:
		return x.Float64()
	}
	return fmt.Sprint(v)
}

// Close closes the database; its rows are gone with it.
func (t *PublicTable) Close() error {
	err := t.db.Close()
	if cerr := t.c.Close(); err == nil {
		err = cerr
	}
	return err
}
