package verify

import (
	"bytes"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// partialVerified is the partial export of datasets of dir's ledger,
// written and read back as `notebook verify --ledger` reads the file, and
// verified.
func partialVerified(t *testing.T, dir string, datasets ...string) *ledger.Verified {
	t.Helper()
	st, err := ledger.OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	if err := st.Export(&buf, true, datasets...); err != nil {
		t.Fatal(err)
	}
	doc, err := ledger.ReadExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.VerifyExport(doc)
	if err != nil {
		t.Fatalf("the partial export does not verify: %v", err)
	}
	return led
}

// A notebook verifies against a partial export of its datasets, although
// records of another dataset fall between its charges (the receipts'
// budget left is replayed from the exported dataset's records alone); an
// output of a dataset the export leaves out fails, saying what to export.
func TestCheckPartialExport(t *testing.T) {
	dir := newState(t, false)
	s := newSession(t, dir)
	s.cell(`ds := dataset("people")`)
	s.cell(`a := private_count(ds, eps=0.5)
a`)
	s.cell(`o := private_count(dataset("others"), eps=0.25)
o`)
	s.cell(`b := private_mean(ds, col="age", eps=0.5)
b`)
	peopleOnly := &Notebook{Cells: clone(t, []Cell{s.cells[0], s.cells[1], s.cells[3]})}
	for _, tc := range []struct {
		name     string
		nb       *Notebook
		datasets []string
		ok       bool
		want     string
	}{
		{"its dataset", peopleOnly, []string{"people"}, true, "dataset people: 2 output(s) from 2 charge(s) (records 3, 7)"},
		{"its datasets", s.notebook(), []string{"people", "others"}, true, "dataset others: 1 output(s)"},
		{"a dataset left out", s.notebook(), []string{"people"}, false, "ledger record 5 is not in this partial export of people: export the notebook's datasets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.nb, partialVerified(t, dir, tc.datasets...))
			var out strings.Builder
			for _, l := range rep.Lines {
				out.WriteString(l.String() + "\n")
			}
			for _, tot := range rep.Totals {
				out.WriteString(tot.String() + "\n")
			}
			if rep.OK() != tc.ok || !strings.Contains(out.String(), tc.want) {
				t.Errorf("OK %v, want %v, and %q in:\n%s", rep.OK(), tc.ok, tc.want, out.String())
			}
			if n, _ := rep.Count(); tc.ok && n != len(tc.nb.Cells)-1 {
				t.Errorf("%d output(s) verified, want %d:\n%s", n, len(tc.nb.Cells)-1, out.String())
			}
		})
	}
}
