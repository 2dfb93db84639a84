package syntax

import (
	"errors"
	"fmt"
	"github.com/privnotes/privnotes/dsl/catalog"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
	"testing"
)

func TestTranslateGo(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"plain go untouched", "x := 1\nfmt.Println(x % 2)\n", "x := 1\nfmt.Println(x % 2)\n"},
		{"block", "budget eps=1.0, delta=1e-6 {\n\tp := private_pca(ds, k=3, eps=0.7, delta=1e-6)\n}\nshow(p)",
			"__pn_budget_begin(1.0, 1e-06, \"c:1:1\");\n\tp := private_pca(ds, __pn_kw(\"k\", 3), __pn_kw(\"eps\", 0.7), __pn_kw(\"delta\", 1e-6), __pn_block(\"c:1:1\"))\n__pn_budget_end()\nshow(p)"},
		{"block without comma, delta first", "budget delta=0 eps=2 {\n}\n",
			"__pn_budget_begin(2.0, 0.0, \"c:1:1\");\n__pn_budget_end()\n"},
		{"block without delta", "budget eps=0.5 {\n}", "__pn_budget_begin(0.5, 0.0, \"c:1:1\");\n__pn_budget_end()"},
		{"one-line block", "budget eps=1 { n := private_count(ds, eps=1) }; show(n)",
			"__pn_budget_begin(1.0, 0.0, \"c:1:1\"); n := private_count(ds, __pn_kw(\"eps\", 1), __pn_block(\"c:1:1\")) ; __pn_budget_end(); show(n)"},
		{"block at the end of the cell without newline", "x := 1\nbudget eps=1 {\nshow(x)\n}",
			"x := 1\n__pn_budget_begin(1.0, 0.0, \"c:2:1\");\nshow(x)\n__pn_budget_end()"},
		{"block inside a loop", "for i := 0; i < 2; i++ {\n\tbudget eps=1 {\n\t}\n}",
			"for i := 0; i < 2; i++ {\n\t__pn_budget_begin(1.0, 0.0, \"c:2:2\");\n\t__pn_budget_end()\n}"},
		{"budget as an identifier", "budget := 3\nbudget++\nbudget = budget * 2\nf(budget)\ns.budget = 1\n",
			"budget := 3\nbudget++\nbudget = budget * 2\nf(budget)\ns.budget = 1\n"},
		{"budget in strings and comments", "s := \"budget eps=1 {\" + `budget eps=1 {\n%ledger` // budget eps=1 {\n/* budget eps=1 {\n%ledger */ r := 'b'\n",
			"s := \"budget eps=1 {\" + `budget eps=1 {\n%ledger` // budget eps=1 {\n/* budget eps=1 {\n%ledger */ r := 'b'\n"},
		{"strings with = and parens in keyword values", `x := private_pca(ds, eps=0.5, delta=1e-6, method="npm", k=len("a=b)("))`,
			`x := private_pca(ds, __pn_kw("eps", 0.5), __pn_kw("delta", 1e-6), __pn_kw("method", "npm"), __pn_kw("k", len("a=b)(")))`},
		{"nested parens and expressions as values", "m := private_mean(ds, eps=total/(2*n), columns=[]string{\"a\", \"b\"}, delta=f(g(1), 2))",
			"m := private_mean(ds, __pn_kw(\"eps\", total/(2*n)), __pn_kw(\"columns\", []string{\"a\", \"b\"}), __pn_kw(\"delta\", f(g(1), 2)))"},
		{"nested DSL calls", `show(private_count(dataset("a"), eps=1))`, `show(private_count(dataset("a"), __pn_kw("eps", 1)))`},
		{"keyword value is a DSL call with keywords", `x := plot_loadings(private_pca(ds, eps=1, delta=d), component=2)`,
			`x := plot_loadings(private_pca(ds, __pn_kw("eps", 1), __pn_kw("delta", d)), __pn_kw("component", 2))`},
		{"multi-line call", "p := private_pca(ds,\n\tk=2,\n\teps=0.1, delta=1e-6,\n)\n",
			"p := private_pca(ds,\n\t__pn_kw(\"k\", 2),\n\t__pn_kw(\"eps\", 0.1), __pn_kw(\"delta\", 1e-6),\n)\n"},
		{"spaces around =", "c := private_count(ds, eps = 1)", "c := private_count(ds, __pn_kw(\"eps\",  1))"},
		{"method of a value is not a DSL call", "x.private_pca(1)", "x.private_pca(1)"},
		{"DSL function as a value", "f := show\nf(1)", "f := show\nf(1)"},
		{"cell magic", "%%budget eps=1 delta=1e-6\nc := private_count(ds, eps=1)\n",
			"__pn_budget_begin(1.0, 1e-06, \"c:1:1\");\nc := private_count(ds, __pn_kw(\"eps\", 1), __pn_block(\"c:1:1\"))\n\n__pn_budget_end()"},
		{"cell magic after blank lines", "\n  %%budget eps=1, delta=0\nx := 1",
			"\n__pn_budget_begin(1.0, 0.0, \"c:2:3\");\nx := 1\n__pn_budget_end()"},
		{"line magics", "%ledger census\nx := 1\n  %budget\n%datasets\n%help private_pca\n%help",
			"__pn_magic(\"ledger\", \"census\")\nx := 1\n__pn_magic(\"budget\", \"\")\n__pn_magic(\"datasets\", \"\")\n__pn_magic(\"help\", \"private_pca\")\n__pn_magic(\"help\", \"\")"},
		{"modulo at line end is not a magic", "x := 7 %\n3\n", "x := 7 %\n3\n"},
		{"block call with a trailing comma", "budget eps=1 {\nc := private_count(ds,\n\teps=1,\n)\n}",
			"__pn_budget_begin(1.0, 0.0, \"c:1:1\");\nc := private_count(ds,\n\t__pn_kw(\"eps\", 1),\n__pn_block(\"c:1:1\"))\n__pn_budget_end()"},
		{"deferred call in a block names the block", "budget eps=1 {\ndefer private_count(ds, eps=1)\n}",
			"__pn_budget_begin(1.0, 0.0, \"c:1:1\");\ndefer private_count(ds, __pn_kw(\"eps\", 1), __pn_block(\"c:1:1\"))\n__pn_budget_end()"},
		{"unicode before keyword", "s := \"é\"; c := private_count(ds, eps=1)", "s := \"é\"; c := private_count(ds, __pn_kw(\"eps\", 1))"},
		{"function literal in block", "budget eps=1 {\n\tf := func() int { return 1 }\n\tshow(f())\n}",
			"__pn_budget_begin(1.0, 0.0, \"c:1:1\");\n\tf := func() int { return 1 }\n\tshow(f())\n__pn_budget_end()"},
		{"synthetic generator keywords", "x := synth_spiked(n=100, d=5, seed=3)", "x := synth_spiked(__pn_kw(\"n\", 100), __pn_kw(\"d\", 5), __pn_kw(\"seed\", 3))"},
		{"comparison is not a keyword", "if f(a == 1) {}", "if f(a == 1) {}"},
		// The final expression of a %%budget cell stays the cell's final
		// expression statement (the engine displays it), computed inside
		// the block.
		{"%%budget cell ending in an expression", "%%budget eps=0.2 delta=1e-6\nx := 41\nx + 1",
			"__pn_budget_begin(0.2, 1e-06, \"c:1:1\");\nx := 41\n__pn_last := x + 1\n__pn_budget_end(); __pn_last"},
		{"%%budget cell ending in a private call", "%%budget eps=1 delta=1e-6\nprivate_count(ds, eps=0.5)\n",
			"__pn_budget_begin(1.0, 1e-06, \"c:1:1\");\n__pn_last := private_count(ds, __pn_kw(\"eps\", 0.5), __pn_block(\"c:1:1\"))\n\n__pn_budget_end(); __pn_last"},
		{"%%budget cell ending in an expression over a private call", "%%budget eps=1\nprivate_count(ds, eps=0.5).Value * 2 // twice\n",
			"__pn_budget_begin(1.0, 0.0, \"c:1:1\");\n__pn_last := private_count(ds, __pn_kw(\"eps\", 0.5), __pn_block(\"c:1:1\")).Value * 2 // twice\n\n__pn_budget_end(); __pn_last"},
		{"%%budget cell ending in a multi-line expression", "%%budget eps=1\nx +\n\ty",
			"__pn_budget_begin(1.0, 0.0, \"c:1:1\");\n__pn_last := x +\n\ty\n__pn_budget_end(); __pn_last"},
		{"%%budget cell ending in a void DSL call", "%%budget eps=1\nshow(x)", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\nshow(x)\n__pn_budget_end()"},
		{"%%budget cell ending in a call of unknown results", "%%budget eps=1\nf(x)", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\nf(x)\n__pn_budget_end()"},
		{"%%budget cell ending in a method call", "%%budget eps=1\nr.Get(\"a\")", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\nr.Get(\"a\")\n__pn_budget_end()"},
		{"%%budget cell ending in a statement", "%%budget eps=1\nx := 1 // one", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\nx := 1 // one\n__pn_budget_end()"},
		{"%%budget cell ending in a magic", "%%budget eps=1\nx\n%ledger", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\nx\n__pn_magic(\"ledger\", \"\")\n__pn_budget_end()"},
		{"%%budget cell ending in a type", "%%budget eps=1\n[]int", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\n[]int\n__pn_budget_end()"},
		{"block then expression", "budget eps=1 {\n\tx := 41\n}\nx + 1", "__pn_budget_begin(1.0, 0.0, \"c:1:1\");\n\tx := 41\n__pn_budget_end()\nx + 1"},
		{"statements ending in a label", "x := 1\nL:", "x := 1\nL:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Translate("c", tc.src)
			if err != nil {
				t.Fatalf("Translate(%q): %v", tc.src, err)
			}
			if p.Go != tc.want {
				t.Errorf("Translate(%q)\n got: %q\nwant: %q", tc.src, p.Go, tc.want)
			}
			if n, m := strings.Count(p.Go, "\n"), strings.Count(tc.src, "\n"); n != m && !strings.Contains(tc.src, "%%budget") {
				t.Errorf("line count changed: %d -> %d", m, n)
			}
		})
	}
}

// The output of a valid cell must be valid Go (as statements).
func TestTranslateParses(t *testing.T) {
	srcs := []string{
		"ds := dataset(\"census\")\nbudget eps=1.0, delta=1e-6 {\n    pca := private_pca(ds, k=3, eps=0.7, delta=1e-6, method=\"adaptive\")\n    n := private_count(ds, eps=0.3)\n}\nshow(pca)\nshow(n)\n",
		"%%budget eps=1 delta=1e-6\nx := private_count(dataset(\"a\"), eps=0.5)\n%ledger\nshow(x)",
		"budget eps=1 { n := private_count(ds, eps=1) }; show(n)",
		"budget eps=1 {\n\tfor i := 0; i < 3; i++ {\n\t\tshow(private_count(ds, eps=0.1))\n\t}\n}",
	}
	for _, src := range srcs {
		p, err := Translate("c", src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+p.Go+"\n}\n", 0); err != nil {
			t.Errorf("translation of %q is not Go: %v\n%s", src, err, p.Go)
		}
	}
}

// Valid cells stay valid: the end-of-input check does not refuse
// declarations or statements that end the cell correctly, and budget is
// still an identifier where a block cannot start.
func TestTranslateValidEndings(t *testing.T) {
	for _, src := range []string{
		"func f() int { return 1 }", "func (r T) M() {}\n", "func F[T any](x T) T { return x }", "func f()",
		"type T struct{ A int }", "type T[P any] []P", "import \"fmt\"", "import (\n\t\"fmt\"\n)",
		"var x int", "const c = 1", "x++", "L:", "x := 1;", "go f()", "defer f()", "select {}", "ch <- 1", "<-ch",
		"budget := 3\nf(budget)", "x := budget{}", "budget\n", "for {\n}", "// only a comment", "",
		"private_count(ds, eps=1)", "private_count(ds, eps=1, delta=0)", "private_pca(ds, eps=1, delta=d)",
	} {
		if _, err := Translate("c", src); err != nil {
			t.Errorf("Translate(%q): %v", src, err)
		}
	}
}

func TestStaticCosts(t *testing.T) {
	src := `ds := dataset("census")
other := dataset("b")
other = pick()
c0 := private_count(ds, eps=0.25, delta=1e-7)
budget eps=1.0, delta=1e-6 {
	pca := private_pca(ds, k=3, eps=0.7, delta=1e-6)
	n := private_count(dataset("wine"), eps=e)
	m := private_mean(other, eps=0.1, delta=1e-7)
	for i := 0; i < 3; i++ {
		show(private_count(ds, eps=0.1))
	}
	f := func() { private_count(ds, eps=0.2) }
}
for {
	budget eps=2 {
		show(private_count(ds, eps=1))
	}
}`
	p, err := Translate("c", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Calls) != 1 || p.Calls[0] != (Call{Func: "private_count", Dataset: "census", Eps: 0.25, Delta: 1e-7, Static: true, Line: 4, Col: 7}) {
		t.Errorf("calls outside blocks = %+v", p.Calls)
	}
	if len(p.Blocks) != 2 {
		t.Fatalf("blocks = %+v", p.Blocks)
	}
	b := p.Blocks[0]
	if b.Eps != 1 || b.Delta != 1e-6 || b.Line != 5 || b.Col != 1 || b.Repeated || b.Cell {
		t.Errorf("block 0 = %+v", b)
	}
	want := []Call{
		{Func: "private_pca", Dataset: "census", Eps: 0.7, Delta: 1e-6, Static: true, Line: 6, Col: 9},
		{Func: "private_count", Dataset: "wine", Static: false, Line: 7, Col: 7},
		{Func: "private_mean", Dataset: "", Eps: 0.1, Delta: 1e-7, Static: true, Line: 8, Col: 7},
		{Func: "private_count", Dataset: "census", Eps: 0.1, Static: false, Line: 10, Col: 8},
		{Func: "private_count", Dataset: "census", Eps: 0.2, Static: false, Line: 12, Col: 16},
	}
	if len(b.Calls) != len(want) {
		t.Fatalf("block 0 calls = %+v", b.Calls)
	}
	for i := range want {
		if b.Calls[i] != want[i] {
			t.Errorf("call %d = %+v, want %+v", i, b.Calls[i], want[i])
		}
	}
	all := p.AllCalls()
	if len(all) != 7 || all[0].Line != 4 || all[1].Line != 6 || all[6].Line != 16 {
		t.Errorf("AllCalls = %+v", all)
	}
	b = p.Blocks[1]
	if !b.Repeated || len(b.Calls) != 1 || b.Calls[0].Static || b.Calls[0].Eps != 1 {
		t.Errorf("block in a loop = %+v", b)
	}

	p, err = Translate("c", "%%budget eps=1 delta=1e-6\nx := private_count(dataset(\"a\"), eps=0.5)\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Blocks) != 1 || !p.Blocks[0].Cell || len(p.Blocks[0].Calls) != 1 || !p.Blocks[0].Calls[0].Static || p.Blocks[0].Calls[0].Dataset != "a" {
		t.Errorf("%%%%budget cell = %+v", p.Blocks)
	}
	if len(p.Magics) != 1 || p.Magics[0].Name != "%budget" {
		t.Errorf("magics = %+v", p.Magics)
	}
}

func TestMagicsReported(t *testing.T) {
	p, err := Translate("c", "%ledger census\nx := 1\n%help private_pca\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Magic{{Name: "ledger", Args: "census", Line: 1}, {Name: "help", Args: "private_pca", Line: 3}}
	if len(p.Magics) != 2 || p.Magics[0] != want[0] || p.Magics[1] != want[1] {
		t.Errorf("magics = %+v, want %+v", p.Magics, want)
	}
}

func TestLineMap(t *testing.T) {
	src := "s := \"é\"\nbudget eps=1 {\n\tp := private_pca(ds, k=3, eps=0.7, delta=1e-6) + bad\n}\n"
	p, err := Translate("c", src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(p.Go, "\n")
	// the position of "bad" in the output maps to its position in the cell
	outCol := strings.Index(lines[2], "bad") + 1
	if l, c := p.Lines.Map(3, outCol); l != 3 || c != strings.Index(strings.Split(src, "\n")[2], "bad")+1 {
		t.Errorf("Map(3, %d) = %d:%d", outCol, l, c)
	}
	// inside generated text: the start of the rewritten keyword
	outCol = strings.Index(lines[2], "__pn_kw(\"eps\"") + 3
	if l, c := p.Lines.Map(3, outCol); l != 3 || c != strings.Index(strings.Split(src, "\n")[2], "eps")+1 {
		t.Errorf("Map(3, %d) = %d:%d, want the eps keyword", outCol, l, c)
	}
	// code points on a line with a multi-byte character
	if l, c := p.Lines.Map(1, strings.Index(lines[0], "\"")+3+1); l != 1 || c != 8 {
		t.Errorf("Map after é = %d:%d, want 1:8", l, c)
	}
	// the block's begin call maps to `budget`
	if l, c := p.Lines.Map(2, 10); l != 2 || c != 1 {
		t.Errorf("Map in begin call = %d:%d, want 2:1", l, c)
	}
	// past the end of the text (the empty line after the final newline, a
	// parser's wrapper): the end of the last non-blank line
	for _, pos := range [][2]int{{5, 1}, {6, 1}, {99, 3}} {
		if l, c := p.Lines.Map(pos[0], pos[1]); l != 4 || c != 2 {
			t.Errorf("Map(%d, %d) = %d:%d, want 4:2", pos[0], pos[1], l, c)
		}
	}
	// what a %%budget cell's translation appends maps to its last line
	p, err = Translate("c", "%%budget eps=1\nx := 1 + 2\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(p.Go, "\n") + 1; n != 5 {
		t.Fatalf("%q has %d lines", p.Go, n)
	}
	if l, c := p.Lines.Map(5, 3); l != 2 || c != 11 {
		t.Errorf("Map of the appended end = %d:%d, want 2:11", l, c)
	}
}

func TestFuncsTable(t *testing.T) {
	for i, f := range Funcs {
		if i > 0 && Funcs[i-1].Name >= f.Name {
			t.Errorf("Funcs not sorted at %s", f.Name)
		}
		if g, ok := Lookup(f.Name); !ok || g.Name != f.Name {
			t.Errorf("Lookup(%s) failed", f.Name)
		}
		seen := map[string]bool{}
		for _, p := range append(append([]Param{}, f.Positional...), f.Keywords...) {
			if seen[p.Name] {
				t.Errorf("%s: parameter %s twice", f.Name, p.Name)
			}
			seen[p.Name] = true
			if p.Name == "seed" && f.Private {
				t.Errorf("%s: a private function must not take a seed", f.Name)
			}
			if !p.Required && p.Default == "" {
				t.Errorf("%s: %s has neither a default nor Required", f.Name, p.Name)
			}
		}
		if f.Private {
			if e, ok := f.Keyword("eps"); !ok || !e.Required {
				t.Errorf("%s: private function without a required eps", f.Name)
			}
			if _, ok := f.Keyword("delta"); !ok {
				t.Errorf("%s: private function without delta", f.Name)
			}
			if want := map[string]string{"": "dataset", catalog.DatasetFromQuery: "string"}[f.DatasetFrom]; len(f.Positional) == 0 || f.Positional[0].Type != want {
				t.Errorf("%s: private function whose first argument is not a %s", f.Name, want)
			}
			if f.Paper == "" || f.Releases == "" {
				t.Errorf("%s: private function without paper or releases", f.Name)
			}
		}
	}
	if _, ok := Lookup("private_pcaa"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
	f, _ := Lookup("private_pca")
	h := f.Help()
	for _, want := range []string{"private_pca(ds, k=1, eps=<float>, delta=<float>, method=\"auto\"", "Paper: npm: Hardt & Price", "Releases:", `"adaptive"`, "charges (eps, delta)"} {
		if !strings.Contains(h, want) {
			t.Errorf("help of private_pca lacks %q:\n%s", want, h)
		}
	}
}

func TestErrorInterfaces(t *testing.T) {
	_, err := Translate("", "x := 1\nprivate_count(ds)")
	var se *Error
	if !errors.As(err, &se) {
		t.Fatal(err)
	}
	if l, c := se.Position(); l != 2 || c != 1 || !strings.HasPrefix(err.Error(), "line 2:1: private_count needs eps=") {
		t.Errorf("error %q at %d:%d", err.Error(), l, c)
	}
	p, err := Translate("", "budget eps=1 {\n}")
	if err != nil || !strings.Contains(p.Go, `"1:1"`) {
		t.Errorf("empty cell id: %q %v", p.Go, err)
	}
}

// FuzzTranslate: no input panics, and a translation keeps the cell's lines
// and maps every output position back into the cell.
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{
		"budget eps=1 { x := private_pca(ds, k=2, eps=0.5, delta=1e-6) }",
		"%%budget eps=1 delta=1e-6\nshow(private_count(dataset(\"a\"), eps=1))\n%ledger",
		"s := `%help\n` + \"budget eps=1 {\" // }",
		"f(a, b=(c=1))", "budget eps=1 {\n\tfunc() { return }()\n}", "x := 'é'; %budget",
		"%%budget eps=1\nx := 41\nx + 1", "y := 1 +\n", "if x\n", "switch {\ncase x:\n}\nL:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Translate("c", src)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.Line < 1 || se.Col < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			if strings.HasPrefix(se.Msg, "unexpected end of input") {
				if _, perr := parser.ParseFile(token.NewFileSet(), "", "package p;func _(){\n"+src+"\n}", 0); perr == nil {
					t.Fatalf("%q parses as Go statements but is reported as cut short: %v", src, err)
				}
			}
			return
		}
		in := strings.Count(src, "\n")
		out := strings.Count(p.Go, "\n")
		if out != in && !(len(p.Blocks) > 0 && p.Blocks[0].Cell && out == in+1) {
			t.Fatalf("lines %d -> %d", in, out)
		}
		if len(src) > 4096 {
			return // the position check below is quadratic
		}
		for i, line := range strings.Split(p.Go, "\n") {
			for col := 1; col <= len(line)+1; col++ {
				l, c := p.Lines.Map(i+1, col)
				if l < 1 || c < 1 || l > in+1 {
					t.Fatalf("Map(%d, %d) = %d:%d", i+1, col, l, c)
				}
			}
		}
	})
}

var benchCell = strings.Repeat(`ds := dataset("census")
budget eps=1.0, delta=1e-6 {
	pca := private_pca(ds, k=3, eps=0.7, delta=1e-6, method="adaptive")
	n := private_count(ds, eps=0.3)
	fmt.Println("budget eps=1 {", n)
}
show(pca)
`, 10)

// BenchmarkTranslate against BenchmarkScanOnly, the go/scanner pass alone.
func BenchmarkTranslate(b *testing.B) {
	for b.Loop() {
		if _, err := Translate("c", benchCell); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanOnly(b *testing.B) {
	src := []byte(benchCell)
	for b.Loop() {
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0)
		for {
			if _, tk, _ := s.Scan(); tk == token.EOF {
				break
			}
		}
	}
}

func TestLiteralForms(t *testing.T) {
	for lit, want := range map[string]float64{"1_000.5": 1000.5, "0x1p-2": 0.25, "0o10": 8, "1e-6": 1e-6, ".5": 0.5, "2": 2} {
		p, err := Translate("c", "private_count(ds, eps="+lit+")")
		if err != nil || len(p.Calls) != 1 || p.Calls[0].Eps != want || !p.Calls[0].Static {
			t.Errorf("eps=%s: %+v, %v; want %g", lit, p, err, want)
		}
	}
}

// A []string of string literals is a literal keyword value (the
// pre-check plans and prices the call); anything else in braces is not.
func TestStringSliceLiterals(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want any
	}{
		{`[]string{"a", "b"}`, []string{"a", "b"}},
		{`[]string{"a",}`, []string{"a"}},
		{`[]string{}`, []string{}},
		{`[]string{"a" "b"}`, nil},
		{`[]string{a}`, nil},
		{`[]int{"a"}`, nil},
		{`[]string{"a", b}`, nil},
	} {
		p, err := Translate("c", "m := private_mean(ds, eps=1, delta=1e-6, columns="+c.lit+")")
		if err != nil {
			t.Errorf("%s: %v", c.lit, err)
			continue
		}
		got := p.Keywords[CallPos{1, 6}]["columns"]
		if fmt.Sprint(got) != fmt.Sprint(c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("columns=%s recorded as %#v, want %#v", c.lit, got, c.want)
		}
	}
}

// A dataset argument that is a plain identifier from an earlier cell is
// reported as DatasetVar, unless the cell could rebind it before the call.
func TestDatasetVar(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"from an earlier cell", "budget eps=1, delta=1e-6 {\n\tp := private_pca(bc, eps=2, delta=1e-6)\n}", "bc"},
		{"outside a block", "n := private_count(bc, eps=0.5)", "bc"},
		{"used by DSL calls and methods before", "show(remaining(bc))\nfmt.Println(bc.Columns())\nn := private_count(bc, eps=0.5)", "bc"},
		{"package calls before", "fmt.Println(math.Sqrt(2), len(\"ab\"), float64(3))\nn := private_count(bc, eps=0.5)", "bc"},
		{"rebound later only", "n := private_count(bc, eps=0.5)\nbc = other", "bc"},
		{"reassigned before", "bc = other\nn := private_count(bc, eps=0.5)", ""},
		{"redeclared before", "bc := other\nn := private_count(bc, eps=0.5)", ""},
		{"in a multi-assignment", "x, bc, y := 1, other, 2\nn := private_count(bc, eps=0.5)", ""},
		{"var declaration", "var bc = other\nn := private_count(bc, eps=0.5)", ""},
		{"address taken", "p := &bc\n*p = other\nn := private_count(bc, eps=0.5)", ""},
		{"in a closure", "f := func() { bc = other }\nf()\nn := private_count(bc, eps=0.5)", ""},
		{"passed to a function", "swap(&bc)\nn := private_count(bc, eps=0.5)", ""},
		{"a user function is called", "reset()\nn := private_count(bc, eps=0.5)", ""},
		{"inside the block", "budget eps=1, delta=1e-6 {\n\tbc = other\n\tp := private_pca(bc, eps=0.5, delta=1e-6)\n}", ""},
		{"range variable", "for _, bc := range xs {\n\t_ = bc\n}\nn := private_count(bc, eps=0.5)", ""},
		{"write through a pointer", "*pbc = other\nn := private_count(bc, eps=0.5)", ""},
		{"a product before", "x := 2 * y\nz := (x) * 3\nn := private_count(bc, eps=0.5)", "bc"},
		{"not an identifier", "n := private_count(hs[0], eps=0.5)", ""},
	}
	for _, c := range cases {
		p, err := Translate("", c.src)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		calls := p.AllCalls()
		last := calls[len(calls)-1]
		if last.Func == "remaining" || last.Func == "show" {
			t.Fatalf("%s: AllCalls lists non-private calls", c.name)
		}
		if last.DatasetVar != c.want || last.Dataset != "" {
			t.Errorf("%s: DatasetVar = %q (Dataset %q), want %q", c.name, last.DatasetVar, last.Dataset, c.want)
		}
	}
	// A literal dataset wins; DatasetVar is only for the unknown case.
	p, err := Translate("", "bc := dataset(\"a\")\nn := private_count(bc, eps=0.5)")
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Calls[0]; c.Dataset != "a" || c.DatasetVar != "" {
		t.Errorf("tracked variable: %+v", c)
	}
}

// Help queries the IPython way (NAME?, ?NAME, NAME??, %magic?) run as
// %help NAME; a ? anywhere else is left to Go (which refuses it).
func TestHelpQuery(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"private_pca?", `__pn_magic("help", "private_pca")`},
		{"  ?private_count  ", `__pn_magic("help", "private_count")`},
		{"private_pca??", `__pn_magic("help", "private_pca")`},
		{"%ledger?", `__pn_magic("help", "ledger")`},
		{"%%budget?", `__pn_magic("help", "budget")`},
		{"x := 1\nprivate_pca?\nx", "x := 1\n__pn_magic(\"help\", \"private_pca\")\nx"},
		{"s := \"private_pca?\"", "s := \"private_pca?\""},
		{"// private_pca?", "// private_pca?"},
	} {
		p, err := Translate("c", tc.src)
		if err != nil {
			t.Errorf("Translate(%q): %v", tc.src, err)
			continue
		}
		if p.Go != tc.want {
			t.Errorf("Translate(%q)\n got %q\nwant %q", tc.src, p.Go, tc.want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"privat_pca?", `line 1:1: no help for "privat_pca" — did you mean private_pca?`},
		{"  x?", `line 1:3: no help for "x"`},
	} {
		if _, err := Translate("c", tc.src); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Translate(%q) = %v, want %q...", tc.src, err, tc.want)
		}
	}
	// Not help queries: Go's own error about the ? stays.
	for _, src := range []string{"?private_pca?", "x := a ? b : c", "f(x)?"} {
		if p, err := Translate("c", src); err == nil && strings.Contains(p.Go, "__pn_magic") {
			t.Errorf("Translate(%q) made a help query: %q", src, p.Go)
		}
	}
}

// A Gaussian call without delta in a block with a δ is priced at the
// block's δ (and its literal keywords carry it, for the pre-check's plan);
// a pure-or-Gaussian call keeps its default; without a block's δ the call
// is refused.
func TestBlockDeltaTarget(t *testing.T) {
	p, err := Translate("c", "budget eps=1, delta=1e-7 {\n\tm := private_pca(dataset(\"a\"), k=2, eps=0.5)\n\tn := private_count(dataset(\"a\"), eps=0.1)\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	calls := p.Blocks[0].Calls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	if c := calls[0]; c.Delta != 1e-7 || !c.DeltaFromBlock || !c.Static {
		t.Errorf("private_pca without delta = %+v, want the block's δ 1e-7", c)
	}
	if d := p.Keywords[CallPos{2, 7}]["delta"]; d != 1e-7 {
		t.Errorf("recorded delta literal = %v, want 1e-7", d)
	}
	if c := calls[1]; c.Delta != 0 || c.DeltaFromBlock {
		t.Errorf("private_count without delta = %+v, want δ=0 (its Laplace default)", c)
	}
	for _, tc := range []struct{ src, want string }{
		{"m := private_pca(dataset(\"a\"), k=2, eps=0.5)", "private_pca needs delta > 0"},
		{"budget eps=1 {\n\tm := private_pca(dataset(\"a\"), eps=0.5)\n}", "add delta= to the block's header"},
		{"budget eps=1, delta=1e-6 {\n\tm := private_pca(dataset(\"a\"), eps=0.5, delta=0)\n}", "delta must be > 0"},
	} {
		if _, err := Translate("c", tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want an error containing %q, got %v", tc.src, tc.want, err)
		}
	}
}
