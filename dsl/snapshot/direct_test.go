package snapshot

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A registration that refuses bad rows writes the snapshot in one pass
// (direct); one that drops them goes through the stage. On a source
// without bad rows both must give the same file: the same schema, rows,
// values and order, byte for byte.
func TestDirectMatchesStaged(t *testing.T) {
	t.Parallel() // own temporary files; reads testRowGroupRows, which only sequential tests change
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x,c,y\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "%g,%s,%d\n", float64(i)/7, []string{"p", "q", "r", ""}[i%4], i%5)
	}
	src := write(t, dir, "s.csv", b.String())
	base := Spec{From: src, Label: "y", Bounds: map[string][2]float64{"x": {0, 100}}, Categories: map[string][]string{"c": {"p", "q"}}}
	var infos []*Info
	var reads []scanned
	for _, mode := range []string{"reject", "drop"} {
		spec := base
		spec.BadRows = mode
		info, _, got := buildRead(t, spec, "x", "c")
		infos, reads = append(infos, info), append(reads, got)
	}
	d, s := infos[0], infos[1]
	if d.Hash != s.Hash || d.Rows != 3000 || s.Rows != 3000 || d.Dropped != 0 || s.Dropped != 0 {
		t.Errorf("direct: hash %s, %d rows, %d dropped; staged: hash %s, %d rows, %d dropped; want the same file of 3000 rows",
			d.Hash[:12], d.Rows, d.Dropped, s.Hash[:12], s.Rows, s.Dropped)
	}
	if !slices.Equal(reads[0].x, reads[1].x) || !slices.Equal(reads[0].label, reads[1].label) || reads[0].n != 3000 {
		t.Errorf("direct and staged snapshots read differently (%d and %d rows)", reads[0].n, reads[1].n)
	}
}

// Snapshots written with schema version 1 (the row count in the schema)
// still open, with the count checked against the row groups; a version
// this reader does not know is refused.
func TestOpenSchemaVersions(t *testing.T) {
	t.Parallel() // own temporary files
	dir := t.TempDir()
	cols := []Column{{Name: "a"}}
	for _, tc := range []struct {
		name string
		meta meta
		err  string // "": opens
	}{
		{"version 1", meta{Version: 1, Columns: cols, Rows: 3}, ""},
		{"version 1, wrong count", meta{Version: 1, Columns: cols, Rows: 4}, "row count"},
		{"version 1, no count", meta{Version: 1, Columns: cols}, "inconsistent"},
		{"version 2", meta{Version: 2, Columns: cols}, ""},
		{"version 2 with a count", meta{Version: 2, Columns: cols, Rows: 3}, "inconsistent"},
		{"version 3", meta{Version: 3, Columns: cols}, "schema version 3"},
	} {
		m, err := json.Marshal(tc.meta)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".parquet")
		duckExec(t, fmt.Sprintf("COPY (SELECT CAST(x AS DOUBLE) AS a FROM range(3) t(x)) TO %s (FORMAT parquet, KV_METADATA {%s: %s})",
			quoteString(p), metaKey, quoteString(string(m))))
		h, err := hashFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, h)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		}
		if err == nil {
			if tc.err == "" && r.Info().Rows != 3 {
				t.Errorf("%s: %d rows, want 3", tc.name, r.Info().Rows)
			}
			r.Close()
		}
	}
}
