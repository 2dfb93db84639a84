package ledger

// The failures a data owner or an analyst meets with a real state
// directory: a damaged or foreign state.db, a crash in the middle of a
// commit, another process holding the write lock, a read-only directory.
// Each test checks the specific error and that nothing was half-charged:
// the ledger still verifies and spends what it spent before.
//
// A failing disk (ENOSPC, EIO) is not simulated: there is no portable way
// to make SQLite's writes fail on demand without faking the file system,
// and a fake would test the fake. dbErr maps SQLite's SQLITE_FULL to
// ErrDiskFull; the atomicity it relies on is SQLite's and is exercised by
// TestTruncatedWAL.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func readState(t testing.TB, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, DBName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCorruptDatabaseFile: a state.db that is not a privnotes database, or
// is truncated, is refused at open with ErrCorrupt, and left as it was.
func TestCorruptDatabaseFile(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "schema1", DBName))
	if err != nil {
		t.Fatal(err)
	}
	foreignDir := t.TempDir()
	foreign := rawDB(t, foreignDir)
	if _, err := foreign.Exec(`CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('not ours')`); err != nil {
		t.Fatal(err)
	}
	foreign.Close()
	foreignBytes := readState(t, foreignDir)
	type tc struct {
		name     string
		content  []byte
		existing bool // only OpenExisting must refuse it
		want     string
	}
	tests := []tc{
		{"garbage", bytes.Repeat([]byte("not a database "), 300), false, "file is not a database"},
		{"foreign SQLite database", foreignBytes, false, "holds no privnotes schema version"},
		{"empty file", nil, true, "holds no privnotes schema version"},
	}
	// Cut at every page boundary: SQLite's header records the size.
	for cut := 4096; cut < len(fixture); cut += 4096 {
		tests = append(tests, tc{"truncated at " + strings.Repeat("I", cut/4096), fixture[:cut], false, "database disk image is malformed"})
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, DBName), c.content, 0o600); err != nil {
				t.Fatal(err)
			}
			opens := map[string]func(string) (*Store, error){"OpenExisting": OpenExisting}
			if !c.existing {
				opens["Open"] = Open
			}
			for name, open := range opens {
				st, err := open(dir)
				if err == nil {
					st.Close()
					t.Fatalf("%s succeeded", name)
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "restore state.db from a backup") {
					t.Errorf("%s = %v, want ErrCorrupt with %q", name, err, c.want)
				}
			}
			if got := readState(t, dir); !bytes.Equal(got, c.content) {
				t.Error("a refused open changed state.db")
			}
		})
	}
	// Open (which may create state) accepts an empty file as a new
	// database: the trace of a creation that never committed.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatalf("Open on an empty state.db: %v", err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

// TestDamagedPages: a page overwritten in the middle of an (upgraded)
// state database is found by Verify whatever page it is, even one that no
// record read touches; a charge that meets the damage fails with
// ErrCorrupt. Restoring the backup restores a verifying ledger.
func TestDamagedPages(t *testing.T) {
	src := copyOldState(t)
	st, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	good := readState(t, src)
	const page = 4096
	for p := 1; p*page < len(good); p++ { // page 0 holds the header: see TestCorruptDatabaseFile
		bad := append([]byte(nil), good...)
		for i := p * page; i < (p+1)*page; i++ {
			bad[i] = byte(i*7 + 3)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, DBName), bad, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := Open(dir)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("page %d: Open = %v, want ErrCorrupt", p, err)
			}
			continue
		}
		if err := st.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("page %d: Verify = %v, want ErrCorrupt", p, err)
		}
		if _, err := st.Charge(context.Background(), "zc", withMech(accounting.Pure(0.01), "test/damaged"), ChargeMeta{}); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("page %d: Charge = %v, want success or ErrCorrupt", p, err)
		}
		st.Close()
		// The backup is the remedy.
		if err := os.WriteFile(filepath.Join(dir, DBName), good, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, DBName+"-wal"))
		os.Remove(filepath.Join(dir, DBName+"-shm"))
		st, err = Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Verify(); err != nil {
			t.Errorf("page %d: Verify after restoring the backup: %v", p, err)
		}
		st.Close()
	}
}

// TestTruncatedWAL: a crash in the middle of writing a commit leaves a
// write-ahead log cut anywhere. Whatever the cut, the database opens to a
// prefix of the committed charges in which every record has its totals:
// a charge is never half-recorded.
func TestTruncatedWAL(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	ctx := context.Background()
	const charges = 6
	for i := range charges {
		if _, err := st.Charge(ctx, "d", withMech(accounting.Pure(0.5), "test/wal"), ChargeMeta{Cell: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Copy the database and its log while the store is open (after Close
	// SQLite checkpoints the log into the database and deletes it).
	db := readState(t, dir)
	wal, err := os.ReadFile(filepath.Join(dir, DBName+"-wal"))
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096 // WAL frame header + page
	prev := -1
	seen := map[int]bool{}
	for cut := len(wal); cut >= 32; cut -= frame / 2 {
		c := t.TempDir()
		if err := os.WriteFile(filepath.Join(c, DBName), db, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c, DBName+"-wal"), wal[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		cs, err := OpenExisting(c)
		if err != nil {
			// Cut before the registration committed: no state.
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "no privnotes schema version") {
				t.Errorf("cut %d: OpenExisting = %v", cut, err)
			}
			continue
		}
		if err := cs.Verify(); err != nil {
			t.Errorf("cut %d: Verify = %v", cut, err)
		}
		es, err := cs.Entries("d")
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		n := 0
		if len(es) == 0 { // cut before the registration committed
			if _, err := cs.Status("d"); !errors.Is(err, ErrNoDataset) {
				t.Errorf("cut %d: no register record, but Status = %v", cut, err)
			}
		} else {
			n = len(es) - 1
			s, err := cs.Status("d")
			if err != nil || s.Charges != n || s.Spent.Eps != 0.5*float64(n) {
				t.Errorf("cut %d: %d charge records, status %+v, %v", cut, n, s, err)
			}
		}
		if prev >= 0 && n > prev {
			t.Errorf("cut %d keeps %d charges, a longer log kept %d", cut, n, prev)
		}
		prev = n
		seen[n] = true
		cs.Close()
	}
	// Cuts half a frame apart cross every commit (a charge writes three frames): each prefix of
	// the charges, from none to all, must have been seen.
	if len(seen) != charges+1 {
		t.Errorf("the cuts produced the charge counts %v, want every one of 0..%d", seen, charges)
	}
}

// TestGarbageWAL: stray bytes in state.db-wal and state.db-shm (say, from
// another program) are ignored by SQLite, whose log frames carry
// checksums: the committed ledger is intact.
func TestGarbageWAL(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	if _, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "test/wal"), ChargeMeta{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, f := range []string{DBName + "-wal", DBName + "-shm"} {
		if err := os.WriteFile(filepath.Join(dir, f), bytes.Repeat([]byte{0xa5, 0x5a, 0x00, 0xff}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
	if s, err := st.Status("d"); err != nil || s.Charges != 1 || s.Spent.Eps != 1 {
		t.Errorf("status = %+v, %v", s, err)
	}
}

// holdWriteLock takes the database's write lock on a separate connection,
// as another privnotes process in the middle of a charge would, and writes
// a record and totals it will roll back.
func holdWriteLock(t *testing.T, dir string) (release func()) {
	t.Helper()
	conn, err := rawDB(t, dir).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{
		`BEGIN IMMEDIATE`,
		`INSERT INTO ledger(id, kind, dataset, mechanism, params, event, cell, time, prev_hash, hash)
			VALUES (1000, 'charge', 'd', 'other/process', '{}', '{}', 'x', 'now', 'x', 'x')`,
		`UPDATE totals SET state = 'half-written' WHERE dataset = 'd'`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return func() {
		if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
			t.Error(err)
		}
		conn.Close()
	}
}

// TestLockedDatabase: while another connection holds the write lock, a
// charge waits; it fails cleanly when its context or the busy timeout
// ends first, and succeeds once the lock is released. Readers are not
// blocked, and never see the other transaction's uncommitted writes.
func TestLockedDatabase(t *testing.T) {
	checkUnchanged := func(t *testing.T, st *Store, charges int) {
		t.Helper()
		s, err := st.Status("d")
		if err != nil || s.Charges != charges || s.Spent.Eps != 0.25*float64(charges) {
			t.Errorf("status = %+v, %v; want %d charges", s, err, charges)
		}
	}
	t.Run("context deadline", func(t *testing.T) {
		st, dir := openTemp(t)
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		release := holdWriteLock(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := st.Charge(ctx, "d", withMech(accounting.Pure(0.25), "test/locked"), ChargeMeta{})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ledger: starting the charge") {
			t.Errorf("Charge under a held lock = %v, want the context's deadline", err)
		}
		checkUnchanged(t, st, 0) // a reader during the lock
		release()
		checkUnchanged(t, st, 0)
		if err := st.Verify(); err != nil {
			t.Error(err)
		}
	})
	t.Run("busy timeout", func(t *testing.T) {
		old := busyTimeout
		busyTimeout = 150 * time.Millisecond
		st, dir := openTemp(t)
		busyTimeout = old
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		release := holdWriteLock(t, dir)
		start := time.Now()
		_, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(0.25), "test/locked"), ChargeMeta{})
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "database is locked") {
			t.Errorf("Charge under a held lock = %v, want ErrLocked", err)
		}
		if waited := time.Since(start); waited < 100*time.Millisecond {
			t.Errorf("Charge gave up after %v, before the busy timeout", waited)
		}
		release()
		checkUnchanged(t, st, 0)
		if err := st.Verify(); err != nil {
			t.Error(err)
		}
	})
	t.Run("wait for the lock", func(t *testing.T) {
		st, dir := openTemp(t)
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		release := holdWriteLock(t, dir)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(150 * time.Millisecond)
			release()
		}()
		r, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(0.25), "test/locked"), ChargeMeta{})
		<-done
		if err != nil || r.ID != 2 || r.Spent.Eps != 0.25 {
			t.Fatalf("Charge after the lock was released = %+v, %v", r, err)
		}
		checkUnchanged(t, st, 1)
		if err := st.Verify(); err != nil {
			t.Error(err)
		}
	})
}

// TestReadOnlyStateDir: a state directory the process cannot write is
// refused at open with ErrNotWritable (SQLite's write-ahead log needs the
// directory), old or new format, and left untouched.
func TestReadOnlyStateDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("file permissions do not bind root; run the tests as another user to exercise this")
	}
	upgraded := copyOldState(t)
	st, err := Open(upgraded)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	for name, dir := range map[string]string{"schema 1": copyOldState(t), "schema 2": upgraded} {
		t.Run(name, func(t *testing.T) {
			before := readState(t, dir)
			if err := os.Chmod(filepath.Join(dir, DBName), 0o400); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			for open, f := range map[string]func(string) (*Store, error){"Open": Open, "OpenExisting": OpenExisting} {
				st, err := f(dir)
				if err == nil {
					st.Close()
					t.Fatalf("%s of a read-only state directory succeeded", open)
				}
				if !errors.Is(err, ErrNotWritable) || !strings.Contains(err.Error(), "check its permissions") {
					t.Errorf("%s = %v, want ErrNotWritable", open, err)
				}
			}
			if !bytes.Equal(readState(t, dir), before) {
				t.Error("the read-only state database changed")
			}
		})
	}
}

// TestCorruptRecords: records and registry rows edited into something that
// does not decode are reported with the record or dataset they are in.
func TestCorruptRecords(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	register(t, st, "e", accounting.ModeBasic, accounting.Budget{Eps: 10})
	if _, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	for _, q := range []string{`DROP TRIGGER ledger_append_only_update`, `DROP TRIGGER datasets_immutable_update`, `DROP TRIGGER data_immutable_update`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	edit(`UPDATE ledger SET event = '{"Kind": "rdp"}' WHERE id = 3`)
	rehash(t, db, 3)
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != 3 || !strings.Contains(ce.Reason, "corrupt cost") {
		t.Errorf("Verify = %v, want record 3's corrupt cost", err)
	}
	if _, err := st.Entries(""); err == nil || !strings.Contains(err.Error(), "record 3: corrupt cost") {
		t.Errorf("Entries = %v", err)
	}
	var sb strings.Builder
	if err := st.Export(&sb, true); err == nil || !strings.Contains(err.Error(), "record 3: corrupt cost") {
		t.Errorf("Export = %v", err)
	}
	edit(`UPDATE ledger SET event = (SELECT event FROM ledger WHERE id = 3), params = '{not json' WHERE id = 3`)
	edit(`UPDATE ledger SET event = '{"Mechanism":"m","Kind":"pure","Eps":1,"Delta":0,"Rho":0,"Mu":0}' WHERE id = 3`)
	rehash(t, db, 3)
	if _, err := st.Entries("d"); err == nil || !strings.Contains(err.Error(), "record 3: corrupt parameters") {
		t.Errorf("Entries with bad parameters = %v", err)
	}
	edit(`UPDATE datasets SET schema = '{' WHERE name = 'e'`)
	if _, err := st.Schema("e"); err == nil || !strings.Contains(err.Error(), `dataset "e": corrupt schema`) {
		t.Errorf("Schema = %v", err)
	}
	if _, err := st.Datasets(); err == nil || !strings.Contains(err.Error(), "corrupt schema") {
		t.Errorf("Datasets = %v", err)
	}
	if _, err := st.Charge(context.Background(), "e", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err == nil || !strings.Contains(err.Error(), "corrupt schema") {
		t.Errorf("Charge to a dataset with a corrupt schema = %v", err)
	}
	// A registry entry that no register record accounts for.
	edit(`INSERT INTO datasets(name, schema, eps, delta, accountant, rows, users, dropped, source, data_salt, data_hash, created)
		SELECT 'ghost', replace(schema, '"name":"d"', '"name":"ghost"'), eps, delta, accountant, rows, users, dropped, source, data_salt, data_hash, created FROM datasets WHERE name = 'd'`)
	edit(`UPDATE ledger SET event = '{"Mechanism":"m","Kind":"pure","Eps":1}', params = '{}' WHERE id = 3`)
	rehash(t, db, 3)
	edit(`UPDATE datasets SET schema = (SELECT json_extract(params, '$.schema') FROM ledger WHERE id = 2) WHERE name = 'e'`)
	err := st.Verify()
	if !errors.As(err, &ce) || ce.ID != 0 || ce.Dataset != "ghost" || err.Error() != `ledger verification failed: dataset "ghost" is in the registry without a register record` {
		t.Errorf("Verify with an unregistered registry entry = %v", err)
	}
	edit(`UPDATE data_chunks SET x = x'00' WHERE dataset = 'd'`)
	if _, err := st.Load("d"); err == nil || !strings.Contains(err.Error(), `dataset "d": corrupt data chunk`) {
		t.Errorf("Load = %v", err)
	}
	if s, err := st.Status("d"); err != nil || s.Charges != 1 {
		t.Errorf("Status after the edits = %+v, %v: the totals do not depend on the records' text", s, err)
	}
}

// TestStateDirErrors: a state directory path that cannot be a directory.
func TestStateDirErrors(t *testing.T) {
	if st, dir := openTemp(t); st.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", st.Dir(), dir)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(file, "state")
	if _, err := StateDir(under); err == nil || !strings.Contains(err.Error(), "creating state directory") {
		t.Errorf("StateDir under a file = %v", err)
	}
	if _, err := Open(under); err == nil || !strings.Contains(err.Error(), "ledger: creating state directory") {
		t.Errorf("Open under a file = %v", err)
	}
	for _, f := range []func(string) (*Store, error){Open, OpenExisting} {
		if _, err := f(""); err == nil || !strings.Contains(err.Error(), "empty state directory") {
			t.Errorf("open of \"\" = %v", err)
		}
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, DBName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(dir); err == nil || !strings.Contains(err.Error(), "is not a state database") {
		t.Errorf("OpenExisting with a directory named state.db = %v", err)
	}
}
