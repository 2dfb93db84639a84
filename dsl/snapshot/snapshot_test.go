package snapshot

import (
	"compress/gzip"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// write creates a file with content in dir and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeGzip(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := io.WriteString(zw, content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// duckExec runs statements in a scratch DuckDB, to make fixtures.
func duckExec(t *testing.T, stmts ...string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// writeParquet converts a CSV text to a Parquet file with DuckDB.
func writeParquet(t *testing.T, dir, name, csvText string) string {
	t.Helper()
	src := write(t, dir, name+".src.csv", csvText)
	p := filepath.Join(dir, name)
	duckExec(t, fmt.Sprintf("COPY (SELECT * FROM read_csv(%s)) TO %s (FORMAT parquet)", quoteString(src), quoteString(p)))
	return p
}

// scanned is one pass over a source.
type scanned struct {
	x     []float64
	label []float64
	unit  []int32
	n     int
}

// readAll scans src once with batches of capacity batch.
func readAll(t *testing.T, src rows.Source, batch int) scanned {
	t.Helper()
	labeled := false
	if l, ok := src.(rows.Labeled); ok {
		labeled = l.HasLabels()
	}
	_, units := src.(rows.Units)
	var s scanned
	err := rows.ForEach(context.Background(), src, batch, labeled, units, func(b *rows.Batch) error {
		if b.N < 1 || b.N > batch {
			return fmt.Errorf("a batch of %d rows for capacity %d", b.N, batch)
		}
		s.x = append(s.x, b.X[:b.N*src.Dim()]...)
		if labeled {
			s.label = append(s.label, b.Label[:b.N]...)
		}
		if units {
			s.unit = append(s.unit, b.Unit[:b.N]...)
		}
		s.n += b.N
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// buildRead builds spec into a temporary directory, opens the snapshot
// and reads features with batches of 1000 rows.
func buildRead(t *testing.T, spec Spec, features ...string) (*Info, rows.Source, scanned) {
	t.Helper()
	info, err := Build(context.Background(), spec, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	src, err := r.Source(features)
	if err != nil {
		t.Fatal(err)
	}
	return info, src, readAll(t, src, 1000)
}

func names(cols []Column) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return out
}

const baseCSV = "a,b,y\n1,2,0.5\n-3.25,4e3,1\n5,6,2\n"

func TestBuildFormats(t *testing.T) {
	t.Parallel() // own temporary files; reads testRowGroupRows, which only sequential tests change
	want := []float64{1, 2, 0.5, -3.25, 4000, 1, 5, 6, 2}
	jsonl := `{"a": 1, "b": 2, "y": 0.5}
{"a": -3.25, "b": 4e3, "y": 1}
{"a": 5, "b": 6, "y": 2}
`
	tests := []struct {
		name string
		spec func(dir string) Spec
		want []float64
	}{
		{"csv", func(d string) Spec { return Spec{From: write(t, d, "s.csv", baseCSV)} }, want},
		{"csv with CRLF and BOM", func(d string) Spec {
			return Spec{From: write(t, d, "s.csv", "\ufeff"+strings.ReplaceAll(baseCSV, "\n", "\r\n"))}
		}, want},
		{"gzipped csv", func(d string) Spec { return Spec{From: writeGzip(t, d, "s.csv.gz", baseCSV)} }, want},
		{"parquet", func(d string) Spec { return Spec{From: writeParquet(t, d, "s.parquet", baseCSV)} }, want},
		{"jsonl", func(d string) Spec { return Spec{From: write(t, d, "s.jsonl", jsonl)} }, want},
		{"ndjson gz", func(d string) Spec { return Spec{From: writeGzip(t, d, "s.ndjson.gz", jsonl)} }, want},
		{"sql", func(d string) Spec {
			p := write(t, d, "s.csv", baseCSV)
			return Spec{SQL: fmt.Sprintf("SELECT a, b, y FROM read_csv(%s);", quoteString(p))}
		}, want},
		{"sql keeps its ORDER BY", func(d string) Spec {
			p := write(t, d, "s.csv", baseCSV)
			return Spec{SQL: fmt.Sprintf("SELECT a, b, y FROM read_csv(%s) ORDER BY a DESC", quoteString(p))}
		}, []float64{5, 6, 2, 1, 2, 0.5, -3.25, 4000, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, _, got := buildRead(t, tc.spec(t.TempDir()), "a", "b", "y")
			if !slices.Equal(got.x, tc.want) {
				t.Errorf("read %v, want %v", got.x, tc.want)
			}
			if fmt.Sprint(names(info.Columns)) != "[a b y]" || info.Rows != 3 || info.Dropped != 0 {
				t.Errorf("info %+v", info)
			}
			st, err := os.Stat(info.Path)
			if err != nil || st.Mode().Perm() != 0o444 || !strings.HasSuffix(info.Path, "t-"+info.Hash[:12]+".parquet") {
				t.Errorf("snapshot file %s: %v %v", info.Path, st.Mode(), err)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(info.Path), ".pn-build-*"))
			if len(left) != 0 {
				t.Errorf("work files left behind: %v", left)
			}
		})
	}
}

func TestColumnRules(t *testing.T) {
	t.Parallel() // own temporary files; reads testRowGroupRows, which only sequential tests change
	src := "uid,age,region,score,y\nu1,30,north,0.5,1\nu2,150,west,-2,0\nu1,-5,south,7,1\nu3,40,,3,0\nu2,20,north,1,1\n"
	tests := []struct {
		name     string
		spec     Spec
		features []string
		x        []float64
		label    []float64
		unit     []int32
		users    int
	}{
		{"categories with other", Spec{Categories: map[string][]string{"region": {"north", "south"}, "uid": {"u1", "u2"}}},
			[]string{"region", "uid"}, []float64{0, 0, 2, 1, 1, 0, 2, 2, 0, 1}, nil, nil, 0},
		{"bounds clamp on read", Spec{Bounds: map[string][2]float64{"age": {0, 120}, "score": {-1, 5}}, Categories: map[string][]string{"region": {"north"}, "uid": {"u1"}}},
			[]string{"age", "score"}, []float64{30, 0.5, 120, -1, 0, 5, 40, 3, 20, 1}, nil, nil, 0},
		{"user column gives dense indices by first appearance", Spec{UserColumn: "uid", Categories: map[string][]string{"region": {"north"}}},
			[]string{"age"}, []float64{30, 150, -5, 40, 20}, nil, []int32{0, 1, 0, 2, 1}, 3},
		{"label", Spec{Label: "y", Categories: map[string][]string{"region": {"north"}, "uid": {"u1"}}},
			[]string{"score"}, []float64{0.5, -2, 7, 3, 1}, []float64{1, 0, 1, 0, 1}, nil, 0},
		{"label with bounds and users", Spec{Label: "score", UserColumn: "uid", Bounds: map[string][2]float64{"score": {0, 1}}, Categories: map[string][]string{"region": {"north"}}},
			[]string{"y", "age"}, []float64{1, 30, 0, 150, 1, -5, 0, 40, 1, 20}, []float64{0.5, 0, 1, 1, 1}, []int32{0, 1, 0, 2, 1}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.From = write(t, t.TempDir(), "s.csv", src)
			info, source, got := buildRead(t, tc.spec, tc.features...)
			if !slices.Equal(got.x, tc.x) || !slices.Equal(got.label, tc.label) || !slices.Equal(got.unit, tc.unit) {
				t.Errorf("read x %v label %v unit %v\nwant x %v label %v unit %v", got.x, got.label, got.unit, tc.x, tc.label, tc.unit)
			}
			if info.Users != tc.users || info.UserColumn != tc.spec.UserColumn || info.Label != tc.spec.Label {
				t.Errorf("info %+v", info)
			}
			_, isLabeled := source.(rows.Labeled)
			u, isUnits := source.(rows.Units)
			if isLabeled != (tc.label != nil) || isUnits != (tc.users > 0) || (isUnits && u.NumUnits() != tc.users) {
				t.Errorf("source %T: labeled %v units %v", source, isLabeled, isUnits)
			}
			for _, c := range info.Columns {
				if c.Name == tc.spec.Label || c.Name == tc.spec.UserColumn {
					t.Errorf("label or user column %q among the features", c.Name)
				}
			}
		})
	}
}

// TestStoredValues checks what the snapshot file itself holds: no raw
// user identifiers and no out-of-domain categories.
func TestStoredValues(t *testing.T) {
	src := write(t, t.TempDir(), "s.csv", "email,region,x\nann@example.org,north,1\nbob@example.org,secret-place,2\n")
	info, err := Build(context.Background(), Spec{From: src, UserColumn: "email", Categories: map[string][]string{"region": {"north"}}}, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"ann@example.org", "bob@", "secret-place"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the snapshot holds %q", secret)
		}
	}
}

func TestBadRows(t *testing.T) {
	t.Parallel() // own temporary files; reads testRowGroupRows, which only sequential tests change
	tests := []struct {
		name    string
		csv     string
		spec    Spec
		errWant []string // reject: all must occur in the error
		x       []float64
		dropped int64
	}{
		{"missing value", "a,b\n1,2\n3,\n5,6\n", Spec{}, []string{`column "b"`, "data row 2", "s.csv"}, []float64{1, 2, 5, 6}, 1},
		{"not a number", "a,b\n1,2\n3,4\n5,abc\n7,8\n", Spec{}, []string{`column "b"`, "line 4", "not a number"}, []float64{1, 2, 3, 4, 7, 8}, 1},
		{"non-finite", "a,b\n1,2\nnan,4\n5,inf\n1e999,1\n7,8\n", Spec{}, []string{`column "a"`, "data row 2", "3 bad rows"}, []float64{1, 2, 7, 8}, 3},
		{"ragged lines", "a,b\n1,2\n3\n5,6,7\n7,8\n", Spec{}, []string{"line 3", "missing columns"}, []float64{1, 2, 7, 8}, 2},
		{"missing label", "a,y\n1,2\n3,\n", Spec{Label: "y"}, []string{`column "y"`, "data row 2"}, []float64{1}, 1},
		{"missing user", "u,a\nk,2\n,3\nk,4\n", Spec{UserColumn: "u"}, []string{`user column "u"`, "data row 2"}, []float64{2, 4}, 1},
		{"text label", "a,y\n1,yes\n2,3\n", Spec{Label: "y"}, []string{`column "y"`, "line 2"}, []float64{2}, 1},
		{"declared numeric by bounds", "a,b\n1,x\n2,3\n", Spec{Bounds: map[string][2]float64{"b": {0, 10}}}, []string{`column "b"`, "line 2"}, []float64{2, 3}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/reject", func(t *testing.T) {
			dir := t.TempDir()
			spec := tc.spec
			spec.From = write(t, dir, "s.csv", tc.csv)
			_, err := Build(context.Background(), spec, dir, "t")
			if err == nil {
				t.Fatal("built")
			}
			for _, w := range tc.errWant {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "t-*")); len(m) > 0 {
				t.Errorf("a failed build left %v", m)
			}
		})
		t.Run(tc.name+"/drop", func(t *testing.T) {
			spec := tc.spec
			spec.From = write(t, t.TempDir(), "s.csv", tc.csv)
			spec.BadRows = "drop"
			info, err := Build(context.Background(), spec, t.TempDir(), "t")
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(info.Path, info.Hash)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			src, err := r.Source(names(info.Columns))
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, src, 3)
			if !slices.Equal(got.x, tc.x) || info.Dropped != tc.dropped || info.Rows != int64(got.n) {
				t.Errorf("read %v dropped %d rows %d; want %v dropped %d", got.x, info.Dropped, info.Rows, tc.x, tc.dropped)
			}
		})
	}
	// Parquet and JSON sources report the row.
	dir := t.TempDir()
	p := write(t, dir, "s.jsonl", "{\"a\": 1}\n{\"a\": null}\n")
	if _, err := Build(context.Background(), Spec{From: p}, dir, "t"); err == nil || !strings.Contains(err.Error(), `row 2: column "a"`) {
		t.Errorf("jsonl: %v", err)
	}
}

func TestRefused(t *testing.T) {
	t.Parallel() // own temporary files; reads testRowGroupRows, which only sequential tests change
	ok := "a,b\n1,2\n"
	tests := []struct {
		name string
		spec func(dir string) Spec
		want string
	}{
		{"no source", func(string) Spec { return Spec{} }, "exactly one"},
		{"two sources", func(d string) Spec { return Spec{From: write(t, d, "s.csv", ok), SQL: "SELECT 1"} }, "exactly one"},
		{"bad-rows value", func(d string) Spec { return Spec{From: write(t, d, "s.csv", ok), BadRows: "skip"} }, "reject or drop"},
		{"non-numeric column", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,city\n1,Paris\n")} }, `"city" of`},
		{"non-numeric column hint", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,city\n1,Paris\n")} }, "--categories"},
		{"date column", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,d\n1,2024-01-02\n")} }, "DuckDB reads it as DATE"},
		{"mostly text", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,c\n1,x\n2,y\n3,4\n")} }, "most of its first values are not numbers"},
		{"reserved name", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,__pn_unit\n1,2\n")} }, "reserved prefix"},
		{"reserved name any case", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,__PN_x\n1,2\n")} }, "reserved prefix"},
		{"control character", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,\"b\tc\"\n1,2\n")} }, "control"},
		{"bidi override", func(d string) Spec { return Spec{From: write(t, d, "s.jsonl", "{\"a\u202e\": 1}\n")} }, "format character"},
		{"unknown label", func(d string) Spec { return Spec{From: write(t, d, "s.csv", ok), Label: "z"} }, `no column "z"`},
		{"unknown bounds column", func(d string) Spec {
			return Spec{From: write(t, d, "s.csv", ok), Bounds: map[string][2]float64{"z": {0, 1}}}
		}, `no column "z"`},
		{"bad bounds", func(d string) Spec {
			return Spec{From: write(t, d, "s.csv", ok), Bounds: map[string][2]float64{"a": {1, 1}}}
		}, "lo < hi"},
		{"bounds on a categorical column", func(d string) Spec {
			return Spec{From: write(t, d, "s.csv", ok), Bounds: map[string][2]float64{"a": {0, 1}}, Categories: map[string][]string{"a": {"x"}}}
		}, "both bounds and categories"},
		{"categorical label", func(d string) Spec {
			return Spec{From: write(t, d, "s.csv", ok), Label: "a", Categories: map[string][]string{"a": {"x"}}}
		}, "cannot be categorical"},
		{"control character in a category", func(d string) Spec {
			return Spec{From: write(t, d, "s.csv", ok), Categories: map[string][]string{"a": {"x\n"}}}
		}, "control"},
		{"only a label", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "y\n1\n"), Label: "y"} }, "no feature columns"},
		{"no rows", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,b\n")} }, "no rows"},
		{"all rows dropped", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,b\n1,\n"), BadRows: "drop"} }, "every row"},
		{"empty file", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "")} }, "empty"},
		{"unknown extension", func(d string) Spec { return Spec{From: write(t, d, "s.txt", ok)} }, "cannot tell the format"},
		{"parquet named csv", func(d string) Spec {
			p := writeParquet(t, d, "x.parquet", ok)
			q := filepath.Join(d, "s.csv")
			os.Rename(p, q)
			return Spec{From: q}
		}, "looks like Parquet"},
		{"csv named parquet", func(d string) Spec { return Spec{From: write(t, d, "s.parquet", ok)} }, "looks like CSV"},
		{"binary named csv", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "\x00\x01\x02\xff")} }, "not Parquet and not UTF-8"},
		{"gzip without .gz", func(d string) Spec {
			p := writeGzip(t, d, "x.csv.gz", ok)
			q := filepath.Join(d, "s.csv")
			os.Rename(p, q)
			return Spec{From: q}
		}, "gzip-compressed"},
		{"latin-1 csv", func(d string) Spec { return Spec{From: write(t, d, "s.csv", "a,b\n1,caf\xe9\n")} }, "not Parquet and not UTF-8"},
		{"two statements in --sql", func(string) Spec { return Spec{SQL: "SELECT 1 AS a; SELECT 2 AS a"} }, "DuckDB cannot read"},
		{"bad name", func(d string) Spec { return Spec{From: write(t, d, "s.csv", ok)} }, "name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := tc.spec(dir)
			name := "t"
			if tc.name == "bad name" {
				name = "../escape"
			}
			_, err := Build(context.Background(), spec, dir, name)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNamesDifferingInCase: DuckDB's readers rename such columns (A_1),
// and plan refuses them should a source deliver them anyway.
func TestNamesDifferingInCase(t *testing.T) {
	b := &builder{desc: "src"}
	err := b.plan([]srcCol{{"a", "DOUBLE"}, {"A", "DOUBLE"}})
	if err == nil || !strings.Contains(err.Error(), "differ only in case") {
		t.Errorf("error %v", err)
	}
}

func TestRowLimit(t *testing.T) {
	defer func(n int64) { maxRows = n }(maxRows)
	maxRows = 2
	dir := t.TempDir()
	_, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", "a\n1\n2\n3\n")}, dir, "t")
	if err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("error %v", err)
	}
	if _, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", "a\n1\n2\n")}, dir, "t"); err != nil {
		t.Fatal(err)
	}
}

// TestQuotedNames registers names that need quoting in SQL.
func TestQuotedNames(t *testing.T) {
	odd := []string{`we"ird`, "it's", `back\slash`, "select", "mit Leerzeichen", "Größe"}
	var head, row []string
	for i, n := range odd {
		head = append(head, `"`+strings.ReplaceAll(n, `"`, `""`)+`"`)
		row = append(row, strconv.Itoa(i))
	}
	csvText := strings.Join(head, ",") + "\n" + strings.Join(row, ",") + "\n"
	spec := Spec{From: write(t, t.TempDir(), "s.csv", csvText), Bounds: map[string][2]float64{"it's": {0, 0.5}}, Label: `we"ird`}
	info, src, got := buildRead(t, spec, odd[1:]...)
	if fmt.Sprint(names(info.Columns)) != fmt.Sprint(odd[1:]) || !slices.Equal(got.x, []float64{0.5, 2, 3, 4, 5}) || !slices.Equal(got.label, []float64{0}) {
		t.Errorf("columns %q read %v label %v (%T)", names(info.Columns), got.x, got.label, src)
	}
}

func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("u,x,y,c\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "user%d,%d,%g,%s\n", (i*7919)%613, i, float64(i)/3, []string{"p", "q", "r"}[i%3])
	}
	src := write(t, dir, "s.csv", b.String())
	for _, spec := range []Spec{
		{From: src, Categories: map[string][]string{"u": {"user1"}, "c": {"p", "q"}}},
		{From: src, UserColumn: "u", Label: "y", Categories: map[string][]string{"c": {"p", "q"}}},
	} {
		one, err := Build(context.Background(), spec, filepath.Join(dir, "one"), "t")
		if err != nil {
			t.Fatal(err)
		}
		two, err := Build(context.Background(), spec, filepath.Join(dir, "two"), "t")
		if err != nil {
			t.Fatal(err)
		}
		if one.Hash != two.Hash || filepath.Base(one.Path) != filepath.Base(two.Path) {
			t.Errorf("two builds differ: %s %s", one.Hash, two.Hash)
		}
		if one.Users != 0 && one.Users != 613 {
			t.Errorf("%d users", one.Users)
		}
	}
}

func TestVerifyDetectsChange(t *testing.T) {
	dir := t.TempDir()
	info, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", baseCSV)}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(info.Path, info.Hash); err != nil {
		t.Fatal(err)
	}
	if err := Verify(info.Path, strings.ToUpper(info.Hash)); err == nil {
		t.Error("an upper-case hash accepted")
	}
	raw, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.Chmod(info.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info.Path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Verify(info.Path, info.Hash); err == nil || !strings.Contains(err.Error(), "changed after registration") {
		t.Errorf("Verify: %v", err)
	}
	if _, err := Open(info.Path, info.Hash); err == nil {
		t.Error("Open accepted a changed snapshot")
	}
	// A Parquet file that is not a snapshot is refused even with its
	// own hash.
	other := writeParquet(t, dir, "plain.parquet", baseCSV)
	h, _ := hashFile(other)
	if _, err := Open(other, h); err == nil || !strings.Contains(err.Error(), "not a privnotes snapshot") {
		t.Errorf("Open of a plain Parquet file: %v", err)
	}
}

// parseCSV is the reference reading of a numeric CSV with a header.
func parseCSV(t *testing.T, path string) (header []string, x [][]float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		row := make([]float64, len(r))
		for j, s := range r {
			if row[j], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatal(err)
			}
		}
		x = append(x, row)
	}
	return recs[0], x
}

// TestReadMatchesSource reads a snapshot of many row groups (and so of
// many windows) with several batch capacities and compares every value,
// label and unit with a plain parse of the CSV.
func TestReadMatchesSource(t *testing.T) {
	defer func(n int) { testRowGroupRows = n }(testRowGroupRows)
	testRowGroupRows = 2048
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	const n = 20000
	writeNumericCSV(t, p, n, 5) // columns x0..x4
	header, want := parseCSV(t, p)
	info, err := Build(context.Background(), Spec{From: p, Label: "x4", UserColumn: "x0", Bounds: map[string][2]float64{"x2": {-1, 1}}}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.windows) < 3 {
		t.Fatalf("only %d windows", len(r.windows))
	}
	features := []string{"x3", "x1", "x2"} // not the file's order
	src, err := r.Source(features)
	if err != nil {
		t.Fatal(err)
	}
	// Reference: users by first appearance of x0's text.
	f, _ := os.Open(p)
	recs, _ := csv.NewReader(f).ReadAll()
	f.Close()
	first := map[string]int32{}
	var wantX, wantY []float64
	var wantU []int32
	for i, row := range want {
		for _, name := range features {
			v := row[slices.Index(header, name)]
			if name == "x2" {
				v = min(max(v, -1), 1)
			}
			wantX = append(wantX, v)
		}
		wantY = append(wantY, row[4])
		u := recs[i+1][0]
		if _, ok := first[u]; !ok {
			first[u] = int32(len(first))
		}
		wantU = append(wantU, first[u])
	}
	if info.Users != len(first) {
		t.Errorf("%d users, want %d", info.Users, len(first))
	}
	for _, batch := range []int{1, 7, 1000, n + 5} {
		got := readAll(t, src, batch)
		if got.n != n || !slices.Equal(got.x, wantX) || !slices.Equal(got.label, wantY) || !slices.Equal(got.unit, wantU) {
			t.Errorf("batch %d: %d rows, values equal %v, labels %v, units %v", batch, got.n,
				slices.Equal(got.x, wantX), slices.Equal(got.label, wantY), slices.Equal(got.unit, wantU))
		}
	}
	// A batch without room for labels or units gets features only.
	cur, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	b := rows.NewBatch(3, 10, false, false)
	if err := cur.Next(b); err != nil || b.N != 10 || !slices.Equal(b.X, wantX[:30]) {
		t.Errorf("features-only batch: %v %d", err, b.N)
	}
	if err := cur.Next(&rows.Batch{X: make([]float64, 2)}); !errors.Is(err, rows.ErrDim) {
		t.Errorf("a batch smaller than a row: %v", err)
	}
}

func TestScanCancel(t *testing.T) {
	defer func(n int) { testRowGroupRows = n }(testRowGroupRows)
	testRowGroupRows = 2048
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	writeNumericCSV(t, p, 20000, 3)
	info, err := Build(context.Background(), Spec{From: p}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, cache := range []bool{true, false} { // the row cache's pass, Parquet's
		src, err := r.source([]string{"x0", "x1"}, cache)
		if err != nil {
			t.Fatal(err)
		}
		scanCancel(t, src)
	}
}

func scanCancel(t *testing.T, src rows.Source) {
	ctx, cancel := context.WithCancel(context.Background())
	cur, err := src.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := rows.NewBatch(2, 100, false, false)
	if err := cur.Next(b); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := cur.Next(b); !errors.Is(err, context.Canceled) || b.N != 0 {
		t.Errorf("Next after cancel: %v, %d rows", err, b.N)
	}
	if err := cur.Next(b); !errors.Is(err, context.Canceled) {
		t.Errorf("Next again: %v", err)
	}
	cur.Close()
	if _, err := src.Scan(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a cancelled context: %v", err)
	}
	// A cancel during a pass with a large batch stops it too.
	ctx, cancel = context.WithCancel(context.Background())
	n := 0
	err = rows.ForEach(ctx, src, 512, false, false, func(b *rows.Batch) error {
		n += b.N
		if n >= 4096 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n >= 20000 {
		t.Errorf("ForEach: %v after %d rows", err, n)
	}
}

// TestReaderLifetime: concurrent scans, Close with a scan open, and a
// reader's DuckDB that may read its snapshot and nothing else.
func TestReaderLifetime(t *testing.T) {
	dir := t.TempDir()
	other := write(t, dir, "other.csv", baseCSV)
	info, err := Build(context.Background(), Spec{From: write(t, dir, "s.csv", baseCSV)}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Open(info.Path, info.Hash) // a second reader at once
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()

	conn, err := r.db.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT * FROM read_csv(" + quoteString(other) + ")",
		"SET enable_external_access = true",
		"INSTALL httpfs",
		"COPY (SELECT 1) TO " + quoteString(filepath.Join(dir, "out.csv")),
	} {
		if _, err := conn.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err == nil {
			t.Errorf("a reader's DuckDB ran %s", q)
		}
	}
	conn.Close()

	src, _ := r.Source([]string{"a"})
	src2, _ := r2.Source([]string{"b", "a"})
	c1, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, src2, 2); !slices.Equal(got.x, []float64{2, 1, 4000, -3.25, 6, 5}) {
		t.Errorf("second reader read %v", got.x)
	}
	r.Close() // c1 keeps the database until it closes
	b := rows.NewBatch(1, 5, false, false)
	if err := c1.Next(b); err != nil || !slices.Equal(b.X[:b.N], []float64{1, -3.25, 5}) {
		t.Errorf("Next after Reader.Close: %v %v", err, b.X[:b.N])
	}
	if err := c1.Next(b); err != io.EOF {
		t.Errorf("end: %v", err)
	}
	c1.Close()
	if err := c1.Next(b); err == nil || err == io.EOF {
		t.Errorf("Next on a closed cursor: %v", err)
	}
	if _, err := src.Scan(context.Background()); err == nil {
		t.Error("Scan after Close")
	}
	if _, err := r.Source([]string{"nope"}); err == nil {
		t.Error("a source of an unknown column")
	}
}

// TestScanVerifiesOrder: a scan checks that it reads every row once, in
// the file's order, and fails with the fixed message otherwise. The
// windows are tampered with to make DuckDB deliver rows out of place.
func TestScanVerifiesOrder(t *testing.T) {
	defer func(n int) { testRowGroupRows = n }(testRowGroupRows)
	testRowGroupRows = 2048
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	writeNumericCSV(t, p, 10000, 2)
	info, err := Build(context.Background(), Spec{From: p}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	fixed := "snapshot: reading the snapshot " + filepath.Base(info.Path) + " failed"
	for name, windows := range map[string][]window{
		"reversed": nil, // the windows are right, the query's order is not
		"overlap":  {{0, 100}, {50, 10000}},
		"gap":      {{0, 100}, {200, 10000}},
		"short":    {{0, 9000}},
		"beyond":   {{0, 10001}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Open(info.Path, info.Hash)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if windows != nil {
				r.windows = windows
			}
			src, _ := r.Source([]string{"x1"})
			src.(*source).cache = false // the Parquet scan's checks
			if windows == nil {
				sp := src.(*source).spec
				q := sp.query
				sp.query = func(w window) string { return q(w) + " ORDER BY file_row_number DESC" }
			}
			err = rows.ForEach(context.Background(), src, 64, false, false, func(*rows.Batch) error { return nil })
			if err == nil || err.Error() != fixed {
				t.Errorf("error %v, want %q", err, fixed)
			}
		})
	}
}

// TestConcurrentScans runs passes of one source at once (run with -race).
func TestConcurrentScans(t *testing.T) {
	defer func(n int) { testRowGroupRows = n }(testRowGroupRows)
	testRowGroupRows = 2048
	dir := t.TempDir()
	p := filepath.Join(dir, "gen.csv")
	writeNumericCSV(t, p, 10000, 3)
	info, err := Build(context.Background(), Spec{From: p, Label: "x2"}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, err := r.Source([]string{"x1", "x0"})
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, src, 100)
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			var got scanned
			// Half the passes read the row cache, half Parquet.
			src, _ := r.source([]string{"x1", "x0"}, g%2 == 0)
			err := rows.ForEach(context.Background(), src, 50+g*37, true, false, func(b *rows.Batch) error {
				got.x = append(got.x, b.X[:2*b.N]...)
				got.label = append(got.label, b.Label[:b.N]...)
				return nil
			})
			if err == nil && (!slices.Equal(got.x, want.x) || !slices.Equal(got.label, want.label)) {
				err = errors.New("a concurrent pass read other values")
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
