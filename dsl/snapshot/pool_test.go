package snapshot

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// poolFixture builds two small snapshots in a temporary directory.
func poolFixture(t *testing.T) (a, b *Info) {
	t.Helper()
	dir := t.TempDir()
	var err error
	if a, err = Build(context.Background(), Spec{From: write(t, dir, "a.csv", baseCSV)}, dir, "a"); err != nil {
		t.Fatal(err)
	}
	if b, err = Build(context.Background(), Spec{From: write(t, dir, "b.csv", "x\n1\n2\n")}, dir, "b"); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// scans reports whether a pass over column col of r succeeds.
func scans(r *Reader, col string) bool {
	src, err := r.Source([]string{col})
	if err != nil {
		return false
	}
	c, err := src.Scan(context.Background())
	if err != nil {
		return false
	}
	return c.Close() == nil
}

// Leases of one snapshot share its reader, which outlives each lease and
// reads what a reader of its own reads; the pool's Close closes it.
func TestPoolSharesReaders(t *testing.T) {
	a, _ := poolFixture(t)
	p := &Pool{}
	l1, err := p.Open(a.Path, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := p.Open(a.Path, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if l1.Reader != l2.Reader {
		t.Error("two leases of one snapshot opened two readers")
	}
	l1.Close()
	l1.Close() // a second Close gives nothing back twice
	src, err := l2.Source([]string{"b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, src, 2); !slices.Equal(got.x, []float64{2, 1, 4000, -3.25, 6, 5}) {
		t.Errorf("a lease read %v", got.x)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	l3, err := p.Open(a.Path, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if l3.Reader != l2.Reader || !scans(l3.Reader, "a") {
		t.Error("the reader was not kept open across leases")
	}
	l3.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if scans(l3.Reader, "a") {
		t.Error("the pool's Close left its idle reader open")
	}
	// After Close, a lease has a reader of its own, closed with it.
	l4, err := p.Open(a.Path, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if l4.Reader == l3.Reader || !scans(l4.Reader, "a") {
		t.Error("a lease after Close did not open its own reader")
	}
	l4.Close()
	if scans(l4.Reader, "a") {
		t.Error("a reader leased after the pool's Close outlived its lease")
	}
}

// The pool keeps at most Size idle readers, closing the least recently
// used, and never closes a reader under a lease: that one closes with its
// last lease once evicted.
func TestPoolBounded(t *testing.T) {
	a, b := poolFixture(t)
	p := &Pool{Size: 1}
	la, err := p.Open(a.Path, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := p.Open(b.Path, b.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !scans(la.Reader, "a") || !scans(lb.Reader, "x") {
		t.Fatal("a reader under a lease was closed by the bound")
	}
	la.Close() // a is idle and the least recently used: closed
	if scans(la.Reader, "a") {
		t.Error("the pool kept more idle readers than its size")
	}
	if !scans(lb.Reader, "x") {
		t.Error("the reader still leased was closed")
	}
	lb.Close()
	lb2, err := p.Open(b.Path, b.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if lb2.Reader != lb.Reader {
		t.Error("the pool dropped the one reader its size allows")
	}
	lb2.Close()
	// Closed while leased: the lease keeps reading until its Close.
	lb3, _ := p.Open(b.Path, b.Hash)
	p.Close()
	if !scans(lb3.Reader, "x") {
		t.Error("the pool's Close closed a leased reader")
	}
	lb3.Close()
	if scans(lb3.Reader, "x") {
		t.Error("the last lease after the pool's Close left the reader open")
	}
}

// Every lease verifies the file: a snapshot changed after its reader was
// pooled is refused, as Open refuses it.
func TestPoolRefusesChangedFile(t *testing.T) {
	a, _ := poolFixture(t)
	p := &Pool{}
	defer p.Close()
	l, err := p.Open(a.Path, a.Hash)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	raw, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.Chmod(a.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open(a.Path, a.Hash); err == nil || !strings.Contains(err.Error(), "changed after registration") {
		t.Errorf("a changed snapshot leased: %v", err)
	}
	if scans(l.Reader, "a") {
		t.Error("the reader of a file that no longer verifies stayed open in the pool")
	}
	if _, err := p.Open(a.Path, strings.Repeat("0", 64)); err == nil {
		t.Error("a lease under another hash")
	}
}

// Concurrent calls lease and scan one pooled reader at once; each pass
// reads the whole snapshot.
func TestPoolConcurrent(t *testing.T) {
	a, _ := poolFixture(t)
	p := &Pool{}
	defer p.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				l, err := p.Open(a.Path, a.Hash)
				if err != nil {
					errs <- err.Error()
					return
				}
				src, err := l.Source([]string{"a"})
				if err != nil {
					errs <- err.Error()
					l.Close()
					return
				}
				if n := src.(interface{ NumRows() int64 }).NumRows(); n != 3 {
					errs <- fmt.Sprintf("NumRows %d, want 3", n)
				}
				var got []float64 // not readAll: t.Fatal is for the test's goroutine
				err = rows.ForEach(context.Background(), src, 2, false, false, func(b *rows.Batch) error {
					got = append(got, b.X[:b.N]...)
					return nil
				})
				if err != nil || !slices.Equal(got, []float64{1, -3.25, 5}) {
					errs <- fmt.Sprintf("a lease read %v (%v)", got, err)
				}
				l.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.readers) != 1 {
		t.Errorf("%d readers pooled, want 1", len(p.readers))
	}
}
