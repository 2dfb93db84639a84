package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// mappedRSS returns the resident bytes of the process's mapping that
// starts at b's first byte, from /proc/self/smaps.
func mappedRSS(t *testing.T, b []byte) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, start) {
			in = true
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "Rss:"), "%d kB", &kb); err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}

// TestCacheReleasesPages: the mapped cache's pages leave the process's
// resident set once hashed, once a lent pass (pca's Gram pass, through
// rowpass.PairwiseScan) has summed them and once a copying pass has
// copied them, so the resident set does not grow with the cache; the
// released pages read the same bytes (the same bits as through pread).
func TestCacheReleasesPages(t *testing.T) {
	defer func(n int64) { residentCacheBytes = n }(residentCacheBytes)
	residentCacheBytes = 1 << 20
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	writeNumericCSV(t, p, 120000, 8) // a cache of about 9 MB
	info, err := Build(context.Background(), Spec{From: p}, filepath.Join(dir, "out"), "t")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range info.Columns {
		names = append(names, c.Name)
	}
	gauss := func(src rows.Source) *mat.Dense {
		t.Helper()
		pl, err := pca.PlanMethod("gauss", pca.Options{K: 2, Eps: 1, Delta: 1e-6, Clip: 2, Noise: noise.NewSeeded(7), Workers: 2}, src.Dim())
		if err != nil {
			t.Fatal(err)
		}
		res, err := pl.RunSource(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		return res.Components
	}
	open := func() (*Reader, rows.Source) {
		t.Helper()
		r, err := Open(info.Path, info.Hash)
		if err != nil {
			t.Fatal(err)
		}
		src, err := r.Source(names)
		if err != nil {
			t.Fatal(err)
		}
		return r, src
	}
	r, src := open()
	defer r.Close()
	file := r.cacheFile(context.Background(), true)
	if file == nil || file.vals == nil {
		t.Fatal("the row cache is not mapped")
	}
	size := int64(len(file.data))
	// Far below the cache: a few pages per region stay where ranges meet.
	limit := size / 8
	resident := func(after string) {
		t.Helper()
		if got := mappedRSS(t, file.data); got > limit {
			t.Fatalf("after %s %d of %d mapped bytes are resident, want ≤ %d", after, got, size, limit)
		}
	}
	resident("the hash")
	lent := gauss(src)
	resident("a lent pass")
	cur, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := rows.NewBatch(src.Dim(), 5000, false, false)
	for cur.Next(b) == nil {
	}
	cur.Close()
	resident("a copying pass")
	again := gauss(src)
	defer func(m bool) { useMap = m }(useMap)
	useMap = false
	r2, src2 := open()
	defer r2.Close()
	read := gauss(src2)
	if !mat.Equal(lent, again) || !mat.Equal(lent, read) {
		t.Fatalf("components: lent pass %v, second lent pass %v, pread pass %v", mat.Formatted(lent), mat.Formatted(again), mat.Formatted(read))
	}
}
