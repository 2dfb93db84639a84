package chsource_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/chsource"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/chtest"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// BenchmarkUserLevel measures the bounded statement on ClickHouse (arrays
// on the initiator, sqlplan.ClickHouse's BoundedRows): a Distributed
// table of CHUSER_ROWS rows (default 10⁶) over two shards, 10⁴ users each
// with rows on both shards, one grouped private_sql query with
// max_groups=2, max_rows=5, beside the same query on the same table
// registered row-level (aggregated on the shards) and ClickHouse's plain
// GROUP BY; the medians of 3 runs, the rows back to privnotes and the
// rows the shards sent to the initiator:
//
//	GOFLAGS=-tags=duckdb_arrow,integration go test -run '^$' -bench BenchmarkUserLevel -benchtime 1x ./dsl/chsource
func BenchmarkUserLevel(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("CHUSER_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("CHUSER_ROWS=%q: give a row count", s)
		}
		n = v
	}
	srv := chtest.Start(b)
	srv.Exec(b, "CREATE DATABASE db", "")
	for i, db := range []string{"shard1", "shard2"} {
		srv.Exec(b, "CREATE DATABASE "+db, "")
		srv.Exec(b, "CREATE TABLE "+db+".people "+userColumns+" ENGINE = MergeTree ORDER BY tuple()", "")
		// Runs of 1000 rows alternate between the shards; user
		// (number·31) mod 10⁴ has a row every 10⁴ rows, so on both.
		srv.Exec(b, fmt.Sprintf(`INSERT INTO %s.people SELECT toInt64(number), concat('u', toString((number*31) %% 10000)),
			['north','south','east','west','mars'][1 + (number*7) %% 5], ['f','m'][1 + intDiv(number, 3) %% 2],
			toInt32((number*37) %% 100), toInt64((number*7919) %% 180000), ((number*13) %% 420) / 7.0 FROM numbers(%d) WHERE intDiv(number, 1000) %% 2 = %d`, db, n, i), "")
	}
	srv.Exec(b, "CREATE TABLE db.people "+userColumns+" ENGINE = Distributed(two, '', people)", "")
	stores := map[string]*ledger.Store{}
	for _, unit := range []string{"row", "user"} {
		user, order, nb := "", "", accounting.AddRemove
		if unit == "user" {
			user, order, nb = "uid", "id", accounting.ReplaceOne
		}
		ref, cols, _, err := chsource.Describe(context.Background(), srv.URL("analyst"), chtest.AnalystPassword, "db.people", categories, user, order)
		if err != nil {
			b.Fatal(err)
		}
		st := testfix.Store(b, b.TempDir())
		if _, err := st.Register(context.Background(), ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 1e4, Delta: 0.5}, Accountant: accounting.ModeZCDP,
			Neighbour: nb, Bounds: bounds, Engine: ref, EngineColumns: cols, EngineSecret: chtest.AnalystPassword, Source: "clickhouse"}); err != nil {
			b.Fatal(err)
		}
		stores[unit] = st
	}
	query := "SELECT region, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a FROM people GROUP BY region"
	plain := "SELECT region, count(), sum(income), avg(age) FROM db.people GROUP BY region"
	var plainTimes []time.Duration
	for range 3 {
		t0 := time.Now()
		srv.Query(b, plain)
		plainTimes = append(plainTimes, time.Since(t0))
	}
	mq := median(plainTimes)
	for _, unit := range []string{"row", "user"} {
		given := map[string]any{"query": query, "eps": 1.0}
		if unit == "user" {
			given["max_groups"], given["max_rows"] = 2, 5
		}
		var times []time.Duration
		var back, sent int
		for r := range 3 {
			counted := &rowCount{}
			var err error
			var took time.Duration
			sq := shardRows(b, srv, func() {
				t0 := time.Now()
				_, err = execCounted(stores[unit], catalog.PrivateSQL, given, uint64(r), counted)
				took = time.Since(t0)
			})
			if err != nil {
				b.Fatalf("%s-level: %v", unit, err)
			}
			times = append(times, took)
			back, sent = counted.rows, 0
			for _, q := range sq {
				sent += q.sent
			}
		}
		mp := median(times)
		b.Logf("rows=%d %s-level private %8s  ClickHouse plain %8s  ratio %.2f  rows back %d; the shards sent %d",
			n, unit, mp.Round(time.Millisecond), mq.Round(time.Millisecond), float64(mp)/float64(mq), back, sent)
		b.ReportMetric(mp.Seconds(), unit+"-private-s")
		b.ReportMetric(float64(sent), unit+"-shard-rows/call")
		if back < 1 || back > 5 {
			b.Errorf("%s-level: %d rows came back to privnotes", unit, back)
		}
	}
	b.ReportMetric(mq.Seconds(), "plain-s")
}
