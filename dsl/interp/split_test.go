package interp

import (
	"fmt"
	"strings"
	"testing"
)

func TestSplitItems(t *testing.T) {
	tests := []struct {
		src  string
		want string // kind:text per chunk, joined by " | "
	}{
		{"x := 1", "stmt:x := 1"},
		{"import \"fmt\"\nx := 1", "import:import \"fmt\" | stmt:x := 1"},
		{"import \"fmt\"\nfunc f() {}\nf()", "import:import \"fmt\" | decl:func f() {} | stmt:f()"},
		{"var x = 4; x", "decl:var x = 4; | stmt:x"},
		{"type T struct{ A int }\nconst c = 1\nvar v T\nv.A = c\nv", "decl:type T struct{ A int }\nconst c = 1\nvar v T | stmt:v.A = c\nv"},
		{"func() { x := 1 }()\nfunc (t T) M() {}", "stmt:func() { x := 1 }() | decl:func (t T) M() {}"},
		{"func(a int) {}(1)", "stmt:func(a int) {}(1)"},
		{"func() int { return 1 }()", "stmt:func() int { return 1 }()"},
		{"func (p *P) Get() int { return 1 }", "decl:func (p *P) Get() int { return 1 }"},
		{"f := func() {\n\tfor {}\n}\nfunc g[T any](x T) T { return x }", "stmt:f := func() {\n\tfor {}\n} | decl:func g[T any](x T) T { return x }"},
		{"import (\n\t\"fmt\"\n\t\"math\"\n)\nfmt.Println(math.Pi)", "import:import (\n\t\"fmt\"\n\t\"math\"\n) | stmt:fmt.Println(math.Pi)"},
		{"s := `a\nvar b`\n// func f()\nx := 2", "stmt:s := `a\nvar b`\n// func f()\nx := 2"},
		{"if x := 1; x > 0 {\n} else {\n}\nvar y int", "stmt:if x := 1; x > 0 {\n} else {\n} | decl:var y int"},
		{"", ""},
	}
	for _, tt := range tests {
		var got []string
		for _, c := range splitItems(tt.src) {
			got = append(got, fmt.Sprintf("%s:%s", c.kind, tt.src[c.start:c.end]))
		}
		if g := strings.Join(got, " | "); g != tt.want {
			t.Errorf("splitItems(%q)\n got %q\nwant %q", tt.src, g, tt.want)
		}
	}
}

func TestApplyEditsMapsBack(t *testing.T) {
	src := "abc\ndef"
	out, back := applyEdits(src, []edit{{4, "XY", 0}, {1, "Q", 0}, {7, "Z", 0}})
	if out != "aQbc\nXYdefZ" {
		t.Fatalf("applyEdits = %q", out)
	}
	for outOff, want := range map[int]int{0: 0, 1: 1, 2: 1, 3: 2, 5: 4, 6: 4, 7: 4, 9: 6, 10: 7} {
		if got := back(outOff); got != want {
			t.Errorf("back(%d) = %d, want %d", outOff, got, want)
		}
	}
}

func TestStmtEditsWrapLoops(t *testing.T) {
	src := "x := 0\nfor i := 0; i < 3; i++ { x += i }\nfunc() { x++ }()\ngo func() { for {} }()\nx"
	c := chunk{kind: stmtChunk, start: 0, end: len(src)}
	if err := parseChunk(src, &c); err != nil {
		t.Fatal(err)
	}
	n := 0
	out, _ := applyEdits(src, stmtEdits(&c, func(int) string { return "G()" }, func() string { n++; return fmt.Sprint("F", n) }, "R"))
	want := "G();x := 0\nG();F1:=func(){for i := 0; i < 3; i++ { x += i }};F1()\nG();F2:=func() { x++ };F2()\nG();go func() { for {} }()\nG();R(x)"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}
