package chsource_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/chsource"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/internal/chtest"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// User-level data in a Distributed table registered with --order: each
// user's first groups and rows in that order are kept, as a snapshot
// keeps them in its file's order, so the releases and receipts agree.
// Every user has rows on both shards (newFixtureUnit), and the limits are
// below what most users hold, so a bound applied per shard (a user
// keeping its first rows on each shard) would change the releases.
func TestUserLevelSameAsSnapshot(t *testing.T) {
	f := newFixtureUnit(t, "uid", "id")
	split := f.srv.Query(t, "SELECT count() FROM (SELECT uid FROM shard1.people GROUP BY uid) WHERE uid IN (SELECT uid FROM shard2.people)")
	if split != "400" {
		t.Fatalf("users with rows on both shards: %s, want all 400", split)
	}
	queries := []map[string]any{
		{"query": "SELECT region, COUNT(*) AS n, SUM(income) AS s, AVG(hours, 0, 60) AS h, COUNT(DISTINCT uid) AS u FROM people GROUP BY region", "eps": 1.0, "max_groups": 2, "max_rows": 3},
		{"query": "SELECT sex, MEDIAN(age) AS m, QUANTILE(income, 0.9) AS q FROM people WHERE hours > 10 GROUP BY sex", "eps": 1.0, "max_groups": 1, "max_rows": 2},
		{"query": "SELECT COUNT(*) AS n, VARIANCE(age) AS v, STDDEV(hours, 0, 60) AS sd, COUNT(DISTINCT uid) AS u FROM people", "eps": 1.0, "delta": 1e-6, "max_rows": 4},
		{"query": "SELECT COUNT(*) AS n, SUM(age) AS s, AVG(income) AS a FROM people WHERE region IN ('north', 'east')", "eps": 1.0, "max_rows": 1},
		{"query": "SELECT region, sex, COUNT(*) AS n, AVG(age) AS a FROM people WHERE age > 20 GROUP BY region, sex", "eps": 1.0, "max_groups": 3, "max_rows": 2},
	}
	for i, q := range queries {
		want, err := call(t, f.snap, uint64(7+i), q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on the snapshot: %v", i, err)
		}
		got, err := call(t, f.live, uint64(7+i), q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on ClickHouse: %v", i, err)
		}
		sameRelease(t, fmt.Sprintf("query %d", i), got, want)
	}
	if err := f.live.Verify(); err != nil {
		t.Errorf("ledger verify: %v", err)
	}
	// The data were read: 400 users, each keeping one row (max_rows 1,
	// one group), give a count of about 400, where the noise alone
	// would give about 0 and a bound per shard about 800.
	r, err := call(t, f.live, 1, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 10.0, "max_rows": 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Value.(*release.Table).Rows[0][0].(float64); n < 380 || n > 420 {
		t.Errorf("COUNT(*) with one row per user released %v, want about 400", n)
	}

	// The same table registered without --order: refused before the
	// charge, as on PostgreSQL.
	ref, cols, _, err := chsource.Describe(context.Background(), f.srv.URL("analyst"), chtest.AnalystPassword, "db.people", categories, "uid", "")
	if err != nil {
		t.Fatal(err)
	}
	st := testfix.Store(t, t.TempDir())
	if _, err := st.Register(context.Background(), ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 10, Delta: 1e-4}, Accountant: accounting.ModeZCDP, Bounds: bounds,
		Engine: ref, EngineColumns: cols, EngineSecret: chtest.AnalystPassword}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, st, 1, queries[0], nil, nil); err == nil || !strings.Contains(err.Error(), "--order") || charges(t, st) != 0 {
		t.Errorf("user-level without --order: %v", err)
	}
}

// User-level column analyses on the Distributed table registered with
// --order: each user's rows are bounded in the same order as the
// snapshot's file, so the releases and receipts agree.
func TestTabularUserLevelSameAsSnapshot(t *testing.T) {
	f := newFixtureUnit(t, "uid", "id")
	for i, c := range []tabCall{
		{"private_count", nil, nil},
		{"private_count", nil, []release.Filter{{Column: "region", Op: "==", Value: 2}}},
		{"private_count", map[string]any{"by": "region", "max_groups": 2}, nil},
		{"private_histogram", map[string]any{"col": "region", "max_groups": 2}, []release.Filter{{Column: "region", Op: "!=", Value: 3}}},
		{"private_histogram", map[string]any{"col": "age", "bins": 7, "max_groups": 3}, nil},
		{"private_sum", map[string]any{"col": "age", "delta": 1e-6}, []release.Filter{{Column: "age", Op: ">=", Value: 60}}},
		{"private_sum", map[string]any{"col": "income", "by": "sex"}, nil},
		{"private_mean", map[string]any{"col": "income", "by": "region", "max_groups": 3}, nil},
		{"private_mean", map[string]any{"col": "age"}, nil},
		{"private_quantile", map[string]any{"col": "age", "q": 0.5}, nil},
		{"private_quantile", map[string]any{"col": "income", "q": 0.25}, []release.Filter{{Column: "sex", Op: "==", Value: 0}}},
	} {
		what := fmt.Sprintf("user-level call %d %s %v %v", i, c.fn, c.args, c.filters)
		seed := uint64(300 + i)
		want, err := callTab(t, f.snap, "people", seed, c)
		if err != nil {
			t.Fatalf("%s on the snapshot: %v", what, err)
		}
		got, err := callTab(t, f.live, "people", seed, c)
		if err != nil {
			t.Fatalf("%s on ClickHouse: %v", what, err)
		}
		sameRelease(t, what, got, want)
	}
}

// ClickHouse declares no unique columns, so --order may have ties: the
// bounded statement breaks them by the rows' values, so what each user
// keeps is a function of its own rows. The same rows with an order of
// many ties (id / 800: four values), stored in two different ways (other
// shards, other insertion orders, other parts), give the same releases.
func TestUserLevelOrderTies(t *testing.T) {
	srv := chtest.Start(t)
	lines := strings.Split(strings.TrimSuffix(withUsers(peopleCSV(3000)), "\n"), "\n")
	srv.Exec(t, "CREATE DATABASE db", "")
	for _, db := range []string{"shard1", "shard2"} {
		srv.Exec(t, "CREATE DATABASE "+db, "")
	}
	// layouts: which shard a row goes to, and whether a shard's rows
	// are inserted in reverse, in parts of 100.
	layouts := []struct {
		table   string
		shardOf func(i int) int
		reverse bool
	}{
		{"a", func(i int) int { return i % 2 }, false},
		{"b", func(i int) int { return (i / 7) % 2 }, true},
	}
	for _, l := range layouts {
		shards := [2][]string{}
		for i, line := range lines[1:] {
			shards[l.shardOf(i)] = append(shards[l.shardOf(i)], line)
		}
		for s, db := range []string{"shard1", "shard2"} {
			rows := shards[s]
			if l.reverse {
				for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
					rows[i], rows[j] = rows[j], rows[i]
				}
			}
			srv.Exec(t, "CREATE TABLE "+db+"."+l.table+" "+userColumns+" ENGINE = MergeTree ORDER BY tuple()", "")
			for k := 0; k < len(rows); k += 100 {
				part := rows[k:min(k+100, len(rows))]
				srv.Exec(t, "INSERT INTO "+db+"."+l.table+" FORMAT CSV", strings.Join(part, "\n")+"\n")
			}
		}
		srv.Exec(t, "CREATE TABLE db."+l.table+"_d "+userColumns+" ENGINE = Distributed(two, '', "+l.table+")", "")
		// The order column with ties.
		srv.Exec(t, "CREATE VIEW db."+l.table+" AS SELECT intDiv(id, 800) AS id, uid, region, sex, age, income, hours FROM db."+l.table+"_d", "")
	}
	var stores []*ledger.Store
	for _, l := range layouts {
		ref, cols, _, err := chsource.Describe(context.Background(), srv.URL("analyst"), chtest.AnalystPassword, "db."+l.table, categories, "uid", "id")
		if err != nil {
			t.Fatal(err)
		}
		st := testfix.Store(t, t.TempDir())
		if _, err := st.Register(context.Background(), ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 50, Delta: 1e-4}, Accountant: accounting.ModeZCDP, Neighbour: accounting.ReplaceOne, Bounds: bounds,
			Engine: ref, EngineColumns: cols, EngineSecret: chtest.AnalystPassword}); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
	}
	for i, q := range []map[string]any{
		{"query": "SELECT region, COUNT(*) AS n, SUM(income) AS s, AVG(hours, 0, 60) AS h FROM people GROUP BY region", "eps": 1.0, "max_groups": 2, "max_rows": 2},
		{"query": "SELECT COUNT(*) AS n, SUM(hours, 0, 60) AS s, MEDIAN(age) AS m FROM people", "eps": 1.0, "max_rows": 3},
	} {
		a, err := call(t, stores[0], uint64(50+i), q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on layout a: %v", i, err)
		}
		b, err := call(t, stores[1], uint64(50+i), q, nil, nil)
		if err != nil {
			t.Fatalf("query %d on layout b: %v", i, err)
		}
		sameRelease(t, fmt.Sprintf("query %d with ties", i), b, a)
	}
}

// Registration of user-level data reads the catalog only and refuses a
// user or order column the table lacks and an order column whose values
// are not integers, dates or times without NULL.
func TestDescribeUserLevel(t *testing.T) {
	srv := chtest.Start(t)
	srv.Exec(t, "CREATE DATABASE db", "")
	srv.Exec(t, "CREATE TABLE db.t (id UInt64, f Float64, n Nullable(Int64), s String, uid String, x Float64) ENGINE = MergeTree ORDER BY id", "")
	describe := func(user, order string) (*ledger.EngineRef, ledger.EngineColumns, error) {
		ref, cols, _, err := chsource.Describe(context.Background(), srv.URL("analyst"), chtest.AnalystPassword, "db.t", nil, user, order)
		return ref, cols, err
	}
	ref, cols, err := describe("uid", "id")
	if err != nil {
		t.Fatal(err)
	}
	if ref.Order != "id" || ref.Types["id"] != "UInt64" || cols.User != "uid" || ref.Types["uid"] != "String" {
		t.Errorf("registered %+v, %+v", ref, cols)
	}
	for _, c := range []struct{ user, order, want string }{
		{"uid", "nope", `no column "nope"`},
		{"nope", "id", `no column "nope"`},
		{"uid", "f", "Float64"},
		{"uid", "n", "Nullable(Int64)"},
		{"uid", "s", "String"},
	} {
		if _, _, err := describe(c.user, c.order); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--unit user:%s --order %s: %v, want an error saying %q", c.user, c.order, err, c.want)
		}
	}
	// Nothing but the catalog was read.
	srv.Exec(t, "SYSTEM FLUSH LOGS", "")
	if n := srv.Query(t, "SELECT count() FROM system.query_log WHERE user = 'analyst' AND type = 2 AND query NOT LIKE '%system.columns%'"); n != "0" {
		t.Errorf("registration sent %s statements besides the catalog's", n)
	}
}
