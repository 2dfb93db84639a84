package benchrun

// The tabular workload of `privnotes bench` (issue 13): it times the data
// engine (dsl/snapshot) and the tabular analyses (mechanisms/tabular) on a
// public synthetic table, against DuckDB's own reading of the same file,
// the floor that no engine built on DuckDB can beat.
//
// It lives here rather than in mechanisms/bench because it needs the data
// engine, which is cgo and is linked only by the binary (see
// docs/architecture.md): mechanisms/... may do no I/O. It registers itself
// with bench.Register like the other workloads, so --list, --workload,
// --json and the median table treat it as any other; benchReports (in
// benchrun.go) prints its second table, the engine-against-floor ratios.
//
// Seeded noise is acceptable here only because the data are public
// synthetic draws; no private data ever reaches these samplers.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/bench"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

const tabularWorkload = "tabular"

func init() {
	bench.Register(bench.Workload{
		Name: tabularWorkload,
		Summary: "data engine and tabular analyses vs DuckDB's own scan (the floor): synthetic age/income/region, " +
			"n=1e6 (quick 1e5), ingest CSV+Parquet, scan, sum, histogram, quantile at ε=1; error |noisy−exact| (L1 for histograms)",
		Run: runTabularBench,
	})
	benchReports[tabularWorkload] = printTabularReport
}

// The synthetic table's public schema: what an owner would register with
// --bounds age=0:120,income=0:200000 --categories region=north,south,east,west.
var (
	tabAgeBounds    = [2]float64{0, 120}
	tabIncomeBounds = [2]float64{0, 200000}
	tabRegions      = []string{"north", "south", "east", "west"}
)

const (
	tabAgeBins   = 12  // 10-year bins of the age histogram
	tabQuantileQ = 0.5 // the released quantile: the median age
	// tabDataSeed fixes the table: every seed of a run reads the same
	// data, so the seeds are repeats of the timings and fresh noise draws.
	tabDataSeed = 13
)

// tabTruth holds the exact answers, computed in Go while generating: the
// data are public synthetic draws, so the benchmark may know them.
type tabTruth struct {
	n int
	// Clamped sums (the quantities the mechanisms release, the engine's
	// scan reading values clamped to the bounds) and raw sums (what
	// DuckDB's own sum over the file gives), compensated (Neumaier), so
	// they are exact to about one rounding.
	sumAge, sumIncome       float64
	rawSumAge, rawSumIncome float64
	region                  []int64 // per category, then "other"
	ageBins                 []int64 // per 10-year bin of the clamped age
	sortedAge               []float64
}

// quantile is the exact q-quantile the mechanism aims at: the ⌈q·n⌉-th
// smallest clamped value, the lowest value with rank ≥ q·n (grid points
// from it to the next value have loss 0).
func (t *tabTruth) quantile(q float64) float64 {
	if len(t.sortedAge) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(t.sortedAge)))) - 1
	return t.sortedAge[min(max(i, 0), len(t.sortedAge)-1)]
}

// neumaier is a compensated sum.
type neumaier struct{ s, c float64 }

func (k *neumaier) add(v float64) {
	t := k.s + v
	if math.Abs(k.s) >= math.Abs(v) {
		k.c += (k.s - t) + v
	} else {
		k.c += (v - t) + k.s
	}
	k.s = t
}

func (k *neumaier) sum() float64 { return k.s + k.c }

// writeTabularCSV writes n seeded rows of age, income and region to path
// and returns the exact answers. Age is N(42, 16²) to one decimal, so about
// 0.5% fall below the bound 0 and are clamped; income is log-normal around
// 40000 in cents, about 1% above the bound 200000; region is one of the
// four categories, or (2%) "central" or empty, both outside the domain.
// Values are printed in their shortest round-trip form, so DuckDB reads
// back exactly the float64 the truth was computed from.
func writeTabularCSV(path string, n int, seed uint64) (*tabTruth, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := newLineWriter(f)
	w.buf = append(w.buf, "age,income,region\n"...)
	rng := rand.New(rand.NewPCG(seed, 0x7461627))
	bins, err := tabular.NewNumericBins(tabAgeBounds[0], tabAgeBounds[1], tabAgeBins)
	if err != nil {
		return nil, err
	}
	t := &tabTruth{n: n, region: make([]int64, len(tabRegions)+1), ageBins: make([]int64, tabAgeBins),
		sortedAge: make([]float64, 0, n)}
	var sa, si, ra, ri neumaier
	for range n {
		age := math.Round((42+16*rng.NormFloat64())*10) / 10
		income := math.Round(math.Exp(math.Log(40000)+0.7*rng.NormFloat64())*100) / 100
		var region string
		idx := len(tabRegions) // "other"
		switch u := rng.Float64(); {
		case u < 0.35:
			idx = 0
		case u < 0.65:
			idx = 1
		case u < 0.85:
			idx = 2
		case u < 0.98:
			idx = 3
		case u < 0.99:
			region = "central"
		default: // empty: a missing value, also "other"
		}
		if idx < len(tabRegions) {
			region = tabRegions[idx]
		}
		w.buf = strconv.AppendFloat(w.buf, age, 'f', -1, 64)
		w.buf = append(w.buf, ',')
		w.buf = strconv.AppendFloat(w.buf, income, 'f', -1, 64)
		w.buf = append(w.buf, ',')
		w.buf = append(w.buf, region...)
		w.buf = append(w.buf, '\n')
		if err := w.maybeFlush(); err != nil {
			return nil, err
		}
		ca := tabular.Clamp(age, tabAgeBounds[0], tabAgeBounds[1])
		sa.add(ca)
		si.add(tabular.Clamp(income, tabIncomeBounds[0], tabIncomeBounds[1]))
		ra.add(age)
		ri.add(income)
		t.region[idx]++
		t.ageBins[bins.Bin(ca)]++
		t.sortedAge = append(t.sortedAge, ca)
	}
	if err := w.flush(); err != nil {
		return nil, err
	}
	t.sumAge, t.sumIncome, t.rawSumAge, t.rawSumIncome = sa.sum(), si.sum(), ra.sum(), ri.sum()
	slices.Sort(t.sortedAge)
	return t, f.Close()
}

// lineWriter is a byte buffer that rows are appended to with strconv (no
// fmt call per field) and that is written out in 1 MB pieces.
type lineWriter struct {
	w   io.Writer
	buf []byte
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: w, buf: make([]byte, 0, 1<<20)} }

func (l *lineWriter) maybeFlush() error {
	if len(l.buf) < 1<<20-256 {
		return nil
	}
	return l.flush()
}

func (l *lineWriter) flush() error {
	_, err := l.w.Write(l.buf)
	l.buf = l.buf[:0]
	return err
}

// quoteSQL quotes a string literal for DuckDB (paths of our own temporary
// files only; DuckDB's plain literals have no backslash escapes).
func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// openFloorDB opens the in-memory DuckDB of the floors with the engine's
// own settings (threads as GOMAXPROCS, a 512 MB memory limit, no
// extension loading), so the two differ in what they do, not in how many
// cores or how much memory DuckDB may use.
func openFloorDB(ctx context.Context, tmp string) (*sql.DB, *sql.Conn, error) {
	q := url.Values{}
	q.Set("threads", strconv.Itoa(runtime.GOMAXPROCS(0)))
	q.Set("memory_limit", "512MB")
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	q.Set("temp_directory", filepath.Join(tmp, "floor-spill"))
	c, err := duckdb.NewConnector("?"+q.Encode(), nil)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(c)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, conn, nil
}

// stepStats is one timed step: wall time and the Go heap's use.
type stepStats struct {
	secs float64
	// heapPeakMB is the high-water mark of the Go heap's objects above
	// their level at the start (after a GC), sampled every millisecond
	// through runtime/metrics, which does not stop the world: a spike
	// shorter than that can be missed. allocMB is the bytes the step
	// allocated in Go (runtime.MemStats.TotalAlloc before and after).
	// Neither sees DuckDB's own memory, which is C++ behind cgo: peak RSS
	// would, but it is one number per process, not per step.
	heapPeakMB, allocMB float64
}

const heapMetric = "/memory/classes/heap/objects:bytes"

// measure runs f once, timed, with the Go heap sampled.
func measure(f func() error) (stepStats, error) {
	runtime.GC() // the baseline is the live heap, not the last step's garbage
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	peak := base
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: heapMetric}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
			}
		}
	}()
	start := time.Now()
	err := f()
	secs := time.Since(start).Seconds()
	close(stop)
	<-done // peak is ours again
	metrics.Read(s)
	peak = max(peak, s[0].Value.Uint64())
	runtime.ReadMemStats(&m1)
	// A step faster than the clock's resolution still took time.
	secs = max(secs, 1e-9)
	return stepStats{secs: secs, heapPeakMB: float64(peak-base) / (1 << 20),
		allocMB: float64(m1.TotalAlloc-m0.TotalAlloc) / (1 << 20)}, err
}

// snapshotScanKind names the scan path compiled in: dsl/snapshot reads
// windows through DuckDB's Arrow interface under the build tag
// duckdb_arrow, else through database/sql. The build settings say which.
func snapshotScanKind() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), "duckdb_arrow") {
			return "Arrow"
		}
	}
	return "database/sql"
}

// tabSettings are the run's knobs after defaults.
type tabSettings struct {
	n, seeds int
	eps      []float64
	delta    float64
	nb       accounting.Neighbour
}

func tabularSettings(cfg bench.Config) (tabSettings, error) {
	st := tabSettings{n: 1_000_000, seeds: 3, eps: []float64{1}, delta: cfg.Delta}
	if cfg.Quick {
		st.n = 100_000
	}
	if cfg.N > 0 {
		st.n = cfg.N
	}
	if cfg.Seeds > 0 {
		st.seeds = cfg.Seeds
	}
	if len(cfg.Eps) > 0 {
		st.eps = cfg.Eps
	}
	// δ > 0 calibrates the sums' and histograms' discrete Gaussian through
	// zCDP; there is no other calibration to choose.
	switch strings.ToLower(strings.TrimSpace(cfg.Calibration)) {
	case "", "zcdp":
	default:
		return st, fmt.Errorf("--calibration %q does not apply: sums and histograms use discrete Laplace (δ = 0) or discrete Gaussian calibrated through zCDP (δ > 0), the quantile the exponential mechanism at pure ε", cfg.Calibration)
	}
	if cfg.Neighbour != "" {
		nb, err := accounting.ParseNeighbour(cfg.Neighbour)
		if err != nil {
			return st, err
		}
		st.nb = nb
	}
	return st, nil
}

// runTabularBench generates the table, then for every seed times each
// step: ingestion of the CSV and of the Parquet file by the engine and by
// DuckDB alone, opening the snapshot, one scan pass against DuckDB's own
// sum over the snapshot, and every analysis at every ε. Steps not named
// in --methods are skipped (the snapshot the later steps read is then
// built untimed).
func runTabularBench(ctx context.Context, cfg bench.Config) (out []bench.Row, err error) {
	st, err := tabularSettings(cfg)
	if err != nil {
		return nil, err
	}
	if st.n > snapshot.MaxRows {
		return nil, fmt.Errorf("n = %d exceeds the snapshots' limit %d", st.n, snapshot.MaxRows)
	}
	tmp, err := os.MkdirTemp("", "pn-bench-tabular-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()
	csvPath, pqPath := filepath.Join(tmp, "people.csv"), filepath.Join(tmp, "people.parquet")
	truth, err := writeTabularCSV(csvPath, st.n, tabDataSeed)
	if err != nil {
		return nil, fmt.Errorf("generating the table: %w", err)
	}
	db, conn, err := openFloorDB(ctx, tmp)
	if err != nil {
		return nil, fmt.Errorf("starting DuckDB: %w", err)
	}
	defer db.Close()
	defer conn.Close()
	// The Parquet copy is DuckDB's own, as an owner's exported file would
	// be: typed, with missing regions as NULL.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(
		"COPY (SELECT * FROM read_csv(%s, types = {'age': 'DOUBLE', 'income': 'DOUBLE', 'region': 'VARCHAR'})) TO %s (FORMAT parquet)",
		quoteSQL(csvPath), quoteSQL(pqPath))); err != nil {
		return nil, fmt.Errorf("writing the Parquet file: %w", err)
	}
	b := &tabBench{ctx: ctx, cfg: cfg, st: st, truth: truth, conn: conn, tmp: tmp, csv: csvPath, parquet: pqPath}
	for seed := range st.seeds {
		if err := ctx.Err(); err != nil {
			return b.rows, err
		}
		if err := b.runSeed(uint64(seed)); err != nil {
			return b.rows, fmt.Errorf("seed %d: %w", seed, err)
		}
	}
	return b.rows, nil
}

// tabBench is one run's state.
type tabBench struct {
	ctx          context.Context
	cfg          bench.Config
	st           tabSettings
	truth        *tabTruth
	conn         *sql.Conn // the floors' DuckDB
	tmp          string
	csv, parquet string
	rows         []bench.Row
}

// add appends a row for a step; side is "engine" or "floor".
func (b *tabBench) add(seed uint64, method, setting, side string, d int, eps, delta float64, s stepStats, errv float64, metric string, extra map[string]any) {
	x := map[string]any{"setting": setting, "side": side, "metric": metric,
		"rows_per_s": float64(b.st.n) / s.secs, "heap_peak_mb": s.heapPeakMB, "alloc_mb": s.allocMB}
	for k, v := range extra {
		x[k] = v
	}
	b.rows = append(b.rows, bench.Row{Workload: tabularWorkload, Method: method, N: b.st.n, D: d, Eps: eps, Delta: delta,
		Seed: seed, Error: errv, Seconds: s.secs, Extra: x})
}

// Settings of the rows, as the median table shows them.
const (
	sideEngine = "engine"
	sideFloor  = "floor"
	rowsMetric = "|rows read − n| (a check: 0)"
)

func (b *tabBench) runSeed(seed uint64) error {
	n := float64(b.st.n)
	spec := func(from string) snapshot.Spec {
		return snapshot.Spec{From: from,
			Bounds:     map[string][2]float64{"age": tabAgeBounds, "income": tabIncomeBounds},
			Categories: map[string][]string{"region": tabRegions}}
	}
	var info *snapshot.Info
	// Each seed builds its own snapshots (a rebuild of the same source
	// would find its file in place), removed when the seed is done.
	defer func() {
		for _, m := range []string{"ingest-csv", "ingest-parquet"} {
			os.RemoveAll(filepath.Join(b.tmp, fmt.Sprintf("snap-%d-%s", seed, m)))
		}
	}()
	for _, src := range []struct{ method, path, reader string }{
		{"ingest-csv", b.csv, "read_csv"},
		{"ingest-parquet", b.parquet, "read_parquet"},
	} {
		dir := filepath.Join(b.tmp, fmt.Sprintf("snap-%d-%s", seed, src.method))
		if b.cfg.WantMethod(src.method) || (info == nil && src.method == "ingest-csv") {
			var got *snapshot.Info
			s, err := measure(func() (err error) {
				got, err = snapshot.Build(b.ctx, spec(src.path), dir, "people")
				return err
			})
			if err != nil {
				return err
			}
			if info == nil {
				info = got // the later steps read the CSV's snapshot
			}
			if b.cfg.WantMethod(src.method) {
				b.add(seed, src.method, sideEngine, sideEngine, 3, 0, 0, s, math.Abs(float64(got.Rows)-n), rowsMetric, nil)
			}
		}
		if !b.cfg.WantMethod(src.method) {
			continue
		}
		// The floor: DuckDB reads and parses the same file into its own
		// in-memory table. Build does more (types and checks every value,
		// writes and hashes a Parquet file and syncs it), which is the
		// ratio's point.
		s, err := measure(func() error {
			_, err := b.conn.ExecContext(b.ctx, "CREATE OR REPLACE TABLE pn_floor AS SELECT * FROM "+src.reader+"("+quoteSQL(src.path)+")")
			return err
		})
		if err != nil {
			return fmt.Errorf("DuckDB floor of %s: %w", src.method, err)
		}
		var count int64
		if err := b.conn.QueryRowContext(b.ctx, "SELECT count(*) FROM pn_floor").Scan(&count); err != nil {
			return err
		}
		if _, err := b.conn.ExecContext(b.ctx, "DROP TABLE pn_floor"); err != nil {
			return err
		}
		b.add(seed, src.method, sideFloor+":duckdb", sideFloor, 3, 0, 0, s, math.Abs(float64(count)-n), rowsMetric, nil)
	}

	var r *snapshot.Reader
	s, err := measure(func() (err error) {
		r, err = snapshot.Open(info.Path, info.Hash) // hashes the file: part of every call's cost
		return err
	})
	if err != nil {
		return err
	}
	defer r.Close()
	if b.cfg.WantMethod("open") {
		b.add(seed, "open", sideEngine, sideEngine, 3, 0, 0, s, 0, "none (always 0)", nil)
	}
	if b.cfg.WantMethod("scan") {
		if err := b.scan(seed, r, info.Path); err != nil {
			return err
		}
	}
	for _, eps := range b.st.eps {
		if err := b.analyses(seed, r, eps); err != nil {
			return err
		}
	}
	return nil
}

// scan times one pass of the engine over age and income (the sum in Go is
// the least work that keeps every value read) against DuckDB's own
// SELECT sum(age), sum(income) over the snapshot file.
func (b *tabBench) scan(seed uint64, r *snapshot.Reader, path string) error {
	src, err := r.Source([]string{"age", "income"})
	if err != nil {
		return err
	}
	var age, income float64
	var count int
	s, err := measure(func() error {
		return rows.ForEach(b.ctx, src, 4096, false, false, func(bt *rows.Batch) error {
			for i := range bt.N {
				age += bt.X[2*i]
				income += bt.X[2*i+1]
			}
			count += bt.N
			return nil
		})
	})
	if err != nil {
		return err
	}
	if count != b.st.n {
		return fmt.Errorf("the scan read %d rows, want %d", count, b.st.n)
	}
	const metric = "|Σ income read − exact Σ| (a check: rounding only)"
	b.add(seed, "scan", sideEngine+":"+snapshotScanKind(), sideEngine, 2, 0, 0, s,
		math.Abs(income-b.truth.sumIncome), metric, map[string]any{"age_error": math.Abs(age - b.truth.sumAge)})

	var fage, fincome float64
	s, err = measure(func() error {
		return b.conn.QueryRowContext(b.ctx, "SELECT sum(age), sum(income) FROM read_parquet("+quoteSQL(path)+")").Scan(&fage, &fincome)
	})
	if err != nil {
		return fmt.Errorf("DuckDB floor of the scan: %w", err)
	}
	// DuckDB sums the stored values, which are not clamped (the engine
	// clamps on reading), so its check is against the raw sums.
	b.add(seed, "scan", sideFloor+":duckdb", sideFloor, 2, 0, 0, s,
		math.Abs(fincome-b.truth.rawSumIncome), metric, map[string]any{"age_error": math.Abs(fage - b.truth.rawSumAge)})
	return nil
}

// analyses runs every tabular analysis once at eps, each on a one-column
// source of the snapshot with its own seeded noise stream, timing Run (the
// scan included; plans read no data and cost microseconds).
func (b *tabBench) analyses(seed uint64, r *snapshot.Reader, eps float64) error {
	delta, nb := b.st.delta, b.st.nb
	source := func(col string) (rows.Source, error) { return r.Source([]string{col}) }
	sampler := func(method, setting string) *noise.Sampler {
		return noise.NewSeeded(bench.NoiseSeed(tabularWorkload, seed, method, setting, eps, delta, b.st.n, nb))
	}
	noiseName := func(gaussian bool) string {
		if gaussian {
			return "discrete Gaussian"
		}
		return "discrete Laplace"
	}
	common := func(scale float64, kind string) map[string]any {
		return map[string]any{"scale": scale, "noise": kind, "neighbour": nb.String()}
	}

	if b.cfg.WantMethod("sum") {
		for _, c := range []struct {
			col    string
			bounds [2]float64
			exact  float64
		}{{"age", tabAgeBounds, b.truth.sumAge}, {"income", tabIncomeBounds, b.truth.sumIncome}} {
			p, err := tabular.PlanSum(c.bounds[0], c.bounds[1], eps, delta, nb)
			if err != nil {
				return err
			}
			src, err := source(c.col)
			if err != nil {
				return err
			}
			ns := sampler("sum", c.col)
			var got float64
			s, err := measure(func() (err error) {
				got, err = p.Run(b.ctx, src, false, ns)
				return err
			})
			if err != nil {
				return err
			}
			x := common(p.Scale, noiseName(p.Gaussian))
			x["value"], x["exact"] = got, c.exact
			b.add(seed, "sum", c.col, sideEngine, 1, eps, delta, s, math.Abs(got-c.exact), "|noisy sum − exact clamped sum|", x)
		}
	}

	if b.cfg.WantMethod("histogram") {
		cats, err := tabular.NewCategoryBins(tabRegions, ledger.OtherCategory)
		if err != nil {
			return err
		}
		ages, err := tabular.NewNumericBins(tabAgeBounds[0], tabAgeBounds[1], tabAgeBins)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			col, setting string
			bins         tabular.Binning
			exact        []int64
		}{
			{"region", "region", cats, b.truth.region},
			{"age", fmt.Sprintf("age, %d bins", tabAgeBins), ages, b.truth.ageBins},
		} {
			p, err := tabular.PlanHistogram(c.bins, 1, eps, delta, nb)
			if err != nil {
				return err
			}
			src, err := source(c.col)
			if err != nil {
				return err
			}
			ns := sampler("histogram", c.setting)
			var got []float64
			s, err := measure(func() (err error) {
				got, err = p.Run(b.ctx, src, false, ns)
				return err
			})
			if err != nil {
				return err
			}
			l1 := 0.0
			for i, v := range got {
				l1 += math.Abs(v - float64(c.exact[i]))
			}
			x := common(p.Scale, noiseName(p.Gaussian))
			x["bins"] = float64(len(got))
			b.add(seed, "histogram", c.setting, sideEngine, 1, eps, delta, s, l1, "L1 of noisy − exact counts", x)
		}
	}

	if b.cfg.WantMethod("quantile") {
		p, err := tabular.PlanQuantile(tabAgeBounds[0], tabAgeBounds[1], tabQuantileQ, eps)
		if err != nil {
			return err
		}
		src, err := source("age")
		if err != nil {
			return err
		}
		setting := fmt.Sprintf("age, q=%g", tabQuantileQ)
		ns := sampler("quantile", setting)
		var got float64
		s, err := measure(func() (err error) {
			got, err = p.Run(b.ctx, src, false, ns)
			return err
		})
		if err != nil {
			return err
		}
		exact := b.truth.quantile(tabQuantileQ)
		x := map[string]any{"value": got, "exact": exact, "grid": float64(p.Grid), "noise": "exponential mechanism",
			"neighbour": nb.String()}
		// The exponential mechanism is pure ε whatever δ: its row says so.
		b.add(seed, "quantile", setting, sideEngine, 1, eps, 0, s, math.Abs(got-exact), "|private quantile − exact|", x)
	}
	return nil
}

// printTabularReport prints, after the median table, what that table
// cannot show: per step the engine's median time and rows per second next
// to DuckDB's own (the floor) and their ratio, and the Go heap's use.
func printTabularReport(w io.Writer, all []bench.Row) {
	type key struct {
		n             int
		method, setup string
		eps, delta    float64
	}
	type agg struct {
		side              string
		secs, heap, alloc []float64
	}
	var order []key
	groups := map[key]*agg{}
	floors := map[key]*agg{} // by (n, method, eps, delta), setting left out
	for _, r := range all {
		if r.Workload != tabularWorkload {
			continue
		}
		setting, _ := r.Extra["setting"].(string)
		side, _ := r.Extra["side"].(string)
		k := key{r.N, r.Method, setting, r.Eps, r.Delta}
		g := groups[k]
		if g == nil {
			g = &agg{side: side}
			groups[k] = g
			order = append(order, k)
			if side == sideFloor {
				floors[key{n: r.N, method: r.Method, eps: r.Eps, delta: r.Delta}] = g
			}
		}
		g.secs = append(g.secs, r.Seconds)
		heap, _ := r.Extra["heap_peak_mb"].(float64)
		alloc, _ := r.Extra["alloc_mb"].(float64)
		g.heap, g.alloc = append(g.heap, heap), append(g.alloc, alloc)
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: the data engine against DuckDB's own reading of the same file (the floor), medians over seeds;\n", tabularWorkload)
	fmt.Fprintln(w, "memory is the Go heap only (sampled high-water above the live heap, and bytes allocated): DuckDB's C++ memory is not counted")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tsetting\tn\teps\tengine s\trows/s\tfloor s\tfloor rows/s\tengine/floor\tGo heap peak MB\tGo alloc MB\t")
	for _, k := range order {
		g := groups[k]
		if g.side == sideFloor {
			continue
		}
		sec := bench.Median(g.secs)
		floorS, floorRate, ratio := "-", "-", "-"
		if f := floors[key{n: k.n, method: k.method, eps: k.eps, delta: k.delta}]; f != nil {
			fs := bench.Median(f.secs)
			floorS, floorRate = fmt.Sprintf("%.3f", fs), rate(float64(k.n)/fs)
			ratio = fmt.Sprintf("%.2f×", sec/fs)
		}
		eps := "-"
		if k.eps > 0 {
			eps = fmt.Sprintf("%g", k.eps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.3f\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", k.method, k.setup, k.n, eps, sec,
			rate(float64(k.n)/sec), floorS, floorRate, ratio, bench.Median(g.heap), bench.Median(g.alloc))
	}
	tw.Flush()
}

// rate formats rows per second compactly.
func rate(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
