package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
)

func TestDatasetAddMatrix(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	sym := writeCSV(t, dir, "sym.txt", "# a symmetric matrix\n2, 1, 0\n1 3 0.5\n\n0;0.5;-1\n")
	rect := writeCSV(t, dir, "rect.txt", "2,1\n1,3\n0,0.5\n")
	ragged := writeCSV(t, dir, "ragged.txt", "1,2\n3\n")
	text := writeCSV(t, dir, "text.txt", "a,b\n1,2\n")
	nan := writeCSV(t, dir, "nan.txt", "1,NaN\nNaN,1\n")
	asym := writeCSV(t, dir, "asym.txt", "1,2\n3,1\n")
	empty := writeCSV(t, dir, "empty.txt", "# nothing\n")
	base := []string{"--entry-bound", "4", "--eps", "1", "--delta", "1e-6", "--state", state}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ragged", append([]string{"m", "--matrix", ragged}, base...), 1, "ragged.txt line 2: 1 entries, but the first row has 2"},
		{"header", append([]string{"m", "--matrix", text}, base...), 1, `text.txt line 1, column 1: "a" is not a finite number`},
		{"nan", append([]string{"m", "--matrix", nan}, base...), 1, `nan.txt line 1, column 2: "NaN" is not a finite number`},
		{"not square", append([]string{"m", "--matrix", rect}, base...), 1, "rect.txt is 3×2, not square: a symmetric matrix must be square; give --rectangular"},
		{"not symmetric", append([]string{"m", "--matrix", asym}, base...), 1, "entry (2, 1) = 3 differs from entry (1, 2) = 2: the matrix is not symmetric"},
		{"beyond bound", []string{"m", "--matrix", sym, "--entry-bound", "2.5", "--eps", "1", "--delta", "1e-6", "--state", state}, 1, "entry (2, 2) = 3 lies outside --entry-bound 2.5"},
		{"empty", append([]string{"m", "--matrix", empty}, base...), 1, "empty.txt: no matrix rows"},
		{"no bound", []string{"m", "--matrix", sym, "--eps", "1", "--delta", "1e-6", "--state", state}, 2, "--matrix needs --entry-bound B"},
		{"zero bound", []string{"m", "--matrix", sym, "--entry-bound", "0", "--eps", "1", "--delta", "1e-6", "--state", state}, 2, "--entry-bound 0: must be a finite number > 0"},
		{"with clip", append([]string{"m", "--matrix", sym, "--clip", "1"}, base...), 2, "--clip is for row datasets"},
		{"with from", append([]string{"m", "--matrix", sym, "--from", rect}, base...), 2, "--matrix is a source of its own"},
		{"with unit", append([]string{"m", "--matrix", sym, "--unit", "user:a"}, base...), 2, "are for row datasets"},
		{"bound without matrix", []string{"m", "--from", rect, "--entry-bound", "1", "--eps", "1", "--delta", "1e-6", "--clip", "1", "--state", state}, 2, "--entry-bound and --rectangular are for --matrix FILE"},
		{"delta 0 under zcdp", []string{"m", "--matrix", sym, "--entry-bound", "4", "--eps", "1", "--delta", "0", "--state", state}, 2, "use --accountant basic for a pure ε budget"},
		{"missing file", append([]string{"m", "--matrix", filepath.Join(dir, "nope.txt")}, base...), 1, "nope.txt"},
	}
	for _, tc := range tests {
		code, _, stderr := runCLI(append([]string{"dataset", "add"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, code, stderr, tc.code, tc.want)
		}
	}
	// Nothing was registered or left behind by the refusals.
	if _, out, _ := runCLI("dataset", "list", "--state", state); strings.Contains(out, "NAME") {
		t.Errorf("refused registrations left datasets:\n%s", out)
	}
	if es, _ := os.ReadDir(filepath.Join(state, "snapshots")); len(es) != 0 {
		t.Errorf("refused registrations left %d files in snapshots/", len(es))
	}

	if code, out, stderr := runCLI(append([]string{"dataset", "add", "S", "--matrix", sym}, base...)...); code != 0 || !strings.Contains(norm(out), "matrix 3×3 (symmetric)") {
		t.Fatalf("symmetric: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(append([]string{"dataset", "add", "R", "--matrix", rect, "--rectangular"}, base...)...); code != 0 || !strings.Contains(norm(out), "matrix 3×2 (rectangular, analysed as the 5×5 symmetric [[0, M], [Mᵀ, 0]])") {
		t.Fatalf("rectangular: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := runCLI("dataset", "list", "--state", state); code != 0 || !strings.Contains(norm(out), "R 3 2 entry 4 zcdp") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI("dataset", "show", "R", "--state", state); code != 0 || !strings.Contains(norm(out), "neighbours entry: one entry") || !strings.Contains(norm(out), "remaining ε=1") {
		t.Errorf("show R: exit %d\n%s", code, out)
	}
	st, err := ledger.OpenExisting(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		name string
		want ledger.MatrixShape
	}{{"S", ledger.MatrixShape{Rows: 3, Cols: 3, Symmetric: true, EntryBound: 4}}, {"R", ledger.MatrixShape{Rows: 3, Cols: 2, EntryBound: 4}}} {
		sc, err := st.Schema(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if !sc.IsMatrix() || sc.Neighbour != ledger.NeighbourEntry || sc.Matrix == nil || *sc.Matrix != c.want {
			t.Errorf("%s: schema kind %q neighbour %q matrix %+v, want matrix/entry %+v", c.name, sc.Kind, sc.Neighbour, sc.Matrix, c.want)
		}
	}
	// Only the two snapshots (registration writes no row cache): the
	// temporary CSV is gone.
	if es, _ := os.ReadDir(filepath.Join(state, "snapshots")); len(es) != 2 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("snapshots/ holds %v, want the two snapshots", names)
	}
}
