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
	if js, ok := parsed.get(query); ok {
		return []byte(js), nil
	}
	var js string
	if err := parser.db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&js); err != nil {
		return nil, fmt.Errorf("snapshot: parsing SQL: %w", err)
	}
	parsed.put(query, js)
	return []byte(js), nil
}

// parsedTrees is how many parsed queries the process remembers.
const parsedTrees = 256

// parsed remembers the syntax trees of recent query texts: the tree is a
// function of the text alone (one DuckDB per process), and a notebook
// repeats the same query (re-run cells, loops, a dry run then the call),
// each time paying a statement in the parser's DuckDB (about 1.5 ms of
// CPU, a third of a small call's fixed cost). The texts are the analyst's
// public queries; a full memo is emptied, not evicted entry by entry.
var parsed = parseMemo{m: map[string]string{}}

type parseMemo struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *parseMemo) get(query string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	js, ok := p.m[query]
	return js, ok
}

func (p *parseMemo) put(query, js string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= parsedTrees {
		clear(p.m)
	}
	p.m[query] = js
}
