package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// chargeRelease charges d with a release row named name and seals value.
func chargeRelease(t *testing.T, st *Store, name, call, value string) int64 {
	t.Helper()
	rc, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{Release: &ReleaseMeta{Name: name, Call: call}})
	if err != nil {
		t.Fatal(err)
	}
	if value != "" {
		if _, err := st.SealRelease(context.Background(), rc.ID, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	return rc.ID
}

// A release is reserved with its charge (with its name, unique per
// dataset), sealed once after the run, found by name, and exported.
func TestStoredReleases(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	id := chargeRelease(t, st, "a", `{"eps":1}`, `{"kind":"count"}`)
	if _, err := st.SealRelease(context.Background(), id, []byte(`{}`)); err == nil {
		t.Error("a release was sealed twice")
	}
	nr, err := st.Named("d", "a")
	if err != nil || nr == nil || nr.Record != id || nr.Value != `{"kind":"count"}` || nr.Call != `{"eps":1}` || nr.Event.Eps != 1 || !nr.Sealed() {
		t.Fatalf("Named = %+v, %v", nr, err)
	}
	if nr, err := st.Named("d", "b"); nr != nil || err != nil {
		t.Errorf("Named(b) = %+v, %v, want none", nr, err)
	}
	// A taken name refuses the charge whole: nothing recorded.
	before, _ := st.Status("d")
	_, err = st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{Release: &ReleaseMeta{Name: "a", Call: `{}`}})
	if !errors.Is(err, ErrNameTaken) {
		t.Fatalf("charge with a taken name: %v", err)
	}
	if after, _ := st.Status("d"); after.Charges != before.Charges {
		t.Errorf("the refused charge was recorded: %d charges, want %d", after.Charges, before.Charges)
	}
	unsealed := chargeRelease(t, st, "", `{}`, "") // an unnamed call whose run failed
	rels, err := st.Releases("d")
	if err != nil || len(rels) != 2 || rels[1].Record != unsealed || rels[1].Sealed() {
		t.Fatalf("Releases = %+v, %v", rels, err)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := st.Export(&buf, true); err != nil {
		t.Fatal(err)
	}
	doc, err := ReadExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyExport(doc)
	if err != nil {
		t.Fatal(err)
	}
	if v.Releases[id].ValueHash != nr.ValueHash || v.Totals["d"].Charges != 2 || v.Totals["d"].Budget.Eps != 10 {
		t.Errorf("verified export: %+v", v.Totals)
	}
}

// The chain covers the stored releases: altering a release's values, its
// hash, its name or the record it belongs to in SQLite is found by Verify,
// and by VerifyExport in an exported copy.
func TestReleaseTamper(t *testing.T) {
	for _, tc := range []struct{ what, sql, reason string }{
		{"values", `UPDATE releases SET value = replace(value, '41', '42')`, "do not match their release hash"},
		{"values and value hash", `UPDATE releases SET value = '{"v":42}', value_hash = '` + sha(`{"v":42}`) + `'`, "does not match its hash"},
		{"name", `UPDATE releases SET name = 'other' WHERE record = 2`, "does not match its hash"},
		{"record", `UPDATE releases SET record = 4`, "does not match its hash"},
		{"dataset", `UPDATE releases SET dataset = 'e'`, "no charge record"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			st, dir := openTemp(t)
			register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
			chargeRelease(t, st, "a", `{}`, `{"v":41}`)
			chargeRelease(t, st, "", `{}`, "")
			db := rawDB(t, dir)
			if _, err := db.Exec(tc.sql); err == nil {
				t.Fatalf("%s succeeded with the triggers in place", tc.sql)
			}
			for _, trg := range []string{"releases_sealed", "releases_fixed"} {
				if _, err := db.Exec(`DROP TRIGGER ` + trg); err != nil {
					t.Fatal(err)
				}
			}
			if tc.what == "record" { // free record 4's row first (record 3 seals record 2)
				if _, err := db.Exec(`DROP TRIGGER releases_append_only_delete`); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`DELETE FROM releases WHERE record = 4`); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			var ce *ChainError
			if err := st.Verify(); !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("Verify = %v, want %q", err, tc.reason)
			}
			doc, err := st.ExportDoc()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyExport(doc); !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("VerifyExport = %v, want %q", err, tc.reason)
			}
		})
	}
}

// An exported ledger verifies on its own, and editing it is found: a
// record's cost, the stated head, a stated budget.
func TestVerifyExportTamper(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	chargeRelease(t, st, "a", `{}`, `{"v":1}`)
	fresh := func() *ExportDoc {
		doc, err := st.ExportDoc()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyExport(doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	for _, tc := range []struct {
		what   string
		edit   func(*ExportDoc)
		reason string
	}{
		{"cost", func(d *ExportDoc) { d.Chain[1].Event = strings.Replace(d.Chain[1].Event, `"Eps":1`, `"Eps":0.1`, 1) }, "altered"},
		{"cut", func(d *ExportDoc) { d.Chain, d.Releases = d.Chain[:1], nil }, "head"},
		{"budget", func(d *ExportDoc) { d.Budgets[0].Budget.Eps = 100 }, "stated budget"},
		{"release", func(d *ExportDoc) { d.Releases[0].Value = `{"v":2}` }, "release hash"},
	} {
		doc := fresh()
		tc.edit(doc)
		var ce *ChainError
		if _, err := VerifyExport(doc); !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: VerifyExport = %v, want %q", tc.what, err, tc.reason)
		}
	}
	if _, err := ReadExport(strings.NewReader(`{"schema_version": 1, "records": []}`)); err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("an old export: %v", err)
	}
}

// A state directory of schema version 3 (no releases table) is upgraded
// in place: its charges have no release, and it verifies.
func TestUpgradeToReleases(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	if _, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db := rawDB(t, dir)
	for _, q := range []string{`DROP TABLE releases`, `UPDATE schema_version SET version = 3`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if v := storedVersion(t, dir); v != SchemaVersion {
		t.Errorf("version %d after the upgrade, want %d", v, SchemaVersion)
	}
	if rels, err := st2.Releases(""); err != nil || len(rels) != 0 {
		t.Errorf("releases after the upgrade: %v, %v", rels, err)
	}
	if err := st2.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := st2.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{Release: &ReleaseMeta{Name: "n", Call: `{}`}}); err != nil {
		t.Fatal(err)
	}
}

func sha(s string) string { return hashHex([]byte(s)) }

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// BenchmarkChargeWithRelease compares a bare charge with a charge that
// reserves a release row and seals a release of 30×2 values after it, as
// every private call on registered data now does (one more durable write).
func BenchmarkChargeWithRelease(b *testing.B) {
	st, _ := openTemp(b)
	register(b, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1e12})
	ev := withMech(accounting.Pure(1e-3), "bench")
	value := []byte(`{"columns":[],"fields":{"components":[` + strings.Repeat(`[0.12345678901234567,-0.9876543210987654],`, 29) + `[0.1,0.2]]},"kind":"pca"}`)
	b.Run("charge", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Charge(context.Background(), "d", ev, ChargeMeta{Cell: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("charge+seal", func(b *testing.B) {
		for b.Loop() {
			rc, err := st.Charge(context.Background(), "d", ev, ChargeMeta{Cell: "bench", Release: &ReleaseMeta{Call: `{"function":"private_pca"}`}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.SealRelease(context.Background(), rc.ID, value); err != nil {
				b.Fatal(err)
			}
		}
	})
}
