package pgsource_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// BenchmarkScale gives the scale figures of issue 30 on PostgreSQL: a
// generated table of PGSCALE_ROWS rows (default 10⁶; a comma-separated
// list runs each size) in a throwaway server, one grouped private_sql
// query and one Analyze Gauss pass, each beside PostgreSQL's own
// non-private aggregate of the same shape (the same grouping with plain
// count, sum and avg; for gauss the plain sums of products) in the same
// run. It reports the medians of PGSCALE_RUNS runs (default 3, the runs
// of the two interleaved), their ratio and the rows that come back to
// privnotes per call, which must not grow with the table:
//
//	GOFLAGS=-tags=duckdb_arrow,integration go test -run '^$' -bench BenchmarkScale -benchtime 1x ./dsl/pgsource
//
// It is a benchmark, not a test: the times are figures for
// docs/deployment.md, and only the rows transferred are checked.
func BenchmarkScale(b *testing.B) {
	sizes := []int{1_000_000}
	if s := os.Getenv("PGSCALE_ROWS"); s != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("PGSCALE_ROWS=%q: give row counts", s)
			}
			sizes = append(sizes, n)
		}
	}
	runs := 3
	if s := os.Getenv("PGSCALE_RUNS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			runs = n
		}
	}
	srv := startServer(b)
	srv.exec(b, `CREATE ROLE analyst LOGIN PASSWORD '`+analystPassword+`'`)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			for range b.N {
				scaleOnce(b, srv, n, runs)
			}
		})
	}
}

// scaleOnce loads a table of n rows and measures both workloads.
func scaleOnce(b *testing.B, srv *server, n, runs int) {
	table := fmt.Sprintf("people%d", n)
	start := time.Now()
	srv.exec(b, `DROP TABLE IF EXISTS `+table)
	srv.exec(b, `CREATE TABLE `+table+` (region text, sex text, age integer, income bigint, hours double precision)`)
	// The rows are generated in the server (no transfer), with the
	// values of peopleCSV.
	srv.exec(b, `INSERT INTO `+table+` SELECT (ARRAY['north','south','east','west','mars'])[1 + (i*7) % 5], (ARRAY['f','m'])[1 + (i/3) % 2],
		(i*37) % 100, (i*7919) % 180000, ((i*13) % 420) / 7.0 FROM generate_series(0, $1::bigint - 1) AS i`, n)
	srv.exec(b, `VACUUM ANALYZE `+table)
	srv.exec(b, `GRANT SELECT ON `+table+` TO analyst`)
	b.Logf("rows=%d: loaded in %s", n, time.Since(start).Round(time.Millisecond))

	st := testfix.Store(b, b.TempDir())
	ref, cols, _, err := pgsource.Describe(context.Background(), srv.url("analyst"), analystPassword, "public."+table, categories, "", "")
	if err != nil {
		b.Fatal(err)
	}
	reg := ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 1e4, Delta: 0.5}, Accountant: accounting.ModeZCDP,
		Neighbour: accounting.AddRemove, Bounds: bounds, Engine: ref, EngineColumns: cols, EngineSecret: analystPassword, Source: "postgres"}
	if _, err := st.Register(context.Background(), reg); err != nil {
		b.Fatal(err)
	}
	conn := plainConn(b, srv)
	defer conn.Close(context.Background())

	workloads := []struct {
		name  string
		fn    *catalog.Func
		given map[string]any
		plain string
	}{
		{"sql-grouped", catalog.PrivateSQL,
			map[string]any{"query": "SELECT region, sex, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a FROM people GROUP BY region, sex", "eps": 1.0},
			"SELECT region, sex, count(*), sum(income), avg(age) FROM " + table + " GROUP BY region, sex"},
		{"gauss", catalog.PrivatePCA,
			map[string]any{"k": 2, "eps": 1.0, "delta": 1e-6, "method": "gauss", "clip": 1e5},
			"SELECT sum(age::float8*age), sum(age::float8*income), sum(age*hours), sum(income::float8*income), sum(income*hours), sum(hours*hours) FROM " + table},
	}
	// The gauss statement alone, as privnotes sends it: the engine's share
	// of a private call (the rest is the catalog check, the charge in the
	// ledger and the sessions).
	sc, err := st.Schema("people")
	if err != nil {
		b.Fatal(err)
	}
	live, err := pgsource.Open(context.Background(), *ref, sc, st.EngineSecretPath("people"))
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := sqlplan.PrintMoments(sqlplan.Moments{Columns: sc.Columns, Bounds: sc.Bounds, Clip: 1e5}, live.Dialect(), live.Table())
	live.Close()
	if err != nil {
		b.Fatal(err)
	}
	var alone []time.Duration
	for range runs {
		t0 := time.Now()
		if _, err := plainRows(conn, stmt); err != nil {
			b.Fatal(err)
		}
		alone = append(alone, time.Since(t0))
	}
	b.Logf("rows=%d gauss statement alone %8s", n, median(alone).Round(time.Millisecond))
	b.ReportMetric(median(alone).Seconds(), "gauss-statement-s")

	for _, w := range workloads {
		var priv, plain []time.Duration
		var got, gotPlain int
		for r := range runs {
			counted := &rowCount{}
			t0 := time.Now()
			if _, err := execCounted(st, w.fn, w.given, uint64(r), counted); err != nil {
				b.Fatalf("%s: %v", w.name, err)
			}
			priv = append(priv, time.Since(t0))
			got = counted.rows

			t0 = time.Now()
			k, err := plainRows(conn, w.plain)
			if err != nil {
				b.Fatalf("%s plain: %v", w.name, err)
			}
			plain = append(plain, time.Since(t0))
			gotPlain = k
		}
		mp, mq := median(priv), median(plain)
		ratio := float64(mp) / float64(mq)
		b.Logf("rows=%d %-11s private %8s  PostgreSQL %8s  ratio %.2f  rows back: private %d, plain %d", n, w.name,
			mp.Round(time.Millisecond), mq.Round(time.Millisecond), ratio, got, gotPlain)
		b.ReportMetric(ratio, w.name+"-ratio")
		b.ReportMetric(mp.Seconds(), w.name+"-private-s")
		b.ReportMetric(mq.Seconds(), w.name+"-plain-s")
		b.ReportMetric(float64(got), w.name+"-rows/call")
		// O(groups), not O(n): one row per group of the query's key
		// domain (4 regions and NULL × 2 sexes), one row for gauss.
		if got < 1 || got > 10 {
			b.Errorf("%s: %d rows came back to privnotes", w.name, got)
		}
	}
	srv.exec(b, `DROP TABLE `+table)
}

// rowCount counts the rows the engine's statements return.
type rowCount struct{ rows int }

// counting is an engine source whose Query counts its result's rows.
type counting struct {
	release.EngineSource
	c *rowCount
}

func (s counting) Query(ctx context.Context, stmt string) ([][]any, error) {
	out, err := s.EngineSource.Query(ctx, stmt)
	s.c.rows += len(out)
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

func plainConn(b *testing.B, srv *server) *pgx.Conn {
	cfg, err := pgx.ParseConfig(srv.url("analyst"))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Password = analystPassword
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return conn
}

// plainRows runs q and reads every row, returning how many.
func plainRows(conn *pgx.Conn, q string) (int, error) {
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	k := 0
	for rows.Next() {
		if _, err := rows.Values(); err != nil {
			return 0, err
		}
		k++
	}
	return k, rows.Err()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
