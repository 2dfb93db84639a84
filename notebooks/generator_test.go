package notebooks_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratorMatchesNotebooks runs scripts/make_notebooks.py into a
// temporary directory and requires every notebook it writes to equal the
// committed one byte for byte. A cell added to a notebook by hand but not to
// the generator (or the other way round) would otherwise be lost the next
// time someone regenerates the notebooks.
func TestGeneratorMatchesNotebooks(t *testing.T) {
	tmp := t.TempDir()
	scripts := filepath.Join(tmp, "scripts")
	if err := os.Mkdir(scripts, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("scripts", "make_notebooks.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "make_notebooks.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// The script writes next to its own directory's parent: tmp.
	out, err := exec.Command(python, filepath.Join(scripts, "make_notebooks.py")).CombinedOutput()
	if err != nil {
		t.Fatalf("make_notebooks.py: %v\n%s", err, out)
	}
	written, err := filepath.Glob(filepath.Join(tmp, "*.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	if len(written) < 4 {
		t.Fatalf("the generator wrote %d notebooks, want the 4 it owns (quickstart, power-methods, dp-pca, federated)", len(written))
	}
	for _, path := range written {
		name := filepath.Base(path)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("the generator writes %s, which is not committed: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
			line := 0
			for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
				line++
			}
			t.Errorf("%s differs from what scripts/make_notebooks.py writes, first at line %d:\n committed: %q\n generated: %q\n"+
				"edit the cell lists in the script and rerun it (or copy the notebook's new cells into it)",
				name, line+1, at(wl, line), at(gl, line))
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
