package sqlplan

import (
	"encoding/json"
	"os"
	"sync"
	"testing"
)

// The planner's tests read DuckDB's syntax trees recorded in
// testdata/ast.json (query text → json_serialize_sql output), so this
// package's tests need no cgo. dsl/snapshot's TestParseSQLRecorded checks
// every recorded tree against the linked DuckDB and rewrites the file with
// -update-sqlplan. To add a query: run these tests with SQLPLAN_ADD=1
// (missing queries are added with a null tree), then the snapshot test
// with -update-sqlplan.
const astFile = "testdata/ast.json"

var recorded struct {
	sync.Mutex
	m map[string]json.RawMessage
}

func ast(t *testing.T, query string) []byte {
	t.Helper()
	recorded.Lock()
	defer recorded.Unlock()
	if recorded.m == nil {
		b, err := os.ReadFile(astFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &recorded.m); err != nil {
			t.Fatal(err)
		}
	}
	js, ok := recorded.m[query]
	if !ok || string(js) == "null" {
		if os.Getenv("SQLPLAN_ADD") != "" {
			recorded.m[query] = json.RawMessage("null")
			b, _ := json.MarshalIndent(recorded.m, "", "  ")
			if err := os.WriteFile(astFile, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("no recorded syntax tree for %q: run with SQLPLAN_ADD=1, then go test -tags duckdb_arrow ./dsl/snapshot -run TestParseSQLRecorded -update-sqlplan", query)
	}
	return js
}

// people is the public schema the tests plan against.
var people = Schema{
	Unit: "user",
	Columns: []Column{
		{Name: "region", Kind: Categorical, Categories: []string{"north", "south", "east", "west"}},
		{Name: "sex", Kind: Categorical, Categories: []string{"f", "m"}},
		{Name: "age", Kind: Numeric, Bounded: true, Lo: 0, Hi: 120},
		{Name: "income", Kind: Numeric, Bounded: true, Lo: 0, Hi: 200000},
		{Name: "hours", Kind: Numeric},
		{Name: "city", Kind: Text},
		{Name: "born", Kind: Date},
		{Name: "user", Kind: Text},
	},
}

// plan parses and plans query against people.
func plan(t *testing.T, query string, opt Options) (*Plan, error) {
	t.Helper()
	q, err := Parse(ast(t, query))
	if err != nil {
		return nil, err
	}
	return q.Plan(people, opt)
}
