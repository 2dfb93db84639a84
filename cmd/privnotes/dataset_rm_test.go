package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataset rm removes an uncharged registration (database or snapshot),
// refuses a charged one saying why and what to do, suggests a near name
// for an unknown one, and the ledger verifies after each step.
func TestDatasetRm(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	src := writeCSV(t, dir, "d.csv", "a,b\n1,2\n3,4\n5,6\n")
	add := func(name string) {
		t.Helper()
		if code, _, errs := runCLI("dataset", "add", name, "--state", state, "--from", src, "--eps", "5", "--delta", "1e-6", "--clip", "10"); code != 0 {
			t.Fatalf("add %s: %d %s", name, code, errs)
		}
	}
	verify := func(step string) {
		t.Helper()
		if code, out, errs := runCLI("ledger", "verify", "--state", state); code != 0 || !strings.Contains(out, "ledger OK") {
			t.Fatalf("ledger verify after %s: %d %s %s", step, code, out, errs)
		}
	}
	add("brest_cancer")
	add("used")
	snaps := func() int { f, _ := os.ReadDir(filepath.Join(state, "snapshots")); return len(f) }
	if snaps() != 2 {
		t.Fatalf("%d snapshot files, want 2 (registration writes no row cache)", snaps())
	}
	// Each snapshot gets its row cache beside it (dsl/snapshot/cache.go),
	// as the first pass that reads it would write it.
	for _, name := range []string{"brest_cancer", "used"} {
		if code, _, errs := runCLI("dataset", "recache", name, "--state", state); code != 0 {
			t.Fatalf("recache %s: %d %s", name, code, errs)
		}
	}
	if snaps() != 4 {
		t.Fatalf("%d snapshot files, want 4 (2 snapshots and their row caches)", snaps())
	}
	code, out, errs := runCLI("dataset", "rm", "brest_cancer", "--state", state)
	if code != 0 || !strings.Contains(out, `removed dataset "brest_cancer"`) || !strings.Contains(out, "ledger record 3") {
		t.Fatalf("rm: %d %q %s", code, out, errs)
	}
	if snaps() != 2 {
		t.Errorf("%d snapshot files after rm, want 2 (rm deletes the snapshot and its row cache)", snaps())
	}
	verify("rm")
	if code, out, _ := runCLI("dataset", "list", "--state", state); code != 0 || strings.Contains(out, "brest_cancer") {
		t.Errorf("list after rm: %d\n%s", code, out)
	}
	// Re-added under the same name: the chain verifies with both records.
	add("brest_cancer")
	verify("add again")
	if code, out, _ := runCLI("ledger", "show", "--state", state, "--dataset", "brest_cancer"); code != 0 || strings.Count(out, "dataset/register") != 2 || !strings.Contains(out, "dataset/remove") {
		t.Errorf("ledger show: %d\n%s", code, out)
	}
	// A charged dataset is refused, and says why and what to do.
	script := writeCSV(t, dir, "a.pn", "c := private_count(dataset(\"used\"), eps=0.5, delta=1e-6)\nfmt.Println(c.Value > -1e9)\n")
	if code, out, errs := runCLI("run", "--state", state, script); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errs)
	}
	code, _, errs = runCLI("dataset", "rm", "used", "--state", state)
	for _, want := range []string{"has 1 charges", "append-only", "budget spent stays spent", "use a new name"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("rm of a charged dataset: exit %d, stderr %q lacks %q", code, errs, want)
		}
	}
	// An unknown name: did you mean.
	code, _, errs = runCLI("dataset", "rm", "usde", "--state", state)
	if code != 1 || !strings.Contains(errs, `no dataset "usde"`) || !strings.Contains(errs, `Did you mean "used"?`) {
		t.Errorf("rm of an unknown name: %d %q", code, errs)
	}
	if code, _, errs := runCLI("dataset", "rm", "--state", state); code != 2 || !strings.Contains(errs, "missing the dataset NAME") {
		t.Errorf("rm without a name: %d %q", code, errs)
	}
	verify("refusals")
}
