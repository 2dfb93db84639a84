package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	_ "modernc.org/sqlite"
)

// copyOldState copies dsl/ledger's schema-1 state directory (written by the
// privnotes before running totals; see its testdata/README.md).
func copyOldState(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "dsl", "ledger", "testdata", "schema1", ledger.DBName))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ledger.DBName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOldStateDirectory: the owner's commands on a state directory of the
// previous privnotes, with a dataset registered under the former advanced
// accountant: verify upgrades and passes, and the advanced dataset is shown
// composed as basic, over its budget.
func TestOldStateDirectory(t *testing.T) {
	state := copyOldState(t)
	code, out, stderr := runCLI("ledger", "verify", "--state", state)
	if code != 0 || !strings.Contains(out, "ledger OK: 56 records") {
		t.Fatalf("verify: exit %d, %q, %q", code, out, stderr)
	}
	code, out, _ = runCLI("dataset", "list", "--state", state)
	if code != 0 || !strings.Contains(norm(out), "adv 2 2 row 1 advanced, composed as basic 4, 1e-05 4.5, 4.5e-06 0, 5.5e-06") {
		t.Errorf("list: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI("dataset", "show", "adv", "--state", state)
	if code != 0 || !strings.Contains(norm(out), "budget ε=4, δ=1e-05 (advanced, composed as basic accountant)") ||
		!strings.Contains(norm(out), "spent ε=4.5, δ=4.5e-06 in 45 charges") || strings.Contains(out, "public n") {
		t.Errorf("show adv: exit %d:\n%s", code, out)
	}
}

// TestVerifyExitStatus: a damaged database or altered totals exit with 3,
// like an altered chain.
func TestVerifyExitStatus(t *testing.T) {
	damaged := copyOldState(t)
	b, _ := os.ReadFile(filepath.Join(damaged, ledger.DBName))
	if err := os.WriteFile(filepath.Join(damaged, ledger.DBName), b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("ledger", "verify", "--state", damaged)
	if code != 3 || !strings.Contains(stderr, "the state database is damaged") {
		t.Errorf("verify of a truncated database: exit %d, %q", code, stderr)
	}

	altered := copyOldState(t)
	if code, _, stderr := runCLI("ledger", "verify", "--state", altered); code != 0 {
		t.Fatalf("verify: exit %d, %q", code, stderr)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(altered, ledger.DBName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE totals SET state = 'accounting-state/1 events=0 rho=0 apdelta=0 eps=0 delta=0' WHERE dataset = 'basic'`); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("ledger", "verify", "--state", altered)
	if code != 3 || !strings.Contains(stderr, `dataset "basic": stored running totals`) {
		t.Errorf("verify with altered totals: exit %d, %q", code, stderr)
	}
}

// TestDatasetAddRegistryRules: the accountant, the public-n declaration and
// the column names, as the owner meets them.
func TestDatasetAddRegistryRules(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	good := writeCSV(t, dir, "good.csv", "a,b\n1,2\n3,4\n5,6\n")
	users := writeCSV(t, dir, "users.csv", "u,x\n1,0.5\n1,0.1\n2,0.3\n")
	escape := writeCSV(t, dir, "escape.csv", "a,\"b\x1b[31m\"\n1,2\n")
	newline := writeCSV(t, dir, "newline.csv", "a,\"b\nc\",y\n1,2,3\n")
	base := []string{"--eps", "1", "--delta", "1e-6", "--clip", "1", "--state", state}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"advanced", []string{"adv", "--csv", good, "--accountant", "advanced"}, 2, "--accountant advanced is no longer offered"},
		{"unknown accountant", []string{"x", "--csv", good, "--accountant", "pld"}, 2, `--accountant "pld": use zcdp or basic`},
		{"escape in a column name", []string{"esc", "--csv", escape}, 1, `column name "b\x1b[31m" holds a control or format character; rename it`},
		{"newline in a label name", []string{"nl", "--csv", newline, "--label", "b\nc", "--label-clip", "1"}, 1, `column name "b\nc" holds a control or format character; rename it`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(append([]string{"dataset", "add"}, tc.args...), base...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	code, out, stderr := runCLI(append([]string{"dataset", "add", "pub", "--csv", good, "--public-n"}, base...)...)
	if code != 0 || !strings.Contains(norm(out), "public n 3 rows (declared public with --public-n") {
		t.Errorf("add --public-n: exit %d, %q:\n%s", code, stderr, out)
	}
	code, out, stderr = runCLI(append([]string{"dataset", "add", "pubusers", "--csv", users, "--unit", "user:u", "--public-n"}, base...)...)
	if code != 0 || !strings.Contains(norm(out), "public n 2 users") {
		t.Errorf("add --unit user --public-n: exit %d, %q:\n%s", code, stderr, out)
	}
	code, out, _ = runCLI(append([]string{"dataset", "add", "private", "--csv", good}, base...)...)
	if code != 0 || strings.Contains(out, "public n") {
		t.Errorf("add without --public-n: exit %d:\n%s", code, out)
	}
	st, err := ledger.OpenExisting(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, want := range map[string]int{"pub": 3, "pubusers": 2, "private": 0} {
		if sc, err := st.Schema(name); err != nil || sc.PublicN != want {
			t.Errorf("%s: PublicN %d, %v; want %d", name, sc.PublicN, err, want)
		}
	}
	if all, _ := st.Datasets(); len(all) != 3 {
		t.Errorf("registered %d datasets, want the 3 valid ones", len(all))
	}
	code, out, _ = runCLI("dataset", "add", "-h")
	if code != 0 {
		t.Errorf("add -h: exit %d", code)
	}
	_, _, help := runCLI("dataset", "add", "-h")
	for _, want := range []string{"-public-n", "declare the number of rows", "control characters", "zcdp (default, tight) or basic"} {
		if !strings.Contains(help, want) {
			t.Errorf("add -h lacks %q:\n%s", want, help)
		}
	}
}
