package snapshot

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// cacheFixture builds a snapshot of every kind of column (numeric with
// and without bounds, categorical, a label and a user column) over several
// row groups, and its row cache, which the first pass that reads it
// writes (Build writes none).
func cacheFixture(t *testing.T) (*Info, string) {
	t.Helper()
	defer func(n int) { testRowGroupRows = n }(testRowGroupRows)
	testRowGroupRows = 2048
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	writeNumericCSV(t, p, 9000, 6)
	duckExec(t, "COPY (SELECT *, CASE WHEN x5 < -0.5 THEN 'lo' WHEN x5 < 0.5 THEN 'mid' ELSE 'x' END AS c FROM read_csv("+quoteString(p)+")) TO "+quoteString(filepath.Join(dir, "gen.parquet"))+" (FORMAT parquet)")
	spec := Spec{From: filepath.Join(dir, "gen.parquet"), Label: "x4", UserColumn: "x0",
		Bounds: map[string][2]float64{"x2": {-1, 1}}, Categories: map[string][]string{"c": {"lo", "mid"}}}
	info, err := Build(context.Background(), spec, filepath.Join(dir, "out"), "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(CachePath(info.Path)); !os.IsNotExist(err) {
		t.Fatalf("Build wrote a row cache (%v)", err)
	}
	writeCacheByPass(t, info)
	return info, dir
}

// writeCacheByPass makes the first pass over most columns of the built
// snapshot info, which writes its missing row cache, and checks that it
// did, that the pass read it, and that a pass over few columns, and the
// stored norms' query, did not write it before.
func writeCacheByPass(t *testing.T, info *Info) {
	t.Helper()
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	few, err := r.Source(names(info.Columns[:1]))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, few, 4096)
	all, err := r.Source(names(info.Columns))
	if err != nil {
		t.Fatal(err)
	}
	if nm, ok := all.(rows.Normed); ok && nm.HasNorms() {
		t.Error("stored norms offered before the cache is written")
	}
	if _, err := os.Stat(CachePath(info.Path)); !os.IsNotExist(err) {
		t.Fatalf("a pass that reads no cache wrote it (%v)", err)
	}
	cur, err := all.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, isCache := cur.(*cacheCursor); !isCache {
		t.Error("the first pass over most columns did not read the cache it wrote")
	}
	cur.Close()
	if _, err := os.Stat(CachePath(info.Path)); err != nil {
		t.Fatalf("the first pass over most columns wrote no row cache: %v", err)
	}
}

// readNorms is readAll that also collects the stored norms.
func readNorms(t *testing.T, src rows.Source, batch int) (scanned, []float64) {
	t.Helper()
	var s scanned
	var norms []float64
	dim := src.Dim()
	err := rows.ForEach(context.Background(), src, batch, true, true, func(b *rows.Batch) error {
		s.x = append(s.x, b.X[:b.N*dim]...)
		s.label = append(s.label, b.Label[:b.N]...)
		s.unit = append(s.unit, b.Unit[:b.N]...)
		s.n += b.N
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	b := rows.NewBatch(dim, batch, false, false).WithNorms(batch)
	for cur.Next(b) == nil {
		for i := range b.N {
			norms = append(norms, b.NormBig[i], b.NormRel[i])
		}
	}
	return s, norms
}

// readLent reads a pass of src through views (rows.Viewer), if its
// cursor lends them; lends is false when it does not.
func readLent(t *testing.T, src rows.Source, n int) (s scanned, lends bool) {
	t.Helper()
	cur, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	v, ok := cur.(rows.Viewer)
	if !ok {
		return s, false
	}
	dim := src.Dim()
	var b rows.Batch
	for {
		err := v.View(&b, n, true, true)
		if err == rows.ErrNoView {
			return s, false
		}
		if err == io.EOF {
			return s, true
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b.X) != b.N*dim || len(b.Label) != b.N || len(b.Unit) != b.N {
			t.Fatalf("a view of %d rows has %d values, %d labels, %d units", b.N, len(b.X), len(b.Label), len(b.Unit))
		}
		s.x = append(s.x, b.X...)
		s.label = append(s.label, b.Label...)
		s.unit = append(s.unit, b.Unit...)
		s.n += b.N
	}
}

func TestCacheGivesTheParquetValues(t *testing.T) {
	info, _ := cacheFixture(t)
	for _, mapped := range []bool{true, false} {
		t.Run(map[bool]string{true: "mapped", false: "pread"}[mapped], func(t *testing.T) {
			defer func(m bool) { useMap = m }(useMap)
			useMap = mapped
			testCacheValues(t, info, mapped)
		})
	}
}

func testCacheValues(t *testing.T, info *Info, mapped bool) {
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, features := range [][]string{
		{"x1", "x2", "x3", "x5", "c"}, // the columns in order: lent when mapped
		{"x1", "x2", "x3", "c", "x5"}, // every column: one copy per row
		{"x1", "x2", "x3", "x5"},      // the numeric ones: norms stored
		{"x5", "c", "x1", "x3"},       // reordered, with a category
	} {
		cached, err := r.Source(features)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := r.source(features, false)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := cached.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, isCache := cur.(*cacheCursor)
		cur.Close()
		if !isCache {
			t.Fatalf("%v: the pass did not read the row cache", features)
		}
		for _, batch := range []int{1, 300, 10000} {
			got, norms := readNorms(t, cached, batch)
			want := readAll(t, plain, batch)
			if int64(got.n) != info.Rows || !slices.Equal(got.x, want.x) || !slices.Equal(got.label, want.label) || !slices.Equal(got.unit, want.unit) {
				t.Fatalf("%v, batch %d: the cache gives other values than Parquet", features, batch)
			}
			nm, ok := cached.(rows.Normed)
			stored := ok && nm.HasNorms()
			if numeric := len(features) == 4 && features[0] == "x1"; stored != numeric {
				t.Fatalf("%v: HasNorms %v", features, stored)
			}
			if !stored {
				continue
			}
			for i := range got.n {
				big, rel := rows.StoredNorm(got.x[i*4 : (i+1)*4])
				if norms[2*i] != big || norms[2*i+1] != rel {
					t.Fatalf("row %d: stored norm %v·%v, computed %v·%v", i, norms[2*i], norms[2*i+1], big, rel)
				}
			}
		}
		// Lent rows (a mapped cache, the features its columns in order)
		// are the same values, with the same norms.
		lent, lends := readLent(t, cached, 700)
		if whole := slices.Equal(features, []string{"x1", "x2", "x3", "x5", "c"}); lends != (mapped && whole) {
			t.Fatalf("%v, mapped %v: lends %v", features, mapped, lends)
		}
		if !lends {
			continue
		}
		want := readAll(t, plain, 700)
		if lent.n != want.n || !slices.Equal(lent.x, want.x) || !slices.Equal(lent.label, want.label) || !slices.Equal(lent.unit, want.unit) {
			t.Fatalf("%v: lent rows differ from Parquet's", features)
		}
	}
	// A single column reads Parquet's column, not whole cached rows.
	one, _ := r.Source([]string{"x1"})
	cur, err := one.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, isCache := cur.(*cacheCursor); isCache {
		t.Error("a one-column pass read the row cache")
	}
	cur.Close()
}

// TestCacheVerified: a cache whose payload or header changed, or that
// belongs to another snapshot, is not read (the passes read Parquet and
// give the same values) and is removed.
func TestCacheVerified(t *testing.T) {
	info, dir := cacheFixture(t)
	path := CachePath(info.Path)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Build(context.Background(), Spec{From: write(t, dir, "o.csv", "x1,x2,x3,c,x5\n1,2,3,lo,4\n"), Categories: map[string][]string{"c": {"lo"}}}, filepath.Join(dir, "other"), "t")
	if err != nil {
		t.Fatal(err)
	}
	writeCacheByPass(t, other)
	otherCache, err := os.ReadFile(CachePath(other.Path))
	if err != nil {
		t.Fatal(err)
	}
	features := []string{"x1", "x2", "x3", "x5"}
	r0, _ := Open(info.Path, info.Hash)
	src0, _ := r0.source(features, false)
	want := readAll(t, src0, 512)
	r0.Close()
	for name, change := range map[string]func([]byte) []byte{
		"payload bit": func(b []byte) []byte { b[len(b)-3] ^= 1; return b },
		"header rows": func(b []byte) []byte { b[40]++; return b },
		"truncated":   func(b []byte) []byte { return b[:len(b)-8] },
		"another snapshot's cache": func([]byte) []byte {
			return slices.Clone(otherCache)
		},
	} {
		os.Remove(path)
		if err := os.WriteFile(path, change(slices.Clone(good)), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Open(info.Path, info.Hash)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := r.Source(features)
		if nm := src.(rows.Normed); nm.HasNorms() {
			t.Errorf("%s: the source offers stored norms", name)
		}
		if got := readAll(t, src, 512); got.n != want.n || !slices.Equal(got.x, want.x) {
			t.Errorf("%s: the values changed", name)
		}
		r.Close()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: the invalid cache was kept (%v)", name, err)
		}
	}
	// The owner's WriteCache restores it, bit for bit.
	r, _ := Open(info.Path, info.Hash)
	defer r.Close()
	if err := r.WriteCache(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); !slices.Equal(again, good) {
		t.Error("a rewritten cache differs from the first")
	}
}

func TestDiscardRemovesTheCache(t *testing.T) {
	dir := t.TempDir()
	info, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", baseCSV)}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	writeCacheByPass(t, info)
	if err := Discard(info.Path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{info.Path, CachePath(info.Path)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
}

// TestCacheMemo: a process hashes a cache's payload once; a later Reader
// of the same, unchanged file skips the hash, while a file edited in
// place (same size), replaced by a copy, or changed moments before its
// verification is hashed again, and an edited one is refused.
func TestCacheMemo(t *testing.T) {
	defer func(a time.Duration) { memoAge = a }(memoAge)
	info, _ := cacheFixture(t)
	path := CachePath(info.Path)
	features := []string{"x1", "x2", "x3", "x5"}
	// hashes opens a Reader, makes it check its cache, and returns the
	// number of payload hashes that took and whether the cache was used.
	hashes := func() (int64, bool) {
		t.Helper()
		before := payloadHashes.Load()
		r, err := Open(info.Path, info.Hash)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		src, err := r.Source(features)
		if err != nil {
			t.Fatal(err)
		}
		used := src.(rows.Normed).HasNorms()
		return payloadHashes.Load() - before, used
	}
	// A cache changed less than memoAge before its verification is not
	// remembered.
	memoAge = time.Hour
	for i := range 2 {
		if n, used := hashes(); n != 1 || !used {
			t.Fatalf("fresh cache, open %d: %d hashes, used %v; want 1, true", i, n, used)
		}
	}
	// Timestamps come from a coarse clock: wait past a tick, then let the
	// memo keep files changed before the verification.
	memoAge = 0
	time.Sleep(50 * time.Millisecond)
	if n, used := hashes(); n != 1 || !used {
		t.Fatalf("first verification: %d hashes, used %v", n, used)
	}
	if n, used := hashes(); n != 0 || !used {
		t.Fatalf("second Reader of the unchanged cache: %d hashes, used %v; want 0, true", n, used)
	}
	// Replaced by an identical copy (a new file): hashed again, used.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, good, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n, used := hashes(); n != 1 || !used {
		t.Fatalf("replaced by a copy: %d hashes, used %v; want 1, true", n, used)
	}
	// Edited in place, same size, a tick later: hashed again and refused.
	time.Sleep(50 * time.Millisecond)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(len(good) - 3)
	if _, err := f.WriteAt([]byte{good[at] ^ 1}, at); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n, used := hashes(); n != 1 || used {
		t.Fatalf("edited in place: %d hashes, used %v; want 1, false", n, used)
	}
}

// TestSnapshotVerifyMemo: Open hashes a snapshot once per process; a
// snapshot edited in place afterwards (same size) is hashed again and
// refused.
func TestSnapshotVerifyMemo(t *testing.T) {
	defer func(a time.Duration) { memoAge = a }(memoAge)
	dir := t.TempDir()
	// Build opens the snapshot it wrote: too fresh for the memo.
	info, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", baseCSV)}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past a tick of the file system's clock
	memoAge = 0
	open := func() (int64, error) {
		before := snapshotHashes.Load()
		r, err := Open(info.Path, info.Hash)
		if err == nil {
			r.Close()
		}
		return snapshotHashes.Load() - before, err
	}
	for i, want := range []int64{1, 0} {
		if n, err := open(); err != nil || n != want {
			t.Fatalf("open %d: %d hashes (%v), want %d", i, n, err, want)
		}
	}
	time.Sleep(50 * time.Millisecond)
	good, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(info.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(info.Path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(len(good) / 2)
	if _, err := f.WriteAt([]byte{good[at] ^ 1}, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n, err := open(); err == nil || n != 1 {
		t.Fatalf("a snapshot edited in place: %d hashes, error %v; want 1 and a refusal", n, err)
	}
}

// TestPCAIdenticalOverReads: the private PCA methods give the same bits
// over a snapshot's rows read from Parquet, from the row cache through
// pread, from the mapped cache in place (lent rows with stored norms),
// and from memory, for several worker counts.
func TestPCAIdenticalOverReads(t *testing.T) {
	testtier.Long(t)
	defer func(n int) { testRowGroupRows = n }(testRowGroupRows)
	testRowGroupRows = 2048
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	writeNumericCSV(t, p, 20000, 5)
	info, err := Build(context.Background(), Spec{From: p, Bounds: map[string][2]float64{"x1": {-2, 2}}}, filepath.Join(dir, "out"), "t")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range info.Columns {
		names = append(names, c.Name)
	}
	ctx := context.Background()
	run := func(method string, workers int, src rows.Source) *mat.Dense {
		t.Helper()
		opt := pca.Options{K: 2, Eps: 1, Delta: 1e-6, Iters: 3, Clip: 2, Noise: noise.NewSeeded(7), Workers: workers}
		switch method {
		case "adaptive":
			opt.K = 1
		case "gauss":
			opt.Iters = 0
		}
		pl, err := pca.PlanMethod(method, opt, src.Dim())
		if err != nil {
			t.Fatal(err)
		}
		res, err := pl.RunSource(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		return res.Components
	}
	sources := map[string]func(t *testing.T) (rows.Source, func()){}
	for _, read := range []string{"parquet", "pread", "mapped", "memory"} {
		sources[read] = func(t *testing.T) (rows.Source, func()) {
			useMap = read == "mapped"
			r, err := Open(info.Path, info.Hash)
			if err != nil {
				t.Fatal(err)
			}
			src, err := r.source(names, read != "parquet")
			if err != nil {
				t.Fatal(err)
			}
			if read == "memory" {
				if src, err = rows.Collect(ctx, src); err != nil {
					t.Fatal(err)
				}
			}
			cur, err := src.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var b rows.Batch
			v, lends := cur.(rows.Viewer)
			lends = lends && v.View(&b, 1, false, false) == nil
			cur.Close()
			if lends != (read == "mapped") {
				t.Fatalf("%s: the cursor lends rows: %v", read, lends)
			}
			return src, func() { r.Close() }
		}
	}
	defer func(m bool) { useMap = m }(useMap)
	for _, method := range []string{"npm", "adaptive", "gauss"} {
		for _, workers := range []int{1, 2, 3} {
			var want *mat.Dense
			for _, read := range []string{"memory", "parquet", "pread", "mapped"} {
				src, done := sources[read](t)
				got := run(method, workers, src)
				done()
				if want == nil {
					want = got
					continue
				}
				if !slices.EqualFunc(got.RawMatrix().Data, want.RawMatrix().Data, func(a, b float64) bool {
					return math.Float64bits(a) == math.Float64bits(b)
				}) {
					t.Errorf("%s, %d workers: %s gives other components than memory", method, workers, read)
				}
			}
		}
	}
}

// TestRecache: a snapshot whose row cache is stale (another format's
// magic) reads Parquet and notes, once, the owner's command; Recache
// verifies the snapshot, rewrites the cache in the current format, and
// leaves a current one alone; it refuses a snapshot that fails its hash.
func TestRecache(t *testing.T) {
	defer func(w io.Writer) { CacheNotes = w }(CacheNotes)
	info, _ := cacheFixture(t)
	path := CachePath(info.Path)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt, err := Recache(context.Background(), info.Path, info.Hash); err != nil || rebuilt {
		t.Fatalf("a current cache: rebuilt %v, %v; want false, nil", rebuilt, err)
	}
	old := slices.Clone(good)
	copy(old, "PNROWS01")
	os.Remove(path)
	if err := os.WriteFile(path, old, 0o444); err != nil {
		t.Fatal(err)
	}
	var notes strings.Builder
	CacheNotes = &notes
	features := []string{"x1", "x2", "x3", "x5", "c"}
	for range 2 {
		r, err := Open(info.Path, info.Hash)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := r.Source(features)
		if src.(rows.Normed).HasNorms() || readAll(t, src, 512).n != int(info.Rows) {
			t.Fatal("a stale cache was used, or the Parquet pass failed")
		}
		r.Close()
		// A reader removes the stale file; put it back for the next.
		os.Remove(path)
		if err := os.WriteFile(path, old, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if got := notes.String(); strings.Count(got, "privnotes dataset recache t`") != 1 || !strings.Contains(got, filepath.Base(info.Path)) {
		t.Errorf("notes %q: want one naming the snapshot and `privnotes dataset recache t`", got)
	}
	if rebuilt, err := Recache(context.Background(), info.Path, info.Hash); err != nil || !rebuilt {
		t.Fatalf("a stale cache: rebuilt %v, %v; want true, nil", rebuilt, err)
	}
	if again, _ := os.ReadFile(path); !slices.Equal(again, good) {
		t.Error("the rebuilt cache differs from the one registration wrote")
	}
	if _, err := Recache(context.Background(), info.Path, strings.Repeat("0", 64)); err == nil {
		t.Error("Recache accepted a snapshot that does not match its hash")
	}
}

func TestMain(m *testing.M) {
	// Tests that make caches stale would print the owner's note.
	CacheNotes = io.Discard
	os.Exit(m.Run())
}

// A write of the missing cache that is interrupted leaves the question
// open: no cache, no note, and the next pass that reads the cache writes
// it.
func TestLazyCacheInterrupted(t *testing.T) {
	dir := t.TempDir()
	info, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", baseCSV)}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if f := r.cacheFile(ctx, true); f != nil {
		t.Fatal("an interrupted write gave a cache")
	}
	if _, err := os.Stat(CachePath(info.Path)); !os.IsNotExist(err) {
		t.Errorf("an interrupted write left a cache (%v)", err)
	}
	if r.cache.resolved {
		t.Error("an interrupted write settled the cache as absent")
	}
	if f := r.cacheFile(context.Background(), true); f == nil {
		t.Fatal("the pass after an interrupted write wrote no cache")
	}
	if _, err := os.Stat(CachePath(info.Path)); err != nil {
		t.Error(err)
	}
}
