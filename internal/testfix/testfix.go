// Package testfix holds the fixtures that the tests of several packages
// share: a state directory's ledger, a dataset table read from CSV text
// and registered, a file written for a command or a snapshot build to
// read, and output compared with a recorded copy in testdata.
//
// Every helper takes the test and fails it (t.Fatal) on an error, so a
// test reads as the steps it checks. It is imported by tests only.
package testfix

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
)

// Store opens the ledger of the state directory dir, or of a new
// temporary one when dir is "", and closes it when the test ends.
func Store(t testing.TB, dir string) *ledger.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Table reads CSV text (a header line, then one line a row) as a
// dataset table with dataset.Read's default options.
func Table(t testing.TB, csv string) *dataset.Table {
	t.Helper()
	tab, err := dataset.Read(strings.NewReader(csv), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// Register registers r in st and returns the dataset's public schema,
// what a call on it is planned from.
func Register(t testing.TB, st *ledger.Store, r ledger.Registration) ledger.Schema {
	t.Helper()
	if _, err := st.Register(context.Background(), r); err != nil {
		t.Fatalf("Register(%s): %v", r.Name, err)
	}
	sc, err := st.Schema(r.Name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// RegisterIn registers r in the state directory dir through a ledger
// handle of its own, closed before it returns, as `privnotes dataset add`
// would from another process.
func RegisterIn(t testing.TB, dir string, r ledger.Registration) {
	t.Helper()
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Register(context.Background(), r); err != nil {
		t.Fatalf("Register(%s): %v", r.Name, err)
	}
}

// WriteFile writes content to dir/name (readable by its owner only, as
// the tests' data files are) and returns its path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Golden compares got with the recorded output in the file path, after
// rewriting that file with got when update is set (a test's -update
// flag), and reports the first line that differs.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range min(len(gl), len(wl)) {
		if !bytes.Equal(gl[i], wl[i]) {
			t.Errorf("%s: line %d differs:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			return
		}
	}
	t.Errorf("%s: %d lines, want %d", path, len(gl), len(wl))
}
