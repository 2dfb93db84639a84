package snapshot

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// memoryLimit caps DuckDB's own memory (buffers, hash tables, sorts) in
// ingestion and reading; beyond it DuckDB spills to its temp directory
// during ingestion. The Go side of a scan adds one window.
const memoryLimit = "512MB"

// quoteIdent quotes a SQL identifier for DuckDB, doubling embedded double
// quotes. Names reaching it were checked by CheckName (no control
// characters), so the quoted text is a single identifier whatever it holds.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteString quotes a SQL string literal for DuckDB, doubling embedded
// single quotes (DuckDB's plain literals have no backslash escapes). It is
// used for paths and for the owner's public categories and schema, never
// for data values.
func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// quoteList is a DuckDB list literal of strings.
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quoteString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// openDuck opens a private in-memory DuckDB with the settings every use
// shares: threads as GOMAXPROCS, a memory limit, no extension
// installation or autoloading (the JSON and Parquet readers are built
// into the library, so nothing is ever fetched from the network), and the
// insertion order kept, which the snapshot's row order relies on.
// tempDir is where DuckDB may spill ("" for nowhere).
func openDuck(tempDir string) (*duckdb.Connector, error) {
	q := url.Values{}
	q.Set("threads", strconv.Itoa(runtime.GOMAXPROCS(0)))
	q.Set("memory_limit", memoryLimit)
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	q.Set("preserve_insertion_order", "true")
	q.Set("temp_directory", tempDir)
	if tempDir == "" {
		q.Set("max_temp_directory_size", "0B")
	}
	return duckdb.NewConnector("?"+q.Encode(), nil)
}

// lockDown restricts a DuckDB database to the given files and directories
// and locks its configuration, so no later statement can widen it. The
// settings are global: they hold for every connection of the database.
func lockDown(ctx context.Context, c *duckdb.Connector, paths, dirs []string) error {
	conn, err := c.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ex := conn.(driver.ExecerContext)
	stmts := []string{
		"SET allowed_paths = " + quoteList(paths),
		"SET allowed_directories = " + quoteList(dirs),
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	}
	for _, s := range stmts {
		if _, err := ex.ExecContext(ctx, s, nil); err != nil {
			return err
		}
	}
	return nil
}

// queryRow runs a query that returns one row on conn and scans it.
func queryRow(ctx context.Context, conn *sql.Conn, q string, dst ...any) error {
	if err := conn.QueryRowContext(ctx, q).Scan(dst...); err != nil {
		return fmt.Errorf("%w (in %.80s)", err, q)
	}
	return nil
}
