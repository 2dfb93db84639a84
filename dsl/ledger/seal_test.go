package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// sealedDoc is the exported ledger the seal tests tamper with: 1 register,
// 2 charge "a", 3 its seal, 4 a charge whose release was never sealed,
// 5 charge "c", 6 its seal.
func sealedDoc(t *testing.T) *ExportDoc {
	t.Helper()
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	chargeRelease(t, st, "a", `{"eps":1}`, `{"v":41}`)
	chargeRelease(t, st, "b", `{"eps":1}`, "")
	chargeRelease(t, st, "c", `{"eps":1}`, `{"v":7}`)
	doc, err := st.ExportDoc()
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, c := range doc.Chain {
		kinds = append(kinds, c.Kind)
	}
	if want := []string{"register", "charge", "seal", "charge", "charge", "seal"}; !slices.Equal(kinds, want) {
		t.Fatalf("chain %v, want %v", kinds, want)
	}
	return doc
}

// forge rebuilds doc as someone holding only the file could: records
// renumbered in their new order, every record hash and release row hash
// recomputed, the head restated and, with reseal, every seal record
// rewritten to match the (edited) release it names.
func forge(t *testing.T, doc *ExportDoc, reseal bool) {
	t.Helper()
	newID := map[int64]int64{}
	for i, c := range doc.Chain {
		newID[c.ID] = int64(i + 1)
	}
	for i := range doc.Releases {
		doc.Releases[i].Record = newID[doc.Releases[i].Record]
	}
	prev := genesis
	for i := range doc.Chain {
		c := &doc.Chain[i]
		c.ID, c.PrevHash = int64(i+1), prev
		if c.Kind == "seal" {
			var p sealParams
			if err := json.Unmarshal([]byte(c.Params), &p); err != nil {
				t.Fatal(err)
			}
			p.Record = newID[p.Record]
			for _, r := range doc.Releases {
				if reseal && r.Record == p.Record && r.Sealed() {
					p = sealOf(r)
				}
			}
			b, _ := json.Marshal(p)
			c.Params = string(b)
		}
		c.Hash = c.record().computeHash()
		prev = c.Hash
		for j := range doc.Releases {
			if r := &doc.Releases[j]; r.Record == c.ID && r.Sealed() {
				r.Hash = releaseHash(c.Hash, *r)
			}
		}
	}
	doc.HeadID, doc.HeadHash = int64(len(doc.Chain)), prev
}

// editValue changes release i's values and restates its release hash and
// row hash, as the pre-v5 weakness allowed.
func editValue(doc *ExportDoc, i int, value string) {
	r := &doc.Releases[i]
	r.Value, r.ValueHash = value, sha(value)
	for _, c := range doc.Chain {
		if c.ID == r.Record {
			r.Hash = releaseHash(c.Hash, *r)
		}
	}
}

// Tampering with a stored value, a seal record, the order of the records
// or deleting a seal is found by verifying the exported ledger against
// the head its owner published, and nothing else (no digest of the file).
func TestSealTamper(t *testing.T) {
	for _, tc := range []struct {
		what string
		edit func(t *testing.T, d *ExportDoc)
		want string // in the error of VerifyExport, or "head" when only the published head differs
	}{
		{"value", func(t *testing.T, d *ExportDoc) { d.Releases[0].Value = `{"v":42}` }, "release hash"},
		{"value, release and row hash restated", func(t *testing.T, d *ExportDoc) { editValue(d, 0, `{"v":42}`) }, "does not match its seal record"},
		{"value restated and the seal record rewritten", func(t *testing.T, d *ExportDoc) {
			editValue(d, 0, `{"v":42}`)
			b, _ := json.Marshal(sealOf(d.Releases[0]))
			d.Chain[2].Params = string(b)
		}, "altered"},
		{"value restated and the whole chain forged", func(t *testing.T, d *ExportDoc) {
			editValue(d, 0, `{"v":42}`)
			forge(t, d, true)
		}, "head"},
		{"name restated and the chain forged without resealing", func(t *testing.T, d *ExportDoc) {
			d.Releases[2].Name = "z"
			forge(t, d, false)
		}, "does not match its seal record"},
		{"seal record's release hash", func(t *testing.T, d *ExportDoc) {
			d.Chain[5].Params = strings.Replace(d.Chain[5].Params, d.Releases[2].ValueHash, sha("x"), 1)
		}, "altered"},
		{"seal record deleted, chain forged", func(t *testing.T, d *ExportDoc) {
			d.Chain = slices.Delete(d.Chain, 2, 3)
			forge(t, d, false)
		}, "no seal record"},
		{"last seal deleted, head restated", func(t *testing.T, d *ExportDoc) {
			d.Chain = d.Chain[:5]
			d.HeadID, d.HeadHash = 5, d.Chain[4].Hash
		}, "no seal record"},
		{"seal deleted and the release unsealed, chain forged", func(t *testing.T, d *ExportDoc) {
			d.Chain = d.Chain[:5]
			r := &d.Releases[2]
			r.Value, r.ValueHash, r.Hash = "", "", ""
			forge(t, d, false)
		}, "head"},
		{"records swapped", func(t *testing.T, d *ExportDoc) { d.Chain[2], d.Chain[3] = d.Chain[3], d.Chain[2] }, "missing or reordered"},
		{"seal moved before its charge, chain forged", func(t *testing.T, d *ExportDoc) {
			d.Chain[1], d.Chain[2] = d.Chain[2], d.Chain[1]
			forge(t, d, true)
		}, "not an earlier charge"},
		{"seals reordered, chain forged", func(t *testing.T, d *ExportDoc) {
			seal := d.Chain[2]
			d.Chain = append(slices.Delete(d.Chain, 2, 3), seal)
			forge(t, d, true)
		}, "head"},
		{"seal duplicated, chain forged", func(t *testing.T, d *ExportDoc) {
			d.Chain = append(d.Chain, d.Chain[2])
			forge(t, d, true)
		}, "already sealed"},
		{"seal pointed at the unsealed release, chain forged", func(t *testing.T, d *ExportDoc) {
			d.Chain[5].Params = strings.Replace(d.Chain[5].Params, `"record":5`, `"record":4`, 1)
			forge(t, d, false)
		}, "seals a release that is not stored"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			doc := sealedDoc(t)
			published := doc.HeadHash
			tc.edit(t, doc)
			_, err := VerifyExport(doc)
			if tc.want == "head" {
				if err != nil {
					t.Fatalf("VerifyExport = %v; the forgery should verify on its own", err)
				}
				if doc.HeadHash == published {
					t.Fatal("the forged ledger ends in the published head")
				}
				return
			}
			var ce *ChainError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyExport = %v, want %q", err, tc.want)
			}
		})
	}
}

// The same in a state directory: a value restated with its hashes, or a
// seal record deleted, is found by Verify.
func TestSealTamperState(t *testing.T) {
	restated := func(t *testing.T, db *sql.DB) string {
		var charge string
		if err := db.QueryRow(`SELECT hash FROM ledger WHERE id = 2`).Scan(&charge); err != nil {
			t.Fatal(err)
		}
		r := StoredRelease{Record: 2, Dataset: "d", Name: "a", Call: `{}`, Value: `{"v":42}`, ValueHash: sha(`{"v":42}`)}
		return fmt.Sprintf(`UPDATE releases SET value = '%s', value_hash = '%s', hash = '%s'`, r.Value, r.ValueHash, releaseHash(charge, r))
	}
	for _, tc := range []struct {
		what string
		drop string
		sql  func(*testing.T, *sql.DB) string
		want string
	}{
		{"value restated with its hashes", "releases_sealed", restated, "does not match its seal record"},
		{"seal record deleted", "ledger_append_only_delete", func(*testing.T, *sql.DB) string { return `DELETE FROM ledger WHERE id = 3` }, "no seal record"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			st, dir := openTemp(t)
			register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
			chargeRelease(t, st, "a", `{}`, `{"v":41}`)
			db := rawDB(t, dir)
			q := tc.sql(t, db)
			if _, err := db.Exec(q); err == nil {
				t.Fatalf("%s succeeded with the triggers in place", q)
			}
			if _, err := db.Exec(`DROP TRIGGER ` + tc.drop); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			if err := st.Verify(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify = %v, want %q", err, tc.want)
			}
		})
	}
}

// A seal record carries no cost: sealing changes neither a dataset's
// totals, nor its charge count, nor what a verified export replays.
func TestSealCostsNothing(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	ctx := context.Background()
	rc, err := st.Charge(ctx, "d", withMech(accounting.ZcdpFor(0.3, 1e-7), "m"), ChargeMeta{Release: &ReleaseMeta{Call: `{}`}})
	if err != nil {
		t.Fatal(err)
	}
	totals := func() string {
		var s string
		if err := rawDB(t, dir).QueryRow(`SELECT state FROM totals WHERE dataset = 'd'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, err := st.Status("d")
	if err != nil {
		t.Fatal(err)
	}
	tBefore := totals()
	if _, err := st.SealRelease(ctx, rc.ID, []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	after, err := st.Status("d")
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before || totals() != tBefore {
		t.Errorf("sealing changed the budget: %+v (totals %s) after, %+v (totals %s) before", after, totals(), before, tBefore)
	}
	if id, _, _ := st.Head(); id != rc.ID+1 {
		t.Errorf("head %d after the seal, want the seal record %d", id, rc.ID+1)
	}
	doc, err := st.ExportDoc()
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyExport(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Totals["d"]; got.Spent != before.Spent || got.Charges != 1 {
		t.Errorf("verified totals %+v, want spent %v in 1 charge", got, before.Spent)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
}

// Charges and seals from two handles on one state directory (two
// connection pools: SQLite locks the file as it would between processes)
// serialise: every seal is chained once, after its charge, and the ledger
// verifies.
func TestConcurrentSeals(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1000})
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const perHandle = 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*perHandle)
	for h, s := range []*Store{st, other} {
		wg.Go(func() {
			for i := range perHandle {
				rc, err := s.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{Release: &ReleaseMeta{Name: fmt.Sprintf("h%d-%d", h, i), Call: `{}`}})
				if err == nil {
					_, err = s.SealRelease(context.Background(), rc.ID, []byte(fmt.Sprintf(`{"h":%d,"i":%d}`, h, i)))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	recs, err := chainRecords(st, "d")
	if err != nil {
		t.Fatal(err)
	}
	seals := 0
	for _, r := range recs {
		if r.Kind == "seal" {
			seals++
		}
	}
	if seals != 2*perHandle || len(recs) != 1+4*perHandle {
		t.Errorf("%d records, %d seals; want %d and %d", len(recs), seals, 1+4*perHandle, 2*perHandle)
	}
	// The readable listing holds the registration and the charges only.
	if es, err := st.Entries("d"); err != nil || len(es) != 1+2*perHandle {
		t.Errorf("Entries: %d, %v; want the registration and %d charges", len(es), err, 2*perHandle)
	}
}

// TestUpgradeSchema4: a state directory of schema version 4 (stored
// releases, no seal records; testdata/schema4) is upgraded at open: the
// old records stay as they were, a seal record is chained for each sealed
// release in record order, the budgets are unchanged, and it verifies.
func TestUpgradeSchema4(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "schema4", DBName))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBName), fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	var oldHead string
	if err := rawDB(t, dir).QueryRow(`SELECT hash FROM ledger WHERE id = 8`).Scan(&oldHead); err != nil {
		t.Fatal(err)
	}
	if v := storedVersion(t, dir); v != 4 {
		t.Fatalf("fixture version %d, want 4", v)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v := storedVersion(t, dir); v != SchemaVersion {
		t.Errorf("version %d after the upgrade, want %d", v, SchemaVersion)
	}
	recs, err := chainRecords(st, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 12 || recs[7].Hash != oldHead || !strings.HasPrefix(oldHead, "7c26a2eadc54") {
		t.Fatalf("%d records, record 8 %s; want 12, the fixture's 8 unchanged (7c26a2eadc54…)", len(recs), ShortHash(recs[7].Hash))
	}
	var sealed []int64
	for _, r := range recs[8:] {
		var p sealParams
		if r.Kind != "seal" || r.Cell != UpgradeSealCell || json.Unmarshal([]byte(r.Params), &p) != nil {
			t.Fatalf("record %d: %+v, want a seal record of the upgrade", r.ID, r)
		}
		sealed = append(sealed, p.Record)
	}
	if want := []int64{3, 4, 5, 8}; !slices.Equal(sealed, want) {
		t.Errorf("the upgrade sealed records %v, want %v (the sealed releases in order)", sealed, want)
	}
	for ds, want := range map[string]struct {
		eps     float64
		charges int
	}{"d": {2, 4}, "z": {0, 2}} {
		s, err := st.Status(ds)
		if err != nil {
			t.Fatal(err)
		}
		if s.Charges != want.charges || (ds == "d" && s.Spent.Eps != want.eps) {
			t.Errorf("%s after the upgrade: %+v, want %d charges (ε %v for d)", ds, s, want.charges, want.eps)
		}
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	doc, err := st.ExportDoc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyExport(doc); err != nil {
		t.Fatal(err)
	}
	// The upgraded ledger keeps working: a new release is sealed by a record of its own.
	id := chargeRelease(t, st, "after", `{}`, `{"v":1}`)
	if hid, _, _ := st.Head(); hid != id+1 {
		t.Errorf("head %d, want the new seal %d", hid, id+1)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
}

// An export written before seal records (version 2) is refused with what
// to do: its head does not cover the stored values.
func TestOldExportRefused(t *testing.T) {
	_, err := ReadExport(strings.NewReader(`{"schema_version": 2, "records": [], "chain": [], "releases": []}`))
	if err == nil || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "export it again") {
		t.Errorf("a version-2 export: %v", err)
	}
}
