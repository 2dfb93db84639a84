package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodList = `# a comment, then a blank line

mutant: noise/halve
file:   pkg/a.go
why:    the scale must not halve
test:   ./pkg ^TestScale$
test:   ./other ./third ^(TestA|TestB)$
timeout: 90s
--- original
	x := f(a,
		b) // tabs and ` + "`backquotes`" + ` are kept
--- mutant
	x := f(a/2,
		b)
--- end

   # indented comment between entries
mutant: pkg/delete
file: pkg/b.go
why: deleting a call
test: ./pkg .
--- original
	g()

--- mutant
--- end
`

func TestParseList(t *testing.T) {
	ms, err := ParseList(strings.NewReader(goodList), "list")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d mutants, want 2", len(ms))
	}
	m := ms[0]
	if m.ID != "noise/halve" || m.File != "pkg/a.go" || m.Why != "the scale must not halve" || m.Timeout != 90*time.Second || m.Line != 3 {
		t.Errorf("header: %+v", m)
	}
	if len(m.Tests) != 2 || m.Tests[0].String() != "./pkg -run ^TestScale$" ||
		strings.Join(m.Tests[1].Pkgs, ",") != "./other,./third" || m.Tests[1].Run != "^(TestA|TestB)$" {
		t.Errorf("tests: %+v", m.Tests)
	}
	if want := "\tx := f(a,\n\t\tb) // tabs and `backquotes` are kept"; m.Original != want {
		t.Errorf("original %q, want %q", m.Original, want)
	}
	if want := "\tx := f(a/2,\n\t\tb)"; m.Mutated != want {
		t.Errorf("mutated %q, want %q", m.Mutated, want)
	}
	// A blank line inside a snippet is part of it; an empty mutant
	// section deletes the snippet.
	if ms[1].Original != "\tg()\n" || ms[1].Mutated != "" {
		t.Errorf("second entry: original %q, mutated %q", ms[1].Original, ms[1].Mutated)
	}
}

func TestParseListErrors(t *testing.T) {
	entry := func(header, orig, mut string) string {
		return header + "\n--- original\n" + orig + "\n--- mutant\n" + mut + "\n--- end\n"
	}
	const h = "mutant: a\nfile: p/a.go\nwhy: w\ntest: ./p ."
	for _, c := range []struct{ name, list, want string }{
		{"key before mutant", "file: p/a.go\n", `"file" before the first`},
		{"no colon", "mutant: a\nfile p/a.go\n", `want "key: value"`},
		{"bad id", entry("mutant: A B\nfile: p/a.go\nwhy: w\ntest: ./p .", "x", "y"), "mutant id"},
		{"duplicate id", entry(h, "x", "y") + entry(h, "x", "z"), `"a" already used at line 1`},
		{"unknown key", entry(h+"\nfiel: x", "x", "y"), `unknown key "fiel"`},
		{"file twice", entry(h+"\nfile: p/b.go", "x", "y"), "file given twice"},
		{"no file", entry("mutant: a\nwhy: w\ntest: ./p .", "x", "y"), "no file"},
		{"test file", entry("mutant: a\nfile: p/a_test.go\nwhy: w\ntest: ./p .", "x", "y"), "non-test Go files"},
		{"escaping file", entry("mutant: a\nfile: ../a.go\nwhy: w\ntest: ./p .", "x", "y"), "inside the repository"},
		{"no why", entry("mutant: a\nfile: p/a.go\ntest: ./p .", "x", "y"), "no why"},
		{"no test", entry("mutant: a\nfile: p/a.go\nwhy: w", "x", "y"), "no test line"},
		{"test without regex", entry(h+"\ntest: ./p", "x", "y"), "packages then a -run regex"},
		{"test package not relative", entry(h+"\ntest: github.com/x/p .", "x", "y"), "relative to the root"},
		{"bad regex", entry(h+"\ntest: ./p (", "x", "y"), "test regex"},
		{"bad timeout", entry(h+"\ntimeout: soon", "x", "y"), "timeout"},
		{"empty original", entry(h, "", "y"), "empty original"},
		{"identity", entry(h, "x", "x"), "the mutant is the original"},
		{"end before mutant", h + "\n--- original\nx\n--- end\n", `"--- end" before "--- mutant"`},
		{"original twice", h + "\n--- original\nx\n--- mutant\n--- original\n--- end\n", "inside the mutant section"},
		{"unterminated", h + "\n--- original\nx\n--- mutant\ny\n", "missing \"--- end\""},
		{"no snippet", h + "\n", "before its \"--- original\" section"},
		{"mutant without snippet", h + "\nmutant: b\n", `mutant "a" has no "--- original" section`},
	} {
		_, err := ParseList(strings.NewReader(c.list), "list")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestSelect(t *testing.T) {
	ms := []*Mutant{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	got, err := Select(ms, " c, a ")
	if err != nil || len(got) != 2 || got[0].ID != "a" || got[1].ID != "c" {
		t.Errorf("Select: %v, %v", got, err)
	}
	if got, _ := Select(ms, ""); len(got) != 3 {
		t.Errorf("empty -only selects %d", len(got))
	}
	if _, err := Select(ms, "a,zz,yy"); err == nil || !strings.Contains(err.Error(), "no mutant yy, zz") {
		t.Errorf("unknown ids: %v", err)
	}
}

// The repository's own list parses, and names files and packages that
// exist. (Whether each snippet still occurs exactly once is for `make
// mutants` or `go run ./cmd/mutants -check` to say: code under work may
// move a snippet, and that must fail the mutant run, not every build.)
func TestRepositoryList(t *testing.T) {
	root := filepath.Join("..", "..")
	f, err := os.Open(filepath.Join(root, ".ci", "mutants.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := ParseList(f, ".ci/mutants.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 40 {
		t.Errorf("the list holds %d mutants; issue 18 asks for at least 40", len(ms))
	}
	for _, m := range ms {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m.File))); err != nil {
			t.Errorf("mutant %s: %v", m.ID, err)
		}
		for _, s := range m.Tests {
			for _, p := range s.Pkgs {
				if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil || !fi.IsDir() {
					t.Errorf("mutant %s: test package %s is not a directory of the repository", m.ID, p)
				}
			}
			if _, err := compileRun(s.Run); err != nil {
				t.Errorf("mutant %s: %v", m.ID, err)
			}
		}
	}
}
