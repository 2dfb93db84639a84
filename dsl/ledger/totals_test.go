package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// copyOldState copies testdata/schema1/state.db, a state directory written
// by privnotes before schema version 2 (see testdata/README.md), into a
// fresh directory: opening it upgrades it in place.
func copyOldState(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "schema1", DBName))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rawDB opens the state database without the Store, as someone with the
// file would.
func rawDB(t testing.TB, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func storedVersion(t testing.TB, dir string) int {
	t.Helper()
	var v int
	if err := rawDB(t, dir).QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUpgradeSchema1: an old state directory (registered and charged by
// the previous privnotes, with zcdp, basic and advanced datasets) is
// upgraded at open, verifies, keeps its spending, and keeps working.
func TestUpgradeSchema1(t *testing.T) {
	dir := copyOldState(t)
	if v := storedVersion(t, dir); v != 1 {
		t.Fatalf("fixture has schema version %d, want 1", v)
	}
	var head1 string
	rawDB(t, dir).QueryRow(`SELECT hash FROM ledger ORDER BY id DESC LIMIT 1`).Scan(&head1)
	// OpenExisting, as `ledger verify` does, upgrades too.
	st, err := OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v := storedVersion(t, dir); v != SchemaVersion {
		t.Errorf("schema version after open = %d, want %d", v, SchemaVersion)
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify after the upgrade: %v", err)
	}
	if _, h, _ := st.Head(); h != head1 {
		t.Errorf("the upgrade changed the chain head: %s, was %s", h, head1)
	}
	// Expected spending, from the fixture's charges (testdata/README.md)
	// composed by hand.
	rhoZC := 2*accounting.RhoForTarget(0.3, 1e-7) + 0.05*0.05/2 + 0.01*0.01/2
	tests := []struct {
		name    string
		mode    string
		charges int
		spent   accounting.Budget
	}{
		{"zc", "zcdp", 4, accounting.Budget{Eps: accounting.ZCDPToEps(rhoZC, 1e-6-1e-8), Delta: 1e-6}},
		{"basic", "basic", 2, accounting.Budget{Eps: 0.5, Delta: 0}},
		// advanced is basic now: 45 × (0.1, 1e-7) is ε = 4.5 > the budget
		// of 4 that the old rule (≈ 3.47) admitted.
		{"adv", "advanced", 45, accounting.Budget{Eps: 4.5, Delta: 4.5e-6}},
		{"users", "zcdp", 1, accounting.Budget{Eps: accounting.ZCDPToEps(accounting.MuForTarget(0.5, 1e-7)*accounting.MuForTarget(0.5, 1e-7)/2, 1e-6), Delta: 1e-6}},
	}
	for _, tc := range tests {
		s, err := st.Status(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Mode != tc.mode || s.Charges != tc.charges || math.Abs(s.Spent.Eps-tc.spent.Eps) > 1e-12*tc.spent.Eps ||
			math.Abs(s.Spent.Delta-tc.spent.Delta) > 1e-12*tc.spent.Delta {
			t.Errorf("%s: status %+v, want mode %s, %d charges, spent %v", tc.name, s, tc.mode, tc.charges, tc.spent)
		}
		sc, err := st.Schema(tc.name)
		if err != nil || sc.PublicN != 0 {
			t.Errorf("%s: PublicN of an old dataset = %d, %v; want 0 (private)", tc.name, sc.PublicN, err)
		}
		// The stored totals are those of a replay of the records.
		stored, err := getTotals(context.Background(), st.db, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		mode, _ := sc.Mode()
		replayed, err := replayState(context.Background(), st.db, tc.name, mode, sc.Budget)
		if err != nil || stored != replayed || stored.Events() != int64(tc.charges) {
			t.Errorf("%s: stored totals %v, replayed %v (%v)", tc.name, stored, replayed, err)
		}
	}
	ctx := context.Background()
	// The advanced dataset is over its budget under basic composition:
	// every further charge is refused, and nothing is recorded.
	_, err = st.Charge(ctx, "adv", withMech(accounting.ZcdpFor(1e-3, 1e-9), "test/after-upgrade"), ChargeMeta{})
	var ex *accounting.ExceededError
	if !errors.As(err, &ex) || math.Abs(ex.Spent.Eps-4.5) > 1e-12 {
		t.Errorf("charge to the upgraded advanced dataset = %v, want BudgetExceeded with spent ε=4.5", err)
	}
	// The others keep charging.
	if _, err := st.Charge(ctx, "zc", withMech(accounting.Pure(0.01), "test/after-upgrade"), ChargeMeta{Cell: "new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Charge(ctx, "basic", withMech(accounting.Pure(0.5), "test/after-upgrade"), ChargeMeta{Cell: "new"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Errorf("Verify after charging the upgraded ledger: %v", err)
	}
	// A second open finds it upgraded and changes nothing.
	st2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if s, _ := st2.Status("basic"); s.Spent.Eps != 1 || s.Charges != 3 {
		t.Errorf("after reopening: %+v", s)
	}
}

// An old ledger whose charges were replayable only under the old advanced
// rule must still verify, while a charge the old rule would have refused
// is still caught.
func TestVerifyLegacyAdvanced(t *testing.T) {
	dir := copyOldState(t)
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := rawDB(t, dir)
	if _, err := db.Exec(`DROP TRIGGER ledger_append_only_update`); err != nil {
		t.Fatal(err)
	}
	// Make the 45th advanced charge ε = 1 (re-hashing the chain after it,
	// as a forger would): the old rule refuses it too.
	var id int64
	if err := db.QueryRow(`SELECT max(id) FROM ledger WHERE dataset = 'adv'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	ev := withMech(accounting.ZcdpFor(1, 1e-7), "mean/gaussian")
	js, _ := json.Marshal(ev)
	if _, err := db.Exec(`UPDATE ledger SET event = ? WHERE id = ?`, string(js), id); err != nil {
		t.Fatal(err)
	}
	rehash(t, db, id)
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != id || !strings.Contains(ce.Reason, "exceeds the dataset's budget") {
		t.Errorf("Verify with an over-budget advanced charge = %v, want record %d", err, id)
	}
}

// rehash recomputes the hashes from record id on, so that only the
// semantic checks can catch an edit.
func rehash(t testing.TB, db *sql.DB, from int64) {
	t.Helper()
	prev := genesis
	if from > 1 {
		if err := db.QueryRow(`SELECT hash FROM ledger WHERE id = ?`, from-1).Scan(&prev); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT id, kind, dataset, mechanism, params, event, cell, time FROM ledger WHERE id >= ? ORDER BY id`, from)
	if err != nil {
		t.Fatal(err)
	}
	var recs []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.ID, &r.Kind, &r.Dataset, &r.Mechanism, &r.Params, &r.Event, &r.Cell, &r.Time); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	rows.Close()
	for _, r := range recs {
		r.PrevHash = prev
		r.Hash = r.computeHash()
		if _, err := db.Exec(`UPDATE ledger SET prev_hash = ?, hash = ? WHERE id = ?`, r.PrevHash, r.Hash, r.ID); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
}

// TestTotalsTamper: Verify re-derives every dataset's totals from its
// records and names the dataset whose stored totals differ; a missing row
// is reported, then rebuilt by the next charge.
func TestTotalsTamper(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "a", accounting.ModeBasic, accounting.Budget{Eps: 10})
	register(t, st, "b", accounting.ModeZCDP, accounting.Budget{Eps: 10, Delta: 1e-6})
	ctx := context.Background()
	for range 3 {
		if _, err := st.Charge(ctx, "b", withMech(accounting.ZcdpFor(0.5, 1e-8), "m"), ChargeMeta{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Charge(ctx, "a", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	var good string
	db.QueryRow(`SELECT state FROM totals WHERE dataset = 'a'`).Scan(&good)
	// A lower total would let the dataset overspend: 2 charges of ε=1.
	acc, _ := accounting.Replay(accounting.ModeBasic, accounting.Budget{Eps: 10}, []accounting.Event{accounting.Pure(1), accounting.Pure(1)})
	lower := acc.State()
	if _, err := db.Exec(`UPDATE totals SET state = ? WHERE dataset = 'a'`, lower.String()); err != nil {
		t.Fatal(err)
	}
	var ce *ChainError
	err := st.Verify()
	if !errors.As(err, &ce) || ce.Dataset != "a" || ce.ID != 8 || !strings.Contains(ce.Reason, `dataset "a": stored running totals`) {
		t.Errorf("Verify with lowered totals = %v, want dataset a named at record 8 (its last charge)", err)
	}
	// Garbage in the totals is reported by the reads that need it.
	if _, err := db.Exec(`UPDATE totals SET state = 'garbage' WHERE dataset = 'a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Status("a"); err == nil || !strings.Contains(err.Error(), `dataset "a": corrupt totals`) {
		t.Errorf("Status with garbage totals = %v", err)
	}
	if _, err := st.Charge(ctx, "a", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err == nil || !strings.Contains(err.Error(), "corrupt totals") {
		t.Errorf("Charge with garbage totals = %v", err)
	}
	if err := st.Verify(); !errors.As(err, &ce) || ce.Dataset != "a" || !strings.Contains(ce.Reason, "corrupt totals") {
		t.Errorf("Verify with garbage totals = %v", err)
	}
	// A missing row: reported, then rebuilt from the records.
	if _, err := db.Exec(`DELETE FROM totals WHERE dataset = 'a'`); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); !errors.As(err, &ce) || ce.Dataset != "a" || !strings.Contains(ce.Reason, "no stored running totals") {
		t.Errorf("Verify without totals = %v", err)
	}
	if s, err := st.Status("a"); err != nil || s.Spent.Eps != 3 || s.Charges != 3 {
		t.Errorf("Status rebuilt from the records = %+v, %v", s, err)
	}
	if _, err := st.Charge(ctx, "a", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Errorf("Verify after the rebuilding charge: %v", err)
	}
	var now string
	db.QueryRow(`SELECT state FROM totals WHERE dataset = 'a'`).Scan(&now)
	if !strings.Contains(now, "events=4") || now == good {
		t.Errorf("rebuilt totals = %q", now)
	}
}

// TestSchemaVersionRange: a state database from a later privnotes (or with
// a nonsensical version) is not touched.
func TestSchemaVersionRange(t *testing.T) {
	for _, v := range []int{0, SchemaVersion + 1} {
		st, dir := openTemp(t)
		st.Close()
		if _, err := rawDB(t, dir).Exec(`UPDATE schema_version SET version = ?`, v); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("state database has schema version %d; this privnotes reads versions 1 to %d", v, SchemaVersion)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open with version %d = %v, want %q", v, err, want)
		}
	}
}

// TestRegisterNames: control characters in any registered name are refused
// with the column's position and what to do, and nothing is stored.
func TestRegisterNames(t *testing.T) {
	st, _ := openTemp(t)
	table := func(cols []string, label, user string) *dataset.Table {
		tab := &dataset.Table{Columns: cols, Rows: 1, X: make([]float64, len(cols)), Label: label, UserColumn: user}
		if label != "" {
			tab.Y = []float64{0}
		}
		if user != "" {
			tab.Users, tab.NumUsers = []int32{0}, 1
		}
		return tab
	}
	const fix = "rename it in the CSV file's header line and register again"
	tests := []struct {
		name string
		tab  *dataset.Table
		want string
	}{
		{"newline", table([]string{"a", "b\nc"}, "", ""), `feature column 2 ("b\nc"): its name contains the control character U+000A`},
		{"carriage return", table([]string{"a\r"}, "", ""), `feature column 1 ("a\r"): its name contains the control character U+000D`},
		{"tab", table([]string{"x", "y", "a\tb"}, "", ""), `feature column 3 ("a\tb"): its name contains the control character U+0009`},
		{"escape", table([]string{"\x1b[2Jx"}, "", ""), `feature column 1 ("\x1b[2Jx"): its name contains the control character U+001B`},
		{"delete", table([]string{"a\x7f"}, "", ""), `feature column 1 ("a\x7f"): its name contains the control character U+007F`},
		{"C1 control", table([]string{"a\u0085"}, "", ""), `feature column 1 ("a\u0085"): its name contains the control character U+0085`},
		{"invalid UTF-8", table([]string{"a\xff"}, "", ""), `feature column 1 ("a\xff"): its name is not valid UTF-8`},
		{"label", table([]string{"a"}, "y\n", ""), `label column "y\n": its name contains the control character U+000A`},
		{"user column", table([]string{"a"}, "", "u\x1b"), `user column "u\x1b": its name contains the control character U+001B`},
	}
	for _, tc := range tests {
		_, err := st.Register(context.Background(), Registration{Name: "d", Table: tc.tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6},
			Clip: 1, LabelClip: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fix) {
			t.Errorf("%s: Register = %v, want %q and the fix", tc.name, err, tc.want)
		}
	}
	// Printable Unicode is fine.
	if _, err := st.Register(context.Background(), Registration{Name: "ok", Table: table([]string{"größe (cm)", "naïve Δ"}, "", ""),
		Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Clip: 1}); err != nil {
		t.Errorf("Register with printable Unicode names: %v", err)
	}
	if ds, _ := st.Datasets(); len(ds) != 1 || ds[0].Name != "ok" {
		t.Errorf("datasets = %v, want only ok", ds)
	}
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

// TestRegisterAdvancedRefused: the advanced accountant is not offered for
// new datasets.
func TestRegisterAdvancedRefused(t *testing.T) {
	st, _ := openTemp(t)
	_, err := st.Register(context.Background(), Registration{Name: "a", Table: tinyTable(t), Budget: accounting.Budget{Eps: 1, Delta: 1e-6},
		Accountant: accounting.ModeAdvanced, Clip: 1})
	if err == nil || !strings.Contains(err.Error(), `accountant "advanced" is not offered for new datasets`) {
		t.Errorf("Register(advanced) = %v", err)
	}
	if ds, _ := st.Datasets(); len(ds) != 0 {
		t.Errorf("a refused registration stored %v", ds)
	}
}

// TestPublicN: the owner's declaration stores the number of rows (unit row)
// or users (unit user) in the public schema; the default keeps it private
// and out of the schema's JSON.
func TestPublicN(t *testing.T) {
	st, dir := openTemp(t)
	users, err := dataset.Read(strings.NewReader("u,x\n1,0.5\n1,0.1\n2,0.3\n3,0.2\n3,0.9\n"), dataset.Options{Unit: "user:u"})
	if err != nil {
		t.Fatal(err)
	}
	b := accounting.Budget{Eps: 1, Delta: 1e-6}
	for _, r := range []Registration{
		{Name: "rows", Table: tinyTable(t), Budget: b, Clip: 1, PublicN: true},
		{Name: "users", Table: users, Budget: b, Clip: 1, PublicN: true},
		{Name: "private", Table: tinyTable(t), Budget: b, Clip: 1},
	} {
		if _, err := st.Register(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	st, err = Open(dir) // persisted
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, want := range map[string]int{"rows": 3, "users": 3, "private": 0} {
		sc, err := st.Schema(name)
		if err != nil || sc.PublicN != want {
			t.Errorf("%s: PublicN = %d, %v; want %d", name, sc.PublicN, err, want)
		}
		js, _ := json.Marshal(sc)
		if has := strings.Contains(string(js), `"public_n"`); has != (want > 0) {
			t.Errorf("%s: schema JSON %s", name, js)
		}
	}
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

// BenchmarkCharge10000 times 10 000 durable charges (each a BEGIN
// IMMEDIATE transaction committed with synchronous=FULL) on one dataset of
// a fresh state directory. Before the running totals, each charge replayed
// the dataset's whole ledger: 8 000 charges took 8.5 minutes. Run it with
//
//	go test ./dsl/ledger/ -run '^$' -bench BenchmarkCharge10000 -benchtime 1x
//
// ns/op is the time of all 10 000; ms/charge the mean per charge.
func BenchmarkCharge10000(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	ev := withMech(accounting.ZcdpFor(0.01, 1e-9), "bench")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		st, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		register(b, st, "d", accounting.ModeZCDP, accounting.Budget{Eps: 100, Delta: 1e-6})
		b.StartTimer()
		for j := range n {
			if _, err := st.Charge(ctx, "d", ev, ChargeMeta{Cell: fmt.Sprint(j)}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if s, err := st.Status("d"); err != nil || s.Charges != n {
			b.Fatalf("status %+v, %v", s, err)
		}
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N)/n, "ms/charge")
}

// TestUpgradeWithCorruptRecord: an old ledger with an undecodable charge
// still opens (the rest of the state directory stays usable); the damaged
// dataset refuses to charge, naming the record, and Verify names it too.
func TestUpgradeWithCorruptRecord(t *testing.T) {
	dir := copyOldState(t)
	db := rawDB(t, dir)
	if _, err := db.Exec(`DROP TRIGGER ledger_append_only_update`); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRow(`SELECT min(id) FROM ledger WHERE dataset = 'adv' AND kind = 'charge'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE ledger SET event = '{"Kind":' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	rehash(t, db, id)
	db.Close()
	st, err := Open(dir)
	if err != nil {
		t.Fatalf("Open of an old ledger with a corrupt record: %v", err)
	}
	defer st.Close()
	if v := storedVersion(t, dir); v != SchemaVersion {
		t.Errorf("schema version %d after the upgrade", v)
	}
	want := fmt.Sprintf("record %d: corrupt cost", id)
	if _, err := st.Status("adv"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Status of the damaged dataset = %v, want %q", err, want)
	}
	if err := st.Precheck("adv", accounting.ZcdpFor(0.1, 1e-7)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Precheck of the damaged dataset = %v, want %q", err, want)
	}
	if _, err := st.Charge(context.Background(), "adv", withMech(accounting.ZcdpFor(0.1, 1e-7), "m"), ChargeMeta{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Charge to the damaged dataset = %v, want %q", err, want)
	}
	if _, err := st.Charge(context.Background(), "basic", withMech(accounting.Pure(0.1), "m"), ChargeMeta{}); err != nil {
		t.Errorf("Charge to an intact dataset: %v", err)
	}
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != id || !strings.Contains(err.Error(), fmt.Sprintf("ledger verification failed at record %d: corrupt cost", id)) {
		t.Errorf("Verify = %v, want record %d", err, id)
	}
}

// TestUpgradeWithCorruptSchema: an old database whose registry holds an
// undecodable schema upgrades the other datasets; the damaged one is
// reported by the reads that need it and by Verify, at its register record.
func TestUpgradeWithCorruptSchema(t *testing.T) {
	dir := copyOldState(t)
	db := rawDB(t, dir)
	for _, q := range []string{`DROP TRIGGER datasets_immutable_update`, `UPDATE datasets SET schema = '{"name":' WHERE name = 'users'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer st.Close()
	if _, err := getTotals(context.Background(), st.db, "users"); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("totals of the damaged dataset: %v, want none", err)
	}
	if s, err := st.Status("zc"); err != nil || s.Charges != 4 {
		t.Errorf("Status of an intact dataset = %+v, %v", s, err)
	}
	if _, err := st.Status("users"); err == nil || !strings.Contains(err.Error(), `dataset "users": corrupt schema`) {
		t.Errorf("Status of the damaged dataset = %v", err)
	}
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != 4 || !strings.Contains(ce.Reason, "corrupt schema") {
		t.Errorf("Verify = %v, want record 4 (users' registration)", err)
	}
}
