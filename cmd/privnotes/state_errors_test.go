package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// registeredState makes a state directory with one dataset, "d", and
// returns it with the path of its database.
func registeredState(t *testing.T) (dir, db string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "state")
	csv := writeCSV(t, root, "d.csv", "a,b\n1,2\n3,4\n")
	if code, _, stderr := runCLI("dataset", "add", "d", "--csv", csv, "--eps", "1", "--delta", "1e-6", "--clip", "5", "--state", dir); code != 0 {
		t.Fatalf("dataset add: exit %d: %s", code, stderr)
	}
	return dir, filepath.Join(dir, ledger.DBName)
}

// sqlite opens the state database directly, as another program would.
func sqlite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// readCommands are the commands that read an existing state database.
var readCommands = [][]string{
	{"ledger", "verify"},
	{"ledger", "show"},
	{"ledger", "export", "--json"},
	{"dataset", "list"},
	{"dataset", "show", "d"},
}

// oneLineError checks that a reading command failed on a damaged
// database: nothing on stdout and one line on stderr that starts with
// prefix and ends with suffix. The words in between belong to the ledger
// package, which may explain the cause its own way; the command, the file
// and SQLite's diagnosis are what the user must see.
//
// The status is 1 (error). "ledger verify" says 3 ("altered or damaged")
// for a database it opens and finds damaged, and 1 for one it cannot read
// at all (a newer schema version); it is never 0 ("ledger OK") or 2
// (usage).
func oneLineError(t *testing.T, args []string, code int, out, stderr, prefix, suffix string) {
	t.Helper()
	statusOK := code == 1 || (code == 3 && args[0] == "ledger" && args[1] == "verify")
	if !statusOK || out != "" || !strings.HasPrefix(stderr, prefix) || !strings.HasSuffix(stderr, suffix) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 (or 3 for verify) and one line %q … %q", args, code, out, stderr, prefix, suffix)
	}
}

// TestCorruptStateDatabase: a state.db that is not a database (garbage, a
// directory) is an error of every reading command (status as oneLineError
// says), with one line naming the file and the cause, nothing on stdout,
// and never "ledger OK".
func TestCorruptStateDatabase(t *testing.T) {
	dir, db := registeredState(t)
	garbage := []byte(strings.Repeat("not a database, a file overwritten by accident\n", 200))
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range readCommands {
		code, out, stderr := runCLI(append(args, "--state", dir)...)
		oneLineError(t, args, code, out, stderr, "privnotes "+strings.Join(args[:2], " ")+": ledger: "+db+": ", ": file is not a database (26)\n")
	}
	// The commands did not "repair" the file into an empty ledger.
	if b, _ := os.ReadFile(db); string(b) != string(garbage) {
		t.Error("a reading command rewrote the corrupt database")
	}

	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range readCommands {
		code, out, stderr := runCLI(append(args, "--state", dir)...)
		want := "privnotes " + strings.Join(args[:2], " ") + ": ledger: " + db + " is not a state database\n"
		if code != 1 || out != "" || stderr != want {
			t.Errorf("%v on a directory: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, stderr, want)
		}
	}
}

// TestTamperedLedger: a record altered behind the ledger's back (its
// append-only trigger dropped first) fails "ledger verify" with status 3
// and the record's number; show still lists what is there.
func TestTamperedLedger(t *testing.T) {
	dir, db := registeredState(t)
	conn := sqlite(t, db)
	for _, q := range []string{
		`DROP TRIGGER ledger_append_only_update`,
		`UPDATE ledger SET cell = 'forged' WHERE id = 1`,
	} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	code, out, stderr := runCLI("ledger", "verify", "--state", dir)
	want := "privnotes ledger verify: ledger verification failed at record 1: content does not match its hash (the record was altered)\n"
	if code != 3 || out != "" || stderr != want {
		t.Errorf("verify: exit %d, stdout %q, stderr %q; want exit 3 and %q", code, out, stderr, want)
	}
	if code, out, _ := runCLI("ledger", "show", "--state", dir); code != 0 || !strings.Contains(out, "forged") {
		t.Errorf("show of a tampered ledger: exit %d:\n%s", code, out)
	}
}

// TestDamagedLedgerPage: a database whose ledger table's page was
// overwritten (a disk error) is an error of verify that gives SQLite's
// diagnosis, not "ledger OK".
func TestDamagedLedgerPage(t *testing.T) {
	dir, db := registeredState(t)
	conn := sqlite(t, db)
	var root, pageSize int64
	if err := conn.QueryRow(`SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'ledger'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff", int(pageSize))), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, stderr := runCLI("ledger", "verify", "--state", dir)
	oneLineError(t, []string{"ledger", "verify"}, code, out, stderr, "privnotes ledger verify: ledger: ", ": database disk image is malformed (11)\n")
}

// TestNewerStateDatabase: a database written by a newer schema version is
// refused by every command, naming the file and its version.
func TestNewerStateDatabase(t *testing.T) {
	dir, db := registeredState(t)
	conn := sqlite(t, db)
	if _, err := conn.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	for _, args := range readCommands {
		code, out, stderr := runCLI(append(args, "--state", dir)...)
		prefix := "privnotes " + strings.Join(args[:2], " ") + ": ledger: " + db + ": state database has schema version 99; this privnotes reads version"
		oneLineError(t, args, code, out, stderr, prefix, "\n")
	}
}

// TestLockedStateDatabase: while another program holds the database's
// write lock (a kernel charging a query), "ledger verify" and "dataset
// list" wait for it instead of failing, and finish once it is released.
// The lock is released only after the commands were seen waiting past
// their start; the wait for them to finish is bounded by hang alone.
func TestLockedStateDatabase(t *testing.T) {
	dir, db := registeredState(t)
	holder := sqlite(t, db)
	ctx := context.Background()
	lock, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code        int
		out, stderr string
	}
	started := make(chan struct{}, 2)
	results := make(chan result, 2)
	for _, args := range [][]string{{"ledger", "verify"}, {"dataset", "list"}} {
		go func(args []string) {
			started <- struct{}{}
			code, out, stderr := runCLI(append(args, "--state", dir)...)
			results <- result{code, out, stderr}
		}(args)
	}
	<-started
	<-started
	select {
	case r := <-results:
		t.Fatalf("a command ended while the database was locked: exit %d, stdout %q, stderr %q", r.code, r.out, r.stderr)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case r := <-results:
			if r.code != 0 || r.stderr != "" || !(strings.HasPrefix(r.out, "ledger OK: 1 records") || strings.Contains(norm(r.out), "d 2 2 row 5 zcdp")) {
				t.Errorf("after the lock: exit %d, stdout %q, stderr %q", r.code, r.out, r.stderr)
			}
		case <-time.After(hang):
			t.Fatalf("the commands did not finish within %v of the lock's release", hang)
		}
	}
}

// TestReadCommandUsageErrors: the reading commands' usage errors, each
// with its message and status 2.
func TestReadCommandUsageErrors(t *testing.T) {
	dir, _ := registeredState(t)
	tests := []struct {
		args   []string
		stderr string // prefix
	}{
		{[]string{"ledger"}, "Usage:\n  privnotes ledger show"},
		{[]string{"ledger", "frob"}, "privnotes ledger: unknown subcommand \"frob\"\n\nUsage:\n"},
		{[]string{"ledger", "show", "--state", dir, "extra"}, "privnotes ledger show: unexpected arguments: extra\n"},
		{[]string{"ledger", "verify", "--bogus"}, "flag provided but not defined: -bogus\nUsage: privnotes ledger verify [--state DIR]\n"},
		{[]string{"ledger", "export", "--json=maybe"}, "invalid boolean value \"maybe\" for -json: parse error\n"},
		{[]string{"dataset"}, "Usage:\n  privnotes dataset add NAME"},
		{[]string{"dataset", "frob"}, "privnotes dataset: unknown subcommand \"frob\"\n\nUsage:\n"},
		{[]string{"dataset", "list", "--state", dir, "extra"}, "privnotes dataset list: unexpected arguments: extra\n"},
		{[]string{"dataset", "show", "--state", dir}, "privnotes dataset show: missing the dataset NAME\n"},
		{[]string{"dataset", "show", "d", "--state", dir, "e"}, "privnotes dataset show: unexpected arguments: e\n"},
		{[]string{"dataset", "show", "--bogus"}, "flag provided but not defined: -bogus\nUsage: privnotes dataset show NAME [--owner] [--state DIR]\n"},
	}
	for _, tt := range tests {
		code, out, stderr := runCLI(tt.args...)
		if code != 2 || out != "" || !strings.HasPrefix(stderr, tt.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q…", tt.args, code, out, stderr, tt.stderr)
		}
	}
	for _, args := range [][]string{{"ledger", "help"}, {"ledger", "--help"}, {"dataset", "help"}, {"dataset", "-h"}} {
		code, out, stderr := runCLI(args...)
		if code != 0 || !strings.HasPrefix(out, "Usage:\n  privnotes "+args[0]) || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
	// show of a dataset that is not registered, with --dataset.
	code, _, stderr := runCLI("ledger", "show", "--dataset", "nope", "--state", dir)
	if code != 1 || !strings.HasPrefix(stderr, `privnotes ledger show: `) || !strings.Contains(stderr, `"nope"`) {
		t.Errorf("ledger show --dataset nope: exit %d, %q", code, stderr)
	}
	// An empty but valid ledger lists no datasets and verifies.
	empty := t.TempDir()
	st, err := ledger.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, out, _ := runCLI("dataset", "list", "--state", empty); code != 0 || out != "no datasets in "+empty+" (register one with `privnotes dataset add`)\n" {
		t.Errorf("list of an empty state: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI("ledger", "export", "--state", empty); code != 0 || out == "" {
		t.Errorf("text export of an empty state: exit %d, %q", code, out)
	}
}
