package benchrun

// The snapshot workload of `privnotes bench` (issue 27): the whole path of
// a private call on a registered snapshot, as a cell reaches it (plan,
// ledger charge, opening the data, the mechanism's pass), against DuckDB's
// own equivalent query over the same Parquet file in the same process:
//
//	register   `privnotes dataset add --from people.csv` (the command itself)
//	           against DuckDB's CSV→Parquet COPY of the same file
//	count      private_count, unfiltered, against SELECT count(*)
//	sum        private_sum of income against DuckDB's clamped sum
//	by-count   private_count by= region against GROUP BY region count(*)
//	by-sum     private_sum of income by= region against DuckDB's grouped
//	           clamped sum
//	sql-by-sum-avg
//	           private_sql of a SUM and an AVG of income (clamped in the
//	           query) GROUP BY region, against DuckDB's grouped clamped
//	           sum and avg
//	sql-count  private_sql of an unfiltered COUNT(*) against count(*)
//	small      200 private_sum calls of age on a 10⁵-row dataset, per call,
//	           against DuckDB's clamped sum of the same file, per query
//
// The gap of the small calls (engine − floor, per call) is the fixed cost
// of a call. The figures are medians over --seeds repetitions (200 calls
// for small), after the process's first call on the dataset, which also
// verifies the snapshot's hash and opens its reader and is reported on
// its own ("first call", with the step it ran). Like the tabular workload it needs the data engine, and it
// registers through the binary's own command (Options.Dispatch), so the
// registration timed is the owner's.

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/bench"
)

const snapshotWorkload = "snapshot"

// smallCalls and smallRows are the small calls' number and dataset size
// (tests lower them).
var (
	smallCalls = 200
	smallRows  = 100_000
)

func init() {
	bench.Register(bench.Workload{
		Name: snapshotWorkload,
		Summary: "private calls through the executor on a registered snapshot vs DuckDB's equivalent query on the same file: " +
			"register (vs CSV→Parquet COPY), count, sum, grouped count and sum, private_sql grouped SUM+AVG and COUNT(*) at n=1e6 (quick 1e5), and 200 small sums on 1e5 rows",
		Run: runSnapshotBench,
	})
	benchReports[snapshotWorkload] = printSnapshotReport
}

// dispatchCmd runs a privnotes command line (Options.Dispatch); the
// snapshot workload registers its datasets through it.
var dispatchCmd func(args []string, stdout, stderr io.Writer) int

func runSnapshotBench(ctx context.Context, cfg bench.Config) (out []bench.Row, err error) {
	if dispatchCmd == nil {
		return nil, fmt.Errorf("the snapshot workload registers datasets with the privnotes command, which this caller did not give")
	}
	n, reps := 1_000_000, 3
	if cfg.Quick {
		n = 100_000
	}
	if cfg.N > 0 {
		n = cfg.N
	}
	if cfg.Seeds > 0 {
		reps = cfg.Seeds
	}
	tmp, err := os.MkdirTemp("", "pn-bench-snapshot-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()
	db, conn, err := openFloorDB(ctx, tmp)
	if err != nil {
		return nil, fmt.Errorf("starting DuckDB: %w", err)
	}
	defer db.Close()
	defer conn.Close()
	b := &snapBench{ctx: ctx, cfg: cfg, n: n, tmp: tmp, floor: func(q string) error {
		rs, err := conn.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() { // the result, read as a client would
		}
		return rs.Err()
	}}

	big := filepath.Join(tmp, "people.csv")
	if _, err := writeTabularCSV(big, n, tabDataSeed); err != nil {
		return nil, fmt.Errorf("generating the table: %w", err)
	}
	var state, snap string
	for rep := range reps {
		dir := filepath.Join(tmp, fmt.Sprintf("state-%d", rep))
		var path string
		secs, cpu, err := timed(func() (err error) {
			path, err = b.register(dir, "people", big)
			return err
		})
		if err != nil {
			return b.rows, err
		}
		if b.cfg.WantMethod("register") {
			b.add("register", sideEngine, n, secs, cpu)
			pq := filepath.Join(tmp, fmt.Sprintf("copy-%d.parquet", rep))
			secs, cpu, err = timed(func() error {
				return b.floor("COPY (SELECT * FROM read_csv(" + quoteSQL(big) + ")) TO " + quoteSQL(pq) + " (FORMAT parquet)")
			})
			if err != nil {
				return b.rows, fmt.Errorf("DuckDB floor of register: %w", err)
			}
			b.add("register", sideFloor, n, secs, cpu)
			os.Remove(pq)
		}
		if rep == 0 {
			state, snap = dir, path // the calls read the first registration
		} else if err := os.RemoveAll(dir); err != nil {
			return b.rows, err
		}
	}

	st, err := ledger.Open(state)
	if err != nil {
		return b.rows, err
	}
	defer st.Close()
	exec := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }}
	ref, err := refOf(st, "people")
	if err != nil {
		return b.rows, err
	}
	p := quoteSQL(snap)
	steps := []struct {
		method, fn string
		kw         map[string]any
		floor      string
	}{
		{"count", catalog.PrivateCount.Name, map[string]any{"eps": 1.0}, "SELECT count(*) FROM read_parquet(" + p + ")"},
		{"sum", catalog.PrivateSum.Name, map[string]any{"eps": 1.0, "col": "income"},
			fmt.Sprintf("SELECT sum(least(greatest(income, %g), %g)) FROM read_parquet(%s)", tabIncomeBounds[0], tabIncomeBounds[1], p)},
		{"by-count", catalog.PrivateCount.Name, map[string]any{"eps": 1.0, "by": "region"},
			"SELECT region, count(*) FROM read_parquet(" + p + ") GROUP BY region"},
		{"by-sum", catalog.PrivateSum.Name, map[string]any{"eps": 1.0, "col": "income", "by": "region"},
			fmt.Sprintf("SELECT region, sum(least(greatest(income, %g), %g)) FROM read_parquet(%s) GROUP BY region", tabIncomeBounds[0], tabIncomeBounds[1], p)},
		// private_sql's queries name their clamping bounds, as an analyst
		// would; the floors clamp the same way in DuckDB's own SQL.
		{"sql-by-sum-avg", catalog.PrivateSQL.Name, map[string]any{"eps": 1.0, "query": fmt.Sprintf(
			"SELECT region, SUM(income, %g, %g) AS s, AVG(income, %g, %g) AS a FROM people GROUP BY region",
			tabIncomeBounds[0], tabIncomeBounds[1], tabIncomeBounds[0], tabIncomeBounds[1])},
			fmt.Sprintf("SELECT region, sum(c), avg(c) FROM (SELECT region, least(greatest(income, %g), %g) AS c FROM read_parquet(%s)) GROUP BY region",
				tabIncomeBounds[0], tabIncomeBounds[1], p)},
		{"sql-count", catalog.PrivateSQL.Name, map[string]any{"eps": 1.0, "query": "SELECT COUNT(*) AS n FROM people"},
			"SELECT count(*) FROM read_parquet(" + p + ")"},
	}
	cold := true
	for _, step := range steps {
		if !b.cfg.WantMethod(step.method) {
			continue
		}
		call := benchCall(step.fn, step.kw)
		call.Dataset = ref
		// The process's first call on the dataset also verifies the
		// snapshot's hash (once per process and file) and opens its
		// reader (kept open after): it is timed on its own, as "first
		// call", so that the steps' medians are the calls that follow.
		first := 0
		if cold {
			first, cold = -1, false
		}
		for rep := first; rep < reps; rep++ {
			method := step.method
			if rep < 0 {
				method = "first call"
			}
			if err := ctx.Err(); err != nil {
				return b.rows, err
			}
			secs, cpu, err := timed(func() error { _, err := exec.Execute(ctx, call, nil); return err })
			if err != nil {
				return b.rows, fmt.Errorf("%s: %w", step.method, err)
			}
			b.add(method, sideEngine, n, secs, cpu)
			secs, cpu, err = timed(func() error { return b.floor(step.floor) })
			if err != nil {
				return b.rows, fmt.Errorf("DuckDB floor of %s: %w", step.method, err)
			}
			b.add(method, sideFloor, n, secs, cpu)
		}
	}
	if b.cfg.WantMethod("small") {
		if err := b.small(ctx); err != nil {
			return b.rows, err
		}
	}
	return b.rows, nil
}

// timed runs f once after a GC and returns its wall and process CPU
// seconds (all threads, DuckDB's included: the engine and its floor run
// in this one process, one after the other).
func timed(f func() error) (wall, cpu float64, err error) {
	runtime.GC()
	c0, t0 := processCPU(), time.Now()
	err = f()
	return max(time.Since(t0).Seconds(), 1e-9), processCPU() - c0, err
}

// snapBench is one run's state.
type snapBench struct {
	ctx   context.Context
	cfg   bench.Config
	n     int
	tmp   string
	floor func(q string) error // runs a query in the floors' DuckDB
	rows  []bench.Row
}

func (b *snapBench) add(method, side string, n int, secs, cpu float64) {
	b.rows = append(b.rows, bench.Row{Workload: snapshotWorkload, Method: method, N: n, D: 3, Seconds: secs,
		Extra: map[string]any{"setting": side, "side": side, "metric": "none (always 0)", "cpu_s": cpu}})
}

// register runs the owner's `dataset add --from` into the state directory
// dir and returns the snapshot's path.
func (b *snapBench) register(dir, name, csv string) (string, error) {
	var stderr strings.Builder
	args := []string{"dataset", "add", name, "--from", csv, "--state", dir, "--eps", "1000", "--delta", "1e-5",
		"--bounds", fmt.Sprintf("age=%g:%g,income=%g:%g", tabAgeBounds[0], tabAgeBounds[1], tabIncomeBounds[0], tabIncomeBounds[1]),
		"--categories", "region=" + strings.Join(tabRegions, ",")}
	if code := dispatchCmd(args, io.Discard, &stderr); code != 0 {
		return "", fmt.Errorf("dataset add exited %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	st, err := ledger.Open(dir)
	if err != nil {
		return "", err
	}
	defer st.Close()
	path, _, ok, err := st.Snapshot(name)
	if err != nil || !ok {
		return "", fmt.Errorf("dataset %s has no snapshot (%v)", name, err)
	}
	return path, nil
}

// refOf is the call's reference to a registered dataset.
func refOf(st *ledger.Store, name string) (release.Ref, error) {
	sc, err := st.Schema(name)
	if err != nil {
		return release.Ref{}, err
	}
	return release.Ref{Name: name, Schema: sc}, nil
}

// small times smallCalls private sums on a dataset of smallRows rows, one
// by one, each against DuckDB's clamped sum of the same file.
func (b *snapBench) small(ctx context.Context) error {
	csv := filepath.Join(b.tmp, "small.csv")
	if _, err := writeTabularCSV(csv, smallRows, tabDataSeed+1); err != nil {
		return err
	}
	dir := filepath.Join(b.tmp, "state-small")
	snap, err := b.register(dir, "small", csv)
	if err != nil {
		return err
	}
	st, err := ledger.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	exec := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }}
	ref, err := refOf(st, "small")
	if err != nil {
		return err
	}
	call := benchCall(catalog.PrivateSum.Name, map[string]any{"eps": 1.0, "col": "age"})
	call.Dataset = ref
	q := fmt.Sprintf("SELECT sum(least(greatest(age, %g), %g)) FROM read_parquet(%s)", tabAgeBounds[0], tabAgeBounds[1], quoteSQL(snap))
	for range smallCalls {
		if err := ctx.Err(); err != nil {
			return err
		}
		secs, cpu, err := timed(func() error { _, err := exec.Execute(ctx, call, nil); return err })
		if err != nil {
			return fmt.Errorf("small: %w", err)
		}
		b.add("small", sideEngine, smallRows, secs, cpu)
		secs, cpu, err = timed(func() error { return b.floor(q) })
		if err != nil {
			return fmt.Errorf("DuckDB floor of small: %w", err)
		}
		b.add("small", sideFloor, smallRows, secs, cpu)
	}
	return nil
}

// printSnapshotReport prints per step the engine's and DuckDB's median
// seconds and their ratio; for the small calls also the fixed cost of a
// call (the difference of the medians).
func printSnapshotReport(w io.Writer, all []bench.Row) {
	type key struct {
		method string
		n      int
	}
	var order []key
	secs := map[key]map[string][]float64{}
	cpus := map[key]map[string][]float64{}
	for _, r := range all {
		if r.Workload != snapshotWorkload {
			continue
		}
		side, _ := r.Extra["side"].(string)
		k := key{r.Method, r.N}
		if secs[k] == nil {
			secs[k], cpus[k] = map[string][]float64{}, map[string][]float64{}
			order = append(order, k)
		}
		secs[k][side] = append(secs[k][side], r.Seconds)
		cpu, _ := r.Extra["cpu_s"].(float64)
		cpus[k][side] = append(cpus[k][side], cpu)
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: a private call through the executor against DuckDB's own query on the same file, medians per call;\n", snapshotWorkload)
	fmt.Fprintln(w, "CPU is the process's (user + system, DuckDB's threads included)")
	ratio := func(e, f float64) string {
		if !(f > 0) || math.IsNaN(e) {
			return "-"
		}
		return fmt.Sprintf("%.2f×", e/f)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tn\tcalls\tengine s\tDuckDB s\tengine/DuckDB\tengine − DuckDB ms\tengine CPU s\tDuckDB CPU s\tCPU ratio\t")
	for _, k := range order {
		e, f := bench.Median(secs[k][sideEngine]), bench.Median(secs[k][sideFloor])
		ec, fc := bench.Median(cpus[k][sideEngine]), bench.Median(cpus[k][sideFloor])
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%s\t%s\t%.4f\t%.4f\t%s\t\n", k.method, k.n, len(secs[k][sideEngine]), e, f, ratio(e, f),
			strconv.FormatFloat(1000*(e-f), 'f', 1, 64), ec, fc, ratio(ec, fc))
	}
	tw.Flush()
}
