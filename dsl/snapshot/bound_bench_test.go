package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// BenchmarkSQLUserBound measures the cost of private SQL's contribution
// bounding (sqlplan.Bound: three window functions over each user's rows)
// on a user-level snapshot of 10⁶ rows, 10⁴ users and 4 groups: the same
// grouped COUNT/SUM/AVG statement without the bound ("unbounded") and
// with max_groups=2, max_rows=5 ("bounded").
//
//	go test -tags duckdb_arrow -run '^$' -bench SQLUserBound -benchtime 5x ./dsl/snapshot
func BenchmarkSQLUserBound(b *testing.B) {
	const rows, users = 1_000_000, 10_000
	dir := b.TempDir()
	src := filepath.Join(dir, "visits.csv")
	var sb strings.Builder
	sb.WriteString("uid,minutes,region\n")
	regions := []string{"north", "south", "east", "west"}
	for i := range rows {
		fmt.Fprintf(&sb, "u%d,%d,%s\n", (i*7919)%users, i%61, regions[(i/3)%4])
	}
	if err := os.WriteFile(src, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	info, err := Build(ctx, Spec{From: src, UserColumn: "uid", Bounds: map[string][2]float64{"minutes": {0, 60}},
		Categories: map[string][]string{"region": regions}}, dir, "visits")
	if err != nil {
		b.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ast, err := ParseSQL(ctx, "SELECT region, COUNT(*) AS n, SUM(minutes) AS s, AVG(minutes) AS m FROM visits GROUP BY region")
	if err != nil {
		b.Fatal(err)
	}
	schema := sqlplan.Schema{Unit: "uid", Columns: []sqlplan.Column{
		{Name: "minutes", Kind: sqlplan.Numeric, Bounded: true, Lo: 0, Hi: 60},
		{Name: "region", Kind: sqlplan.Categorical, Categories: regions},
	}}
	for _, c := range []struct {
		name string
		opt  sqlplan.Options
	}{{"unbounded", sqlplan.Options{}}, {"bounded", sqlplan.Options{MaxGroups: 2, MaxRows: 5}}} {
		b.Run(c.name, func(b *testing.B) {
			q, err := sqlplan.Parse(ast)
			if err != nil {
				b.Fatal(err)
			}
			p, err := q.Plan(schema, c.opt)
			if err != nil {
				b.Fatal(err)
			}
			st, err := sqlplan.Print(p, sqlplan.DuckDB, r.Table())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := r.Query(ctx, st.SQL); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
