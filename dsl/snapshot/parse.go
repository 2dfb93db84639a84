package snapshot

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// parser is the process's one DuckDB used only to parse SQL: an in-memory
// database with nothing attached, external access off and its
// configuration locked, so that even a statement it were made to run could
// read no file. It is opened on first use and kept for the process's life
// (opening DuckDB costs about 0.1 s of CPU, more than parsing ever does).
var parser struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// ParseSQL returns DuckDB's own syntax tree of query as the JSON that
// json_serialize_sql produces. The query text is passed as a bound
// parameter and is parsed, never executed. A syntax error is not an error
// here: DuckDB reports it inside the JSON (an object with "error": true,
// "error_type" and "error_message"), which the planner turns into its own
// refusal; err is for a failure of the parser itself.
func ParseSQL(ctx context.Context, query string) ([]byte, error) {
	parser.once.Do(func() {
		c, err := openDuck("")
		if err != nil {
			parser.err = fmt.Errorf("snapshot: opening the SQL parser: %w", err)
			return
		}
		if err := lockDown(ctx, c, nil, nil); err != nil {
			c.Close()
			parser.err = fmt.Errorf("snapshot: locking the SQL parser: %w", err)
			return
		}
		parser.db = sql.OpenDB(c)
	})
	if parser.err != nil {
		return nil, parser.err
	}
	var js string
	if err := parser.db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&js); err != nil {
		return nil, fmt.Errorf("snapshot: parsing SQL: %w", err)
	}
	return []byte(js), nil
}
