package ledger

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// secretWords are what the records of dataset "hidden" hold that nothing
// of dataset "d" does: its name, a column, its mechanism, a release's
// name, value and call, and a cell id. A partial export of "d" must show
// none of them.
var secretWords = []string{"hidden", "zzsecretcol", "secret/mech", "secretname", "SECRETVALUE", "secretcall", "secretcell"}

// partialStore is a ledger whose records interleave two datasets, the
// last record being one of "hidden" (so that the head is a redacted
// link of a partial export of "d"): 1 register d, 2 register hidden,
// 3 charge d, 4 its seal, 5 charge hidden, 6 its seal, 7 charge d (no
// release), 8 charge hidden, 9 its seal.
func partialStore(t *testing.T) *Store {
	t.Helper()
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	tab, err := dataset.Read(strings.NewReader("zzsecretcol\n1\n2\n3\n"), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Register(context.Background(), Registration{Name: "hidden", Table: tab, Budget: accounting.Budget{Eps: 3}, Accountant: accounting.ModeBasic, Clip: 1, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	chargeRelease(t, st, "a", `{"eps":1}`, `{"v":41}`)
	hidden := func(name string) {
		t.Helper()
		ctx := context.Background()
		rc, err := st.Charge(ctx, "hidden", withMech(accounting.Pure(0.5), "secret/mech"),
			ChargeMeta{Cell: "secretcell", Release: &ReleaseMeta{Name: name, Call: `{"secretcall":1}`}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SealRelease(ctx, rc.ID, []byte(`{"v":"SECRETVALUE"}`)); err != nil {
			t.Fatal(err)
		}
	}
	hidden("secretname")
	if _, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
		t.Fatal(err)
	}
	hidden("secretname2")
	return st
}

// partialDoc is the partial export of "d" of partialStore, read back
// from its JSON as a reader of the file gets it, and the JSON.
func partialDoc(t *testing.T, st *Store) (*ExportDoc, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := st.Export(&buf, true, "d"); err != nil {
		t.Fatal(err)
	}
	doc, err := ReadExport(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, buf.Bytes()
}

// A partial export holds the named dataset's records, releases and
// budget, a redacted link for every other record, and the real head; it
// verifies on its own, its totals replayed from its records; and nothing
// of the other dataset is in it.
func TestPartialExport(t *testing.T) {
	st := partialStore(t)
	doc, raw := partialDoc(t, st)
	for _, w := range secretWords {
		if bytes.Contains(raw, []byte(w)) {
			t.Errorf("the partial export of d holds %q, of the other dataset:\n%s", w, raw)
		}
	}
	headID, head, err := st.Head()
	if err != nil {
		t.Fatal(err)
	}
	if doc.HeadID != headID || doc.HeadHash != head || headID != 9 {
		t.Errorf("stated head %d %s, want the ledger's, record %d %s", doc.HeadID, doc.HeadHash, headID, head)
	}
	if !slices.Equal(doc.Datasets, []string{"d"}) {
		t.Errorf("datasets %q, want [d]", doc.Datasets)
	}
	var redacted []int64
	for _, c := range doc.Chain {
		if c.Redacted {
			redacted = append(redacted, c.ID)
		}
	}
	if want := []int64{2, 5, 6, 8, 9}; !slices.Equal(redacted, want) {
		t.Errorf("redacted links %v, want %v", redacted, want)
	}
	if len(doc.Releases) != 1 || len(doc.Budgets) != 1 || doc.Budgets[0].Dataset != "d" {
		t.Errorf("releases %+v, budgets %+v: want d's only", doc.Releases, doc.Budgets)
	}
	for _, e := range doc.Records {
		if e.Dataset != "d" {
			t.Errorf("readable record %d of %q", e.ID, e.Dataset)
		}
	}
	v, err := VerifyExport(doc)
	if err != nil {
		t.Fatalf("the partial export does not verify: %v", err)
	}
	if tot := v.Totals["d"]; tot.Charges != 2 || tot.Spent.Eps != 2 || len(v.Totals) != 1 {
		t.Errorf("totals %+v, want d's only: 2 charges, ε 2", v.Totals)
	}
	if len(v.Redacted) != 5 || !slices.Equal(v.Datasets, []string{"d"}) {
		t.Errorf("verified redacted %v, datasets %v", v.Redacted, v.Datasets)
	}
	// The whole export still verifies and names no datasets.
	whole, err := st.ExportDoc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyExport(whole); err != nil || whole.Datasets != nil {
		t.Errorf("whole export: datasets %v, %v", whole.Datasets, err)
	}
	if _, err := st.ExportDoc("nosuch"); err == nil || !strings.Contains(err.Error(), `no dataset "nosuch"`) {
		t.Errorf("an export of an unknown dataset: %v", err)
	}
}

// A partial export edited by someone holding only the file fails to
// verify: its redacted links are checked for their place in the chain,
// its full records for being of the named datasets, and the named
// datasets for having their registration.
func TestPartialExportTamper(t *testing.T) {
	st := partialStore(t)
	whole, err := st.ExportDoc()
	if err != nil {
		t.Fatal(err)
	}
	at := func(doc *ExportDoc, id int64) *ChainRecord { return &doc.Chain[id-1] }
	for _, tc := range []struct {
		name string
		edit func(doc *ExportDoc)
		want string
	}{
		{"a redacted link dropped", func(doc *ExportDoc) {
			doc.Chain = slices.Delete(doc.Chain, 4, 5) // record 5
		}, "expected id 5"},
		{"a redacted link's hash changed", func(doc *ExportDoc) {
			at(doc, 5).Hash = strings.Repeat("a", 64)
		}, "prev_hash does not match the hash of record 5"},
		{"a redacted link's prev_hash changed", func(doc *ExportDoc) {
			at(doc, 2).PrevHash = strings.Repeat("b", 64)
		}, "record 2: prev_hash does not match"},
		{"the head, a redacted link, restated", func(doc *ExportDoc) {
			at(doc, 9).Hash = strings.Repeat("c", 64)
		}, "the stated head"},
		{"a redacted link's hash not a hash", func(doc *ExportDoc) {
			at(doc, 9).Hash, doc.HeadHash = "x", "x"
		}, "not a SHA-256"},
		{"a redacted link with content", func(doc *ExportDoc) {
			at(doc, 2).Dataset = "d"
		}, "redacted link with content"},
		{"a record of a dataset not named", func(doc *ExportDoc) {
			*at(doc, 2) = *at(whole, 2)
		}, `dataset "hidden", which this partial export does not name`},
		{"a redacted link in a whole export", func(doc *ExportDoc) {
			doc.Datasets = nil
		}, "redacted link in an export of the whole ledger"},
		{"a named dataset's registration redacted", func(doc *ExportDoc) {
			*at(doc, 1) = at(doc, 1).redact()
		}, `charge to dataset "d" before its registration`},
		{"a named dataset's every record redacted", func(doc *ExportDoc) {
			for _, id := range []int64{1, 3, 4, 7} {
				*at(doc, id) = at(doc, id).redact()
			}
			doc.Releases, doc.Budgets = nil, nil
		}, `dataset "d" but holds no register record`},
		{"a named dataset without records", func(doc *ExportDoc) {
			doc.Datasets = append(doc.Datasets, "e")
		}, `dataset "e" but holds no register record`},
		{"a charge with a stored release redacted", func(doc *ExportDoc) {
			*at(doc, 3) = at(doc, 3).redact()
		}, "seal of record 3, which is not an earlier charge"},
		{"a charge redacted, its budget left as stated", func(doc *ExportDoc) {
			*at(doc, 7) = at(doc, 7).redact()
		}, "the stated budget"},
		{"a full record altered", func(doc *ExportDoc) {
			at(doc, 7).Cell = "other"
		}, "record 7: content does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, _ := partialDoc(t, st)
			if _, err := VerifyExport(doc); err != nil {
				t.Fatalf("before the edit: %v", err)
			}
			tc.edit(doc)
			// In memory: written as JSON, a redacted link would lose
			// the content that one case adds.
			_, err := VerifyExport(doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifyExport = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// An export of version 3 (before partial exports) is refused with what
// to do.
func TestExportVersion3Refused(t *testing.T) {
	_, err := ReadExport(strings.NewReader(`{"schema_version": 3, "records": [], "chain": [], "releases": []}`))
	if err == nil || !strings.Contains(err.Error(), "version 3") || !strings.Contains(err.Error(), "export it again") {
		t.Errorf("a version-3 export: %v", err)
	}
}
