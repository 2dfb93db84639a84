package testfix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A table registered in a fresh state directory has its schema, and a
// second handle on the directory (RegisterIn) sees the first's dataset.
func TestStoreTableRegister(t *testing.T) {
	dir := t.TempDir()
	st := Store(t, dir)
	tab := Table(t, "a,b\n1,2\n3,4\n")
	if tab.Rows != 2 || strings.Join(tab.Columns, ",") != "a,b" {
		t.Fatalf("table: %d rows, columns %v", tab.Rows, tab.Columns)
	}
	sc := Register(t, st, ledger.Registration{Name: "d", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Clip: 1})
	if sc.Name != "d" || sc.D != 2 {
		t.Errorf("schema %+v", sc)
	}
	RegisterIn(t, dir, ledger.Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Clip: 1})
	if _, err := st.Schema("e"); err != nil {
		t.Errorf("the dataset registered through another handle: %v", err)
	}
}

// WriteFile writes what it is given where it says.
func TestWriteFile(t *testing.T) {
	p := WriteFile(t, t.TempDir(), "x.csv", "a\n1\n")
	if b, err := os.ReadFile(p); err != nil || string(b) != "a\n1\n" || filepath.Base(p) != "x.csv" {
		t.Errorf("%s: %q, %v", p, b, err)
	}
}

// fakeT records failures instead of failing the test that checks Golden.
type fakeT struct {
	testing.TB
	errs []string
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.errs = append(f.errs, "error") }
func (f *fakeT) Fatal(...any)          { f.errs = append(f.errs, "fatal") }

// Golden accepts the recorded bytes, refuses a changed line or a changed
// length, and records got when asked to.
func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	for _, tc := range []struct {
		got    string
		update bool
		fails  bool
	}{
		{"a\nb\n", true, false},
		{"a\nb\n", false, false},
		{"a\nc\n", false, true},
		{"a\nb\nc\n", false, true},
		{"a\nc\n", true, false},
		{"a\nc\n", false, false},
	} {
		f := &fakeT{}
		Golden(f, path, []byte(tc.got), tc.update)
		if (len(f.errs) > 0) != tc.fails {
			t.Errorf("Golden(%q, update=%v): failures %v, want failing %v", tc.got, tc.update, f.errs, tc.fails)
		}
	}
	f := &fakeT{}
	Golden(f, filepath.Join(t.TempDir(), "missing"), []byte("x"), false)
	if len(f.errs) == 0 {
		t.Error("a missing recording was accepted")
	}
}
