package chsource_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/chsource"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/chtest"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// BenchmarkScale gives the scale figures of issue 30 on ClickHouse, in
// the shape of dsl/pgsource's: a generated table of CHSCALE_ROWS rows
// (default 10⁶; a comma-separated list runs each size) split over the
// two shards of a Distributed table in a throwaway server, one grouped
// private_sql query and one Analyze Gauss pass, each beside ClickHouse's
// own plain aggregate of the same shape on the same Distributed table;
// the medians of CHSCALE_RUNS runs (default 3), their ratio, the rows
// that come back to privnotes per call and the rows the shards sent to
// the initiator (shardRows):
//
//	GOFLAGS=-tags=duckdb_arrow,integration go test -run '^$' -bench BenchmarkScale -benchtime 1x ./dsl/chsource
func BenchmarkScale(b *testing.B) {
	sizes := []int{1_000_000}
	if s := os.Getenv("CHSCALE_ROWS"); s != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("CHSCALE_ROWS=%q: give row counts", s)
			}
			sizes = append(sizes, n)
		}
	}
	runs := 3
	if s := os.Getenv("CHSCALE_RUNS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			runs = n
		}
	}
	srv := chtest.Start(b)
	srv.Exec(b, "CREATE DATABASE db", "")
	for _, db := range []string{"shard1", "shard2"} {
		srv.Exec(b, "CREATE DATABASE "+db, "")
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			for range b.N {
				chScaleOnce(b, srv, n, runs)
			}
		})
	}
}

// chScaleOnce loads a table of n rows and measures both workloads.
func chScaleOnce(b *testing.B, srv *chtest.Server, n, runs int) {
	table := fmt.Sprintf("people%d", n)
	start := time.Now()
	// The rows are generated in the server, the values of dsl/pgsource's
	// benchmark, alternating between the shards.
	for i, db := range []string{"shard1", "shard2"} {
		srv.Exec(b, "DROP TABLE IF EXISTS "+db+"."+table, "")
		srv.Exec(b, "CREATE TABLE "+db+"."+table+" "+peopleColumns+" ENGINE = MergeTree ORDER BY tuple()", "")
		srv.Exec(b, fmt.Sprintf(`INSERT INTO %s.%s SELECT ['north','south','east','west','mars'][1 + (number*7) %% 5], ['f','m'][1 + intDiv(number, 3) %% 2],
			toInt32((number*37) %% 100), toInt64((number*7919) %% 180000), ((number*13) %% 420) / 7.0 FROM numbers(%d) WHERE number %% 2 = %d`, db, table, n, i), "")
	}
	srv.Exec(b, "DROP TABLE IF EXISTS db."+table, "")
	srv.Exec(b, "CREATE TABLE db."+table+" "+peopleColumns+" ENGINE = Distributed(two, '', "+table+")", "")
	b.Logf("rows=%d: loaded in %s", n, time.Since(start).Round(time.Millisecond))

	st := testfix.Store(b, b.TempDir())
	ref, cols, _, err := chsource.Describe(context.Background(), srv.URL("analyst"), chtest.AnalystPassword, "db."+table, categories, "", "")
	if err != nil {
		b.Fatal(err)
	}
	reg := ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 1e4, Delta: 0.5}, Accountant: accounting.ModeZCDP,
		Neighbour: accounting.AddRemove, Bounds: bounds, Engine: ref, EngineColumns: cols, EngineSecret: chtest.AnalystPassword, Source: "clickhouse"}
	if _, err := st.Register(context.Background(), reg); err != nil {
		b.Fatal(err)
	}
	// The gauss statement alone, as privnotes sends it: the engine's share
	// of a private call. The call itself would release noise alone if the
	// statement failed (the engine's error is never shown), so it is run
	// here first and must succeed.
	sc, err := st.Schema("people")
	if err != nil {
		b.Fatal(err)
	}
	live, err := chsource.Open(context.Background(), *ref, sc, st.EngineSecretPath("people"))
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := sqlplan.PrintMoments(sqlplan.Moments{Columns: sc.Columns, Bounds: sc.Bounds, Clip: 1e5}, live.Dialect(), live.Table())
	if err != nil {
		b.Fatal(err)
	}
	var alone []time.Duration
	for range runs {
		t0 := time.Now()
		if _, err := live.Query(context.Background(), stmt); err != nil {
			srv.Query(b, stmt) // fails with the server's message
			b.Fatalf("the gauss statement: %v", err)
		}
		alone = append(alone, time.Since(t0))
	}
	live.Close()
	b.Logf("rows=%d gauss statement alone %8s", n, median(alone).Round(time.Millisecond))
	b.ReportMetric(median(alone).Seconds(), "gauss-statement-s")

	workloads := []struct {
		name  string
		fn    *catalog.Func
		given map[string]any
		plain string
	}{
		{"sql-grouped", catalog.PrivateSQL,
			map[string]any{"query": "SELECT region, sex, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a FROM people GROUP BY region, sex", "eps": 1.0},
			"SELECT region, sex, count(), sum(income), avg(age) FROM db." + table + " GROUP BY region, sex"},
		{"gauss", catalog.PrivatePCA,
			map[string]any{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "gauss", "clip": 1e5},
			"SELECT sum(age*age), sum(age*income), sum(age*hours), sum(income*income), sum(income*hours), sum(hours*hours) FROM db." + table},
	}
	for _, w := range workloads {
		var priv, plain []time.Duration
		var got, gotPlain, sent int // sent: the rows the shards sent to the initiator
		var last string
		for r := range runs {
			counted := &rowCount{}
			var err error
			var took time.Duration
			sq := shardRows(b, srv, func() {
				t0 := time.Now()
				_, err = execCounted(st, w.fn, w.given, uint64(r), counted)
				took = time.Since(t0)
			})
			if err != nil {
				b.Fatalf("%s: %v", w.name, err)
			}
			priv = append(priv, took)
			got, last = counted.rows, counted.last
			sent = 0
			for _, q := range sq {
				sent += q.sent
			}

			t0 := time.Now()
			out := srv.Query(b, w.plain)
			plain = append(plain, time.Since(t0))
			gotPlain = len(strings.Split(out, "\n")) // no final newline
		}
		// The call's last statement alone, as the superuser: the engine's
		// share of the call, the rest being privnotes' (the catalog check,
		// the ledger's charge, the noise).
		var stmtAlone []time.Duration
		for range runs {
			t0 := time.Now()
			srv.Query(b, last)
			stmtAlone = append(stmtAlone, time.Since(t0))
		}
		mp, mq, ms := median(priv), median(plain), median(stmtAlone)
		ratio := float64(mp) / float64(mq)
		b.Logf("rows=%d %-11s private %8s (its statement alone %8s, %d bytes)  ClickHouse %8s  ratio %.2f  rows back: private %d, plain %d; the shards sent %d", n, w.name,
			mp.Round(time.Millisecond), ms.Round(time.Millisecond), len(last), mq.Round(time.Millisecond), ratio, got, gotPlain, sent)
		b.ReportMetric(float64(sent), w.name+"-shard-rows/call")
		b.ReportMetric(float64(ms)/float64(mq), w.name+"-statement-ratio")
		b.ReportMetric(ratio, w.name+"-ratio")
		b.ReportMetric(mp.Seconds(), w.name+"-private-s")
		b.ReportMetric(mq.Seconds(), w.name+"-plain-s")
		b.ReportMetric(float64(got), w.name+"-rows/call")
		// O(groups), not O(n): one row per group of the key domain.
		if got < 1 || got > 10 {
			b.Errorf("%s: %d rows came back to privnotes", w.name, got)
		}
		if w.name == "sql-grouped" && sent > 2*10 {
			b.Errorf("%s: the shards sent %d rows to the initiator, not their groups' partial aggregates", w.name, sent)
		}
	}
	for _, db := range []string{"db", "shard1", "shard2"} {
		srv.Exec(b, "DROP TABLE "+db+"."+table, "")
	}
}

// rowCount counts the rows the engine's statements return, and keeps the
// last statement.
type rowCount struct {
	rows int
	last string
}

// counting is an engine source whose Query counts its result's rows.
type counting struct {
	release.EngineSource
	c *rowCount
}

func (s counting) Query(ctx context.Context, stmt string) ([][]any, error) {
	out, err := s.EngineSource.Query(ctx, stmt)
	s.c.rows += len(out)
	s.c.last = stmt
	return out, err
}

// execCounted runs fn on store's "people" through the execution core,
// counting the rows its statements return.
func execCounted(st *ledger.Store, fn *catalog.Func, given map[string]any, seed uint64, c *rowCount) (*release.Release, error) {
	env := &release.Local{
		Store:      func() (*ledger.Store, error) { return st, nil },
		NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) },
		Wrap: func() release.RunWrapper {
			return func(run func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error) {
				return func(ctx context.Context, d *release.Data) (any, error) {
					if es, ok := d.SQL.(release.EngineSource); ok {
						d.SQL = counting{es, c}
					}
					return run(ctx, d)
				}
			}
		},
	}
	args, err := release.ArgsFor(fn.Name, given)
	if err != nil {
		return nil, err
	}
	sc, err := st.Schema("people")
	if err != nil {
		return nil, err
	}
	return env.Execute(context.Background(), release.Call{Func: fn.Name, Dataset: release.Ref{Name: "people", Schema: sc}, Args: args}, nil)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
