package main

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/snapshot"
)

// writeFormat1Cache replaces the format-2 row cache at path (a snapshot
// of numeric columns only, no label or unit) with the same values in
// format 1 (PNROWS01), which older versions wrote: the same 4096-byte
// header (magic, snapshot hash, rows, width, payload hash), then each
// row's values interleaved (its columns, then its two norm parts), the
// payload hash taken over the payload's bytes.
func writeFormat1Cache(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const header = 4096
	if string(b[:8]) != "PNROWS02" {
		t.Fatalf("%s is not a format-2 cache", path)
	}
	n := int(binary.LittleEndian.Uint64(b[40:]))
	width := int(binary.LittleEndian.Uint64(b[48:]))
	cols := width - 2 // columns, then the two norm regions
	v := func(i int) []byte { return b[header+8*i : header+8*i+8] }
	payload := make([]byte, 0, 8*n*width)
	for r := range n {
		for j := range cols {
			payload = append(payload, v(r*cols+j)...)
		}
		payload = append(payload, v(n*cols+r)...)   // norm, big part
		payload = append(payload, v(n*cols+n+r)...) // norm, relative part
	}
	head := make([]byte, header)
	copy(head, b[:56])
	copy(head, "PNROWS01")
	sum := sha256.Sum256(payload)
	copy(head[56:], sum[:])
	os.Remove(path)
	if err := os.WriteFile(path, append(head, payload...), 0o444); err != nil {
		t.Fatal(err)
	}
}

// dataset recache rewrites a format-1 row cache in the current format,
// bit for bit what registration writes, changing nothing in the
// registry or ledger; a current cache is left alone; an unknown name, a
// state directory of another user and a directory
// without privnotes state are refused, saying what to do.
func TestDatasetRecache(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	src := writeCSV(t, dir, "d.csv", "a,b,c\n1,2,3\n3,4,-1\n5,6,0.5\n-2,0,7\n")
	if code, _, errs := runCLI("dataset", "add", "gen", "--state", state, "--from", src, "--eps", "5", "--delta", "1e-6", "--clip", "10"); code != 0 {
		t.Fatalf("add: %d %s", code, errs)
	}
	// Registration writes no row cache (the first pass that reads one
	// does); recache writes a missing one.
	if found, _ := filepath.Glob(filepath.Join(state, "snapshots", "gen-*.rows")); len(found) != 0 {
		t.Fatalf("registration wrote row caches %v", found)
	}
	if code, out, errs := runCLI("dataset", "recache", "gen", "--state", state); code != 0 || !strings.Contains(out, `dataset "gen": rebuilt the row cache`) {
		t.Fatalf("recache of a missing cache: %d %q %q", code, out, errs)
	}
	found, _ := filepath.Glob(filepath.Join(state, "snapshots", "gen-*.rows"))
	if len(found) != 1 {
		t.Fatalf("row caches %v, want one", found)
	}
	cache := found[0]
	current, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	records := func() string {
		t.Helper()
		_, show, _ := runCLI("dataset", "show", "gen", "--state", state)
		_, ledger, _ := runCLI("ledger", "show", "--state", state)
		return show + ledger
	}
	before := records()

	writeFormat1Cache(t, cache)
	code, out, errs := runCLI("dataset", "recache", "gen", "--state", state)
	if code != 0 || !strings.Contains(out, `dataset "gen": rebuilt the row cache`) || !strings.Contains(out, "hash verified") || !strings.Contains(out, "unchanged") {
		t.Fatalf("recache of a format-1 cache: %d %q %q", code, out, errs)
	}
	if got, _ := os.ReadFile(cache); string(got) != string(current) {
		t.Error("the rebuilt cache differs from the one the first recache wrote")
	}
	if after := records(); after != before {
		t.Errorf("recache changed the registry or ledger:\nbefore %s\nafter %s", before, after)
	}
	if code, out, _ := runCLI("dataset", "recache", "gen", "--state", state); code != 0 || !strings.Contains(out, "is current") {
		t.Errorf("recache of a current cache: %d %q", code, out)
	}
	if code, out, _ := runCLI("ledger", "verify", "--state", state); code != 0 || !strings.Contains(out, "ledger OK") {
		t.Errorf("ledger verify after recache: %d %s", code, out)
	}

	// Refusals, each naming what to do; none touches the cache. (A
	// --matrix registration is a snapshot too.)
	matrix := writeCSV(t, dir, "m.csv", "1,0\n0,1\n")
	if code, _, errs := runCLI("dataset", "add", "m", "--state", state, "--matrix", matrix, "--entry-bound", "1", "--eps", "1", "--delta", "1e-6"); code != 0 {
		t.Fatalf("add --matrix: %d %s", code, errs)
	}
	defer func(f func() int) { currentUID = f }(currentUID)
	for _, c := range []struct {
		name  string
		args  []string
		uid   int
		code  int
		wants []string
	}{
		{"unknown name", []string{"nope", "--state", state}, -1, 1, []string{`no dataset "nope"`, "dataset list"}},
		{"a --matrix dataset's current cache", []string{"m", "--state", state}, -1, 0, nil},
		{"another user's state", []string{"gen", "--state", state}, os.Getuid() + 1, 1, []string{"not to you", "only the data owner", "as that user"}},
		{"no state", []string{"gen", "--state", filepath.Join(dir, "elsewhere")}, -1, 1, []string{"no privnotes state"}},
		{"no name", []string{"--state", state}, -1, 2, []string{"missing the dataset NAME"}},
	} {
		currentUID = os.Getuid
		if c.uid >= 0 {
			currentUID = func() int { return c.uid }
		}
		code, _, errs := runCLI(append([]string{"dataset", "recache"}, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d (%q)", c.name, code, c.code, errs)
		}
		for _, w := range c.wants {
			if code != c.code || !strings.Contains(errs, w) {
				t.Errorf("%s: exit %d, stderr %q lacks %q", c.name, code, errs, w)
			}
		}
	}
	if got, _ := os.ReadFile(snapshot.CachePath(strings.TrimSuffix(cache, ".rows") + ".parquet")); string(got) != string(current) {
		t.Error("a refused recache changed the cache")
	}
}
