package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/internal/testfix"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

// norm collapses runs of white space, so that checks do not depend on
// table alignment.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeCSV writes a data file for a command to read (testfix.WriteFile).
var writeCSV = testfix.WriteFile

func TestDatasetAddValidation(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	good := writeCSV(t, dir, "good.csv", "a,b\n1,2\n3,4\n")
	bad := writeCSV(t, dir, "bad.csv", "a,b\n1,2\n3,oops\n")
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no name", []string{"--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, "missing the dataset NAME"},
		{"no data", []string{"d", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, "give the data with exactly one of --from FILE (--csv FILE is its alias) or --sql QUERY"},
		{"two sources", []string{"d", "--csv", good, "--from", good, "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, "exactly one of"},
		{"bad bounds", []string{"d", "--csv", good, "--bounds", "a=0", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, `--bounds "a=0": write COLUMN=LO:HI`},
		{"bounds of no column", []string{"d", "--csv", good, "--bounds", "zz=0:1", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, `good.csv has no column "zz" (given --bounds)`},
		{"header with sql", []string{"d", "--sql", "SELECT 1 AS a", "--header", "yes", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, "--header and --columns are for a CSV file (--from or --csv); with --sql, choose and name the columns in the SELECT"},
		{"columns of parquet", []string{"d", "--from", filepath.Join(dir, "x.parquet"), "--columns", "1", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, "x.parquet is not named .csv (choose columns with --sql)"},
		{"bad header rule", []string{"d", "--csv", good, "--header", "maybe", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, `--header "maybe": use auto, yes, no or sklearn`},
		{"unknown column", []string{"d", "--csv", good, "--columns", "a,zz", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, `--columns "zz": no such column; columns are a, b`},
		{"other as a category", []string{"d", "--from", good, "--categories", "a=x,other", "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 2, `"other" names the bucket`},
		{"non-numeric value from", []string{"d", "--from", bad, "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, `bad.csv, line 3, column "b": a value that is not a number`},
		{"no eps", []string{"d", "--csv", good, "--delta", "1e-6", "--clip", "1"}, 2, "--eps is required"},
		{"negative eps", []string{"d", "--csv", good, "--eps", "-1", "--delta", "1e-6", "--clip", "1"}, 2, "--eps -1: must be a finite number > 0"},
		{"eps not a number", []string{"d", "--csv", good, "--eps", "lots", "--delta", "1e-6", "--clip", "1"}, 2, `invalid value "lots" for flag -eps`},
		{"no delta", []string{"d", "--csv", good, "--eps", "1", "--clip", "1"}, 2, "--delta is required"},
		{"delta one", []string{"d", "--csv", good, "--eps", "1", "--delta", "1", "--clip", "1"}, 2, "--delta 1: must be in [0, 1)"},
		{"zcdp with delta 0", []string{"d", "--csv", good, "--eps", "1", "--delta", "0", "--clip", "1"}, 2, "use --accountant basic for a pure ε budget"},
		{"zero clip", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "0"}, 2, "--clip 0: must be a finite number > 0"},
		{"bad accountant", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1", "--accountant", "pld"}, 2, `--accountant "pld": use zcdp or basic`},
		{"bad neighbour", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1", "--neighbour", "swap"}, 2, `--neighbour "swap": use replace-one or add-remove`},
		{"label without clip", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1", "--label", "b"}, 2, "--label needs --label-clip"},
		{"label clip without label", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1", "--label-clip", "1"}, 2, "--label-clip is only for --label"},
		{"extra argument", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1", "extra"}, 2, "unexpected arguments: extra"},
		{"missing file", []string{"d", "--csv", filepath.Join(dir, "none.csv"), "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, "no such file"},
		{"bad value in file", []string{"d", "--csv", bad, "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, `bad.csv, line 3, column "b": a value that is not a number`},
		{"center", []string{"d", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1", "--center", "public-mean", "--mean", "1,2"}, 2, `--center and --mean are no longer offered: a snapshot keeps the values as given. Subtract your public mean in a query instead, for example --sql`},
		{"bad name", []string{"9lives", "--csv", good, "--eps", "1", "--delta", "1e-6", "--clip", "1"}, 1, `dataset name "9lives"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"dataset", "add", "--state", state}, tc.args...)
			if tc.args[0] != "" && !strings.HasPrefix(tc.args[0], "-") {
				// NAME first, then flags, as users type it
				args = append([]string{"dataset", "add", tc.args[0], "--state", state}, tc.args[1:]...)
			}
			code, _, stderr := runCLI(args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	// none of the refusals registered anything
	code, out, _ := runCLI("dataset", "list", "--state", state)
	if code != 0 || !strings.Contains(out, "no datasets") {
		t.Errorf("after refusals: exit %d, %q", code, out)
	}
}

func TestDatasetAndLedgerCommands(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	csv := filepath.Join("..", "..", "dsl", "ledger", "testdata", "breast_cancer.csv")
	code, out, stderr := runCLI("dataset", "add", "bc", "--csv", csv, "--eps", "3", "--delta", "1e-6", "--clip", "3000", "--columns", "1-30", "--state", state)
	if code != 0 {
		t.Fatalf("add: exit %d: %s", code, stderr)
	}
	for _, want := range []string{`registered dataset "bc"`, "rows (owner only)  569", "columns (d=30)", "ε=3, δ=1e-06 (zcdp accountant)", "rows have an L2 norm above --clip 3000"} {
		if !strings.Contains(norm(out), norm(want)) {
			t.Errorf("add output lacks %q:\n%s", want, out)
		}
	}
	code, _, stderr = runCLI("dataset", "add", "bc", "--csv", csv, "--eps", "30", "--delta", "1e-6", "--clip", "3000", "--state", state)
	if code != 1 || !strings.Contains(stderr, `dataset "bc" is already registered; registrations are final`) {
		t.Errorf("re-add: exit %d, %q", code, stderr)
	}
	// the state directory also comes from the environment
	t.Setenv("PRIVNOTES_STATE", state)
	code, out, _ = runCLI("dataset", "list")
	if code != 0 || !strings.Contains(norm(out), "bc 569 30 row 3000 zcdp 3, 1e-06 0, 0 3, 1e-06") {
		t.Errorf("list: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI("dataset", "show", "bc")
	if code != 0 || !strings.Contains(norm(out), "remaining ε=3, δ=1e-06") || !strings.Contains(norm(out), "spent ε=0, δ=0 in 0 charges") {
		t.Errorf("show: exit %d:\n%s", code, out)
	}
	code, _, stderr = runCLI("dataset", "show", "nope")
	if code != 1 || !strings.Contains(stderr, `no such dataset "nope"`) {
		t.Errorf("show nope: exit %d, %q", code, stderr)
	}
	code, out, _ = runCLI("ledger", "show", "--dataset", "bc")
	if code != 0 || !strings.Contains(out, "dataset/register") || !strings.Contains(out, "head: record 1") {
		t.Errorf("ledger show: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI("ledger", "export", "--json")
	if code != 0 || !strings.Contains(out, `"schema_version": 4`) || strings.Contains(out, `"rows"`) {
		t.Errorf("ledger export: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI("ledger", "verify")
	if code != 0 || !strings.Contains(out, "ledger OK: 1 records") {
		t.Errorf("ledger verify: exit %d:\n%s", code, out)
	}
	code, _, stderr = runCLI("ledger", "frobnicate")
	if code != 2 || !strings.Contains(stderr, `unknown subcommand "frobnicate"`) {
		t.Errorf("ledger frobnicate: exit %d, %q", code, stderr)
	}
}

// TestReadCommandsRefuseMissingState: a mistyped --state is an error that
// names the directory, and the reading commands create nothing there.
func TestReadCommandsRefuseMissingState(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{
		{"ledger", "verify"},
		{"ledger", "show"},
		{"ledger", "export", "--json"},
		{"dataset", "list"},
		{"dataset", "show", "bc"},
	} {
		code, out, stderr := runCLI(append(args, "--state", typo)...)
		want := "no privnotes state in " + typo + "; register data with `privnotes dataset add --state " + typo
		if code != 1 || out != "" || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, stderr, want)
		}
	}
	if _, err := os.Stat(typo); !os.IsNotExist(err) {
		t.Errorf("a reading command created %s (stat: %v)", typo, err)
	}
}

// TestDatasetAddSklearnHeader: a CSV file with scikit-learn's header line
// registers its n_features columns as features and its class column as the
// categorical column "target" over the label names, through --csv and
// --from alike; --columns or --label keep the class column as the owner
// says; --header no and --columns read a file without a header.
func TestDatasetAddSklearnHeader(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	csv := filepath.Join("..", "..", "dsl", "ledger", "testdata", "breast_cancer.csv")
	base := []string{"--eps", "3", "--delta", "1e-6", "--clip", "3000", "--state", state}
	for _, src := range []string{"--csv", "--from"} {
		code, out, stderr := runCLI(append([]string{"dataset", "add", "bc" + src[2:], src, csv}, base...)...)
		if code != 0 {
			t.Fatalf("add %s: exit %d: %s", src, code, stderr)
		}
		for _, want := range []string{
			"columns (d=30) c1, c2,", "c29, c30 clip norm",
			"header (detected by --header auto): line 1 is an sklearn header (n_samples=569, n_features=30, label names)",
			`class column: the last column, c31, is the categorical column "target" with the label names as its public domain (malignant, benign), not a feature`,
			"categorical target: malignant, benign (others: other)",
		} {
			if !strings.Contains(norm(out), norm(want)) {
				t.Errorf("add %s output lacks %q:\n%s", src, want, out)
			}
		}
	}
	// The histogram of the class column has the label names as its keys
	// (and the "other" bucket).
	script := writeCSV(t, dir, "h.pn", "h := private_histogram(dataset(\"bccsv\"), col=\"target\", eps=2.9, delta=1e-7)\nfmt.Println(h.Keys, len(h.Counts))\n")
	if code, out, errs := runCLI("run", "--state", state, script); code != 0 || norm(out) != "[malignant benign other] 3" {
		t.Errorf("histogram of target: %d %q %s", code, out, errs)
	}
	code, out, stderr := runCLI(append([]string{"dataset", "add", "all31", "--csv", csv, "--columns", "1-31"}, base...)...)
	if code != 0 || !strings.Contains(out, "columns (d=31)") || strings.Contains(norm(out), "categorical target") ||
		!strings.Contains(norm(out), "warning: the last column, c31, is registered as a feature but looks like a class label (integers, 2 distinct values). If it is the target, remove this registration (privnotes dataset rm all31)") {
		t.Errorf("--columns 1-31: exit %d, %s\n%s", code, stderr, out)
	}
	code, out, stderr = runCLI(append([]string{"dataset", "add", "reg", "--csv", csv, "--label", "c31", "--label-clip", "1"}, base...)...)
	if code != 0 || !strings.Contains(norm(out), "label c31 (|label| ≤ 1)") || !strings.Contains(out, "columns (d=30)") || strings.Contains(out, "warning") {
		t.Errorf("--label c31: exit %d, %s\n%s", code, stderr, out)
	}
	// A header-less file: --header no names the columns c1, c2, ...
	plain := writeCSV(t, dir, "plain.csv", "1,2,3\n4,5,6\n7,8,9\n")
	code, out, stderr = runCLI(append([]string{"dataset", "add", "plain", "--csv", plain, "--header", "no", "--columns", "3,1"}, base...)...)
	if code != 0 || !strings.Contains(norm(out), "rows (owner only) 3") || !strings.Contains(norm(out), "columns (d=2) c3, c1") || !strings.Contains(out, "header (--header no)") {
		t.Errorf("--header no --columns 3,1: exit %d, %s\n%s", code, stderr, out)
	}
	// A line with the wrong number of fields is named, or dropped and
	// counted with --bad-rows drop.
	ragged := writeCSV(t, dir, "ragged.csv", "3,2,neg,pos\n1,2,0\n3\n5,6,1\n")
	code, _, stderr = runCLI(append([]string{"dataset", "add", "ragged", "--csv", ragged}, base...)...)
	if code != 1 || !strings.Contains(stderr, "ragged.csv, line 3: 1 fields, expected 3; fix it or use --bad-rows drop (1 such lines in all)") {
		t.Errorf("ragged line: exit %d, %s", code, stderr)
	}
	code, out, stderr = runCLI(append([]string{"dataset", "add", "ragged", "--csv", ragged, "--bad-rows", "drop"}, base...)...)
	if code != 0 || !strings.Contains(norm(out), "rows (owner only) 2") || !strings.Contains(out, "dropped 1 lines with the wrong number of fields") {
		t.Errorf("ragged line dropped: exit %d, %s\n%s", code, stderr, out)
	}
	// A wrong n_samples is refused and leaves nothing behind.
	wrong := writeCSV(t, dir, "wrong.csv", "5,2,neg,pos\n1,2,0\n3,4,1\n")
	code, _, stderr = runCLI(append([]string{"dataset", "add", "wrong", "--csv", wrong}, base...)...)
	if code != 1 || !strings.Contains(stderr, "line 1 (sklearn header) says 5 samples but the file has 2 data rows") {
		t.Errorf("wrong n_samples: exit %d, %s", code, stderr)
	}
	if code, out, errs := runCLI("ledger", "verify", "--state", state); code != 0 {
		t.Errorf("ledger verify: %d %s %s", code, out, errs)
	}
}

// dataset add --from registers a typed snapshot, analyses run on it from
// a script, and the ledger verifies the snapshot's hash.
func TestDatasetAddFromSnapshot(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	var b strings.Builder
	b.WriteString("age,income,region,uid\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d,%d,%s,u%d\n", 20+i%60, 1000*(i%50), []string{"north", "south", "mars"}[i%3], i%100)
	}
	src := writeCSV(t, dir, "people.csv", b.String())
	code, out, errs := runCLI("dataset", "add", "people", "--state", state, "--from", src, "--eps", "5", "--delta", "1e-5",
		"--clip", "1e5", "--bounds", "age=0:120", "--bounds", "income=0:1e5", "--categories", "region=north,south", "--unit", "user:uid")
	if code != 0 {
		t.Fatalf("dataset add --from: %d %s", code, errs)
	}
	for _, want := range []string{"rows (owner only) 300", "users (owner only) 100", "columns (d=2) age, income", "age in [0, 120]", "region: north, south (others: other)", "snapshot"} {
		if !strings.Contains(norm(out), want) {
			t.Errorf("owner output lacks %q:\n%s", want, out)
		}
	}
	// Registering the name again is refused before a snapshot is built.
	if code, _, errs := runCLI("dataset", "add", "people", "--state", state, "--from", src, "--eps", "1", "--delta", "1e-6", "--clip", "1"); code != 1 || !strings.Contains(errs, "already registered") {
		t.Errorf("second registration: %d %s", code, errs)
	}
	files, _ := os.ReadDir(filepath.Join(state, "snapshots"))
	if len(files) != 1 { // the snapshot; its row cache is written by the first pass that reads it
		t.Errorf("%d snapshot files, want the snapshot alone", len(files))
	}
	if code, out, errs := runCLI("ledger", "verify", "--state", state); code != 0 {
		t.Fatalf("ledger verify: %d %s %s", code, out, errs)
	}
	script := writeCSV(t, dir, "a.pn", `ds := dataset("people")
c := private_count(ds, eps=0.5, delta=1e-6)
fmt.Println(c.Value > 0)
p := private_pca(ds, k=1, eps=1, delta=1e-6, method="npm")
fmt.Println(p.Components.RawMatrix().Rows)
`)
	code, out, errs = runCLI("run", "--state", state, script)
	if code != 0 || norm(out) != "true 2" {
		t.Fatalf("run on the snapshot: %d %q %s", code, out, errs)
	}
}

// Required number flags show no "(default NaN)" in the help.
func TestDatasetAddHelpHasNoNaN(t *testing.T) {
	code, out, errs := runCLI("dataset", "add", "-h")
	if code != 0 || strings.Contains(out+errs, "NaN") || !strings.Contains(errs, "-eps") {
		t.Errorf("dataset add -h: %d\n%s%s", code, out, errs)
	}
}
