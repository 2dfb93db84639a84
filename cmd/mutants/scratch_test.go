package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMutate(t *testing.T) {
	m := &Mutant{ID: "x", File: "a.go", Original: "b := 2\n\tc := b", Mutated: "b := 1\n\tc := b"}
	src := []byte("package a\n\nfunc f() int {\n\tb := 2\n\tc := b\n\treturn c\n}\n")
	got, line, err := Mutate(src, m)
	if err != nil {
		t.Fatal(err)
	}
	if want := "package a\n\nfunc f() int {\n\tb := 1\n\tc := b\n\treturn c\n}\n"; string(got) != want || line != 4 {
		t.Errorf("Mutate: line %d\n%s", line, got)
	}
	if !bytes.Contains(src, []byte("b := 2")) {
		t.Error("Mutate changed its input")
	}
}

// A snippet that no longer occurs, or occurs twice, is a *RottenError
// naming the mutant, its file and the count.
func TestMutateRotten(t *testing.T) {
	src := []byte("x := 1\ny := 1\n")
	for _, c := range []struct {
		orig  string
		count int
		want  string
	}{
		{"z := 1", 0, "mutant m is rotten: its original snippet no longer occurs in p/a.go"},
		{" := 1", 2, "mutant m is ambiguous: its original snippet occurs 2 times in p/a.go"},
		{"x := 1\ny := 2", 0, "rotten"},
	} {
		_, _, err := Mutate(src, &Mutant{ID: "m", File: "p/a.go", Original: c.orig, Mutated: "q"})
		var rot *RottenError
		if !errors.As(err, &rot) || rot.Count != c.count || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%q: %v, want a RottenError with count %d saying %q", c.orig, err, c.count, c.want)
		}
	}
}

// The scratch copy holds the listed files (a listed file deleted from the
// working tree is skipped), Apply changes only the copy, and the restore
// puts the file back byte for byte with its mode.
func TestScratchApplyRestore(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string, mode os.FileMode) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	orig := "package p\n\nfunc F() int { return 1 + 1 }\n"
	write("p/a.go", orig, 0o640)
	write("p/sub/b.txt", "data", 0o644)
	s, err := NewScratch(root, []string{"p/a.go", "p/sub/b.txt", "p/deleted.go"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	if b, err := os.ReadFile(filepath.Join(s.Dir, "p", "sub", "b.txt")); err != nil || string(b) != "data" {
		t.Fatalf("copy: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "p", "deleted.go")); !os.IsNotExist(err) {
		t.Errorf("a missing file was created: %v", err)
	}

	m := &Mutant{ID: "m", File: "p/a.go", Original: "1 + 1", Mutated: "1 - 1"}
	if err := s.Check(m); err != nil {
		t.Fatal(err)
	}
	line, restore, err := s.Apply(m)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(s.Dir, "p", "a.go")
	if b, _ := os.ReadFile(copyPath); string(b) != "package p\n\nfunc F() int { return 1 - 1 }\n" || line != 3 {
		t.Errorf("applied (line %d): %q", line, b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "p", "a.go")); string(b) != orig {
		t.Errorf("the working tree was changed: %q", b)
	}
	// While applied, the mutant's own snippet is gone: applying it again
	// is the rotten case.
	if _, _, err := s.Apply(m); err == nil {
		t.Error("a second Apply found the snippet")
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(copyPath)
	fi, _ := os.Stat(copyPath)
	if string(b) != orig || fi.Mode().Perm() != 0o640 {
		t.Errorf("restored %q with mode %v, want the original with 0640", b, fi.Mode().Perm())
	}
	if err := s.Check(&Mutant{ID: "r", File: "p/a.go", Original: "2 + 2"}); err == nil {
		t.Error("Check accepted a snippet that does not occur")
	}
	if err := s.Check(&Mutant{ID: "r", File: "p/none.go", Original: "x"}); err == nil {
		t.Error("Check accepted a missing file")
	}
}
