package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"
)

var updateSQLPlan = flag.Bool("update-sqlplan", false, "rewrite ../sqlplan/testdata/ast.json from this DuckDB's parser")

// sqlplanAST is the file of syntax trees that dsl/sqlplan's tests plan
// from: recorded here, where DuckDB is linked, so that the planner's tests
// stay pure Go yet are checked against the parser's real output.
const sqlplanAST = "../sqlplan/testdata/ast.json"

// TestParseSQLRecorded checks that every recorded tree is what this
// DuckDB's json_serialize_sql gives today; a DuckDB upgrade that changes
// the JSON shapes fails here rather than in a planner that silently
// misreads them. -update-sqlplan rewrites the file (and fills trees
// recorded as null).
func TestParseSQLRecorded(t *testing.T) {
	b, err := os.ReadFile(sqlplanAST)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec) == 0 {
		t.Fatal("no recorded trees")
	}
	queries := make([]string, 0, len(rec))
	for q := range rec {
		queries = append(queries, q)
	}
	sort.Strings(queries)
	for _, q := range queries {
		got, err := ParseSQL(context.Background(), q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if *updateSQLPlan {
			if !json.Valid(got) {
				got, _ = json.Marshal(string(got)) // kept as the parser's text: the planner must refuse it
			}
			rec[q] = got
			continue
		}
		if !sameJSON(got, rec[q]) {
			t.Errorf("%q: DuckDB's tree differs from the recorded one; rerun with -update-sqlplan and check the planner's tests\ngot  %.400s\nwant %.400s", q, got, rec[q])
		}
	}
	if *updateSQLPlan {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sqlplanAST, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sameJSON compares two JSON texts by value; a text that is not JSON is
// recorded as a JSON string holding it.
func sameJSON(got, want []byte) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil {
		a = string(got)
	}
	if json.Unmarshal(want, &b) != nil {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestParseSQL(t *testing.T) {
	ctx := context.Background()
	// The text is a bound parameter: quotes and semicolons are parsed as
	// SQL, never spliced into the parser's own statement.
	js, err := ParseSQL(ctx, "SELECT 'a'');SELECT 1;--' AS x FROM t")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Error      bool
		Statements []json.RawMessage
	}
	if err := json.Unmarshal(js, &v); err != nil || v.Error || len(v.Statements) != 1 || !strings.Contains(string(js), `"a');SELECT 1;--"`) {
		t.Errorf("got %s (%v)", js, err)
	}
	js, err = ParseSQL(ctx, "SELEC 1")
	if err != nil || !strings.Contains(string(js), `"error":true`) {
		t.Errorf("a syntax error: got %s, %v; want an error object in the JSON", js, err)
	}
	// Parsing never executes: a statement that would fail at run time
	// (no table t, no file) parses.
	if _, err := ParseSQL(ctx, "SELECT * FROM read_csv('/nonexistent')"); err != nil {
		t.Error(err)
	}
}
