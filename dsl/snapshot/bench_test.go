package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// writeNumericCSV writes n rows of d columns of Gaussian values with six
// decimals, as a generated test source.
func writeNumericCSV(tb testing.TB, path string, n, d int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for j := range d {
		if j > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "x%d", j)
	}
	w.WriteByte('\n')
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, 32)
	for range n {
		for j := range d {
			if j > 0 {
				w.WriteByte(',')
			}
			buf = strconv.AppendFloat(buf[:0], float64(int64(rng.NormFloat64()*1e6))/1e6, 'f', -1, 64)
			w.Write(buf)
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// scanPass reads src once with batches of batchRows rows and returns the
// number of rows and the sum of the first column (so the pass is not optimised
// away).
func scanPass(ctx context.Context, src rows.Source, batchRows int) (int, float64, error) {
	n, sum := 0, 0.0
	err := rows.ForEach(ctx, src, batchRows, false, false, func(b *rows.Batch) error {
		// One value per row: the measure is the cursor's, not this sum's.
		for i := range b.N {
			sum += b.X[i*src.Dim()]
		}
		n += b.N
		return nil
	})
	return n, sum, err
}

func benchRows() int {
	if s := os.Getenv("PN_SNAPSHOT_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// BenchmarkIngestScan ingests a generated numeric CSV (PN_SNAPSHOT_BENCH_ROWS
// rows, default 1e6, × 20 columns) and scans it once; it reports ns per row
// of each step.
func BenchmarkIngestScan(b *testing.B) {
	n, d := benchRows(), 20
	dir := b.TempDir()
	csv := filepath.Join(dir, "gen.csv")
	writeNumericCSV(b, csv, n, d)
	ctx := context.Background()
	var info *Info
	b.Run("ingest", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var err error
			if info, err = Build(ctx, Spec{From: csv}, filepath.Join(dir, "out"), "gen"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
	})
	b.Run("scan", func(b *testing.B) {
		if info == nil {
			b.Skip("the scan reads what the ingest sub-benchmark builds")
		}
		r, err := Open(info.Path, info.Hash)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		names := make([]string, d)
		for j := range names {
			names[j] = fmt.Sprintf("x%d", j)
		}
		src, err := r.Source(names)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			got, _, err := scanPass(ctx, src, 4096)
			if err != nil || got != n {
				b.Fatal(got, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
	})
}

// BenchmarkScale is the one-off measurement of the data engine's targets:
// it generates PN_SNAPSHOT_SCALE_ROWS (default 1e6) rows × 20 columns of
// CSV under PN_SNAPSHOT_SCALE_DIR (default a temporary directory),
// registers it (with x0 as the user column when PN_SNAPSHOT_SCALE_USER is
// set), scans it once, and logs the times and the process's peak RSS
// (VmHWM); PN_SNAPSHOT_SCALE_CSV names an already generated CSV of that
// size to use instead; PN_SNAPSHOT_SCALE_KEEP names a directory that keeps
// the snapshot (and its row cache) for later runs, which then skip the
// registration; with PN_SNAPSHOT_SCALE_ITER set it also compares one streamed
// power iteration with one in memory (logIterations). Run it once:
//
//	PN_SNAPSHOT_SCALE_ROWS=5000000 go test -tags duckdb_arrow -run '^$' -bench Scale -benchtime 1x ./dsl/snapshot/
func BenchmarkScale(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("PN_SNAPSHOT_SCALE_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	dir := os.Getenv("PN_SNAPSHOT_SCALE_DIR")
	keep := os.Getenv("PN_SNAPSHOT_SCALE_KEEP")
	if keep != "" {
		dir = keep // built once, reused by later runs
	} else if dir == "" {
		dir = b.TempDir()
	} else {
		dir, err = os.MkdirTemp(dir, "pn-scale-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	csv := filepath.Join(dir, "gen.csv")
	t0 := time.Now()
	if c := os.Getenv("PN_SNAPSHOT_SCALE_CSV"); c != "" {
		csv = c // an earlier run's file, of n rows
	} else {
		writeNumericCSV(b, csv, n, 20)
	}
	st, _ := os.Stat(csv)
	b.Logf("generated %d rows × 20 (%.2f GB) in %v; %s", n, float64(st.Size())/1e9, time.Since(t0), vmHWM())
	ctx := context.Background()
	t0 = time.Now()
	spec := Spec{From: csv}
	if os.Getenv("PN_SNAPSHOT_SCALE_USER") != "" {
		// x0 as the user column: nearly every row its own user, the
		// costliest case (a hash table and a sort of every row).
		spec.UserColumn = "x0"
	}
	info, err := keptSnapshot(keep, filepath.Join(dir, "out"))
	if err != nil {
		b.Fatal(err)
	}
	if info == nil {
		if info, err = Build(ctx, spec, filepath.Join(dir, "out"), "gen"); err != nil {
			b.Fatal(err)
		}
	}
	st, _ = os.Stat(info.Path)
	b.Logf("registered in %v (snapshot %.2f GB); %s", time.Since(t0), float64(st.Size())/1e9, vmHWM())
	t0 = time.Now()
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.Logf("opened (hash verified) in %v", time.Since(t0))
	var names []string
	for _, c := range info.Columns {
		names = append(names, c.Name)
	}
	src, err := r.Source(names)
	if err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	got, _, err := scanPass(ctx, src, 4096)
	if err != nil || got != n {
		b.Fatal(got, err)
	}
	b.Logf("%d users", info.Users)
	b.Logf("first scan pass (%s, or the row cache, which it verifies) in %v; %s", scanKind, time.Since(t0), vmHWM())
	t0 = time.Now()
	if got, _, err = scanPass(ctx, src, 4096); err != nil || got != n {
		b.Fatal(got, err)
	}
	b.Logf("second scan pass in %v; %s", time.Since(t0), vmHWM())
	if os.Getenv("PN_SNAPSHOT_SCALE_ITER") != "" {
		logIterations(b, ctx, src)
	}
}

// logIterations logs the median time of one power iteration of npm (k=1)
// and of the adaptive method over the streamed snapshot and over the same
// rows held in memory, and their ratio. An iteration's time is the
// difference between runs of 6 and 1 iterations over 5, so that the
// set-up of a run (the in-memory scales, the start) cancels; each is the
// median of 5 such estimates, the in-memory and streamed runs taking
// turns so that both see the same load. The ratio is the median of the
// five per-round ratios. It also logs the process CPU time an iteration
// takes (user + system, all goroutines), which the load of other
// processes on the machine disturbs less than the wall time. (npm at
// d = 20 and p = 1 forms no Gram matrix below 11 iterations.)
func logIterations(b *testing.B, ctx context.Context, src rows.Source) {
	mem, err := rows.Collect(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	d := src.Dim()
	run := func(method string, k, iters int, s rows.Source) (wall, cpu time.Duration) {
		opt := pca.Options{K: k, Eps: 1, Delta: 1e-6, Iters: iters, Noise: noise.NewSeeded(1)}
		pl, err := pca.PlanMethod(method, opt, d)
		if err != nil {
			b.Fatal(err)
		}
		t0, c0 := time.Now(), cpuTime()
		if _, err := pl.RunSource(ctx, s); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0), cpuTime() - c0
	}
	perIter := func(method string, k int, s rows.Source) (wall, cpu time.Duration) {
		w6, c6 := run(method, k, 6, s)
		w1, c1 := run(method, k, 1, s)
		return (w6 - w1) / 5, (c6 - c1) / 5
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, m := range []struct {
		method string
		k      int
	}{{"npm", 1}, {"adaptive", 1}} {
		var inMem, streamed, inMemCPU, streamedCPU, ratio, ratioCPU []float64
		for range 5 {
			mw, mc := perIter(m.method, m.k, mem)
			sw, sc := perIter(m.method, m.k, src)
			inMem, streamed = append(inMem, mw.Seconds()), append(streamed, sw.Seconds())
			inMemCPU, streamedCPU = append(inMemCPU, mc.Seconds()), append(streamedCPU, sc.Seconds())
			ratio, ratioCPU = append(ratio, mw.Seconds()/sw.Seconds()), append(ratioCPU, mc.Seconds()/sc.Seconds())
		}
		b.Logf("one %s iteration (k=%d): in memory %.1f ms, streamed %.1f ms: %.0f %% of the in-memory speed (CPU time %.1f ms vs %.1f ms: %.0f %%); %s",
			m.method, m.k, 1e3*median(inMem), 1e3*median(streamed), 100*median(ratio),
			1e3*median(inMemCPU), 1e3*median(streamedCPU), 100*median(ratioCPU), vmHWM())
	}
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func vmHWM() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return "peak RSS " + strings.TrimSpace(v)
		}
	}
	return "peak RSS unknown"
}

// keptSnapshot returns the snapshot an earlier BenchmarkScale run left in
// out when keep is set, with its row cache (written again if this build
// reads another format), or nil when there is none (then the caller
// builds it there).
func keptSnapshot(keep, out string) (*Info, error) {
	if keep == "" {
		return nil, nil
	}
	found, err := filepath.Glob(filepath.Join(out, "gen-*.parquet"))
	if err != nil || len(found) != 1 {
		return nil, err
	}
	hash, err := hashFile(found[0])
	if err != nil {
		return nil, err
	}
	r, err := Open(found[0], hash)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// The row cache of this build's format (a no-op when it is there).
	if err := r.WriteCache(context.Background()); err != nil {
		return nil, err
	}
	info := r.Info()
	return &info, nil
}
