package interp

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestComplete(t *testing.T) {
	e, err := New(Config{Plugin: &fakeDSL{cap: 1}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, "myVariable := 3\nfunc myFunc() {}\ntype myType struct{}\nvar dense = mat.NewDense(1, 1, nil)\n"+
		"r := pca_like()\ntype holder struct{ Components *mat.Dense; N int }\nh := holder{}\nhp := &holder{}\ntabHandle := \"tab\"")
	tests := []struct {
		code      string
		cursor    int // -1: end of code
		want      []string
		notWant   []string
		wantStart int // cursor_start, -1: cursor minus the prefix length in the test
	}{
		{"my", -1, []string{"myFunc", "myType", "myVariable"}, nil, 0},
		{"x := myV", -1, []string{"myVariable"}, []string{"myFunc"}, 5},
		{"math.Sq", -1, []string{"Sqrt"}, []string{"Sin"}, 5},
		{"strings.", -1, []string{"Builder", "Split", "TrimSpace"}, nil, 8},
		{"mat.NewD", -1, []string{"NewDense", "NewDiagDense"}, nil, 4},
		{"sh", -1, []string{"show", "show_json"}, nil, 0},
		{"priv", -1, []string{"private_pca"}, nil, 0},
		{"private_pca(ds, ", -1, []string{"delta=", "eps=", "k=", "method="}, nil, 16},
		{"private_pca(ds, me", -1, []string{"method="}, []string{"k="}, 16},
		{"fmt.Println(my", -1, []string{"myVariable"}, []string{"k="}, 12},
		{"dense.", -1, []string{"At", "Dims", "T"}, nil, 6},
		{"ma", -1, []string{"map", "mat", "math"}, []string{"__pni_guard"}, 0},
		{"s := \"é\"; my", -1, []string{"myVariable"}, nil, 10},       // code points, not bytes
		{"my + 1", 2, []string{"myFunc", "myVariable"}, nil, 0},       // cursor inside
		{"__pn", -1, nil, []string{"__pni_guard", "__pni_result"}, 0}, // internals hidden
		// the choices of a keyword inside its string, and nothing else
		{`private_pca(ds, method="`, -1, []string{"auto", "npm", "adaptive", "oja"}, []string{"myVariable", "mat", "k="}, 24},
		{`private_pca(ds, k=2, method="n`, -1, []string{"npm"}, []string{"auto", "myVariable"}, 29},
		{`private_pca(ds, method="np", k=2)`, 26, []string{"npm"}, []string{"auto"}, 24}, // cursor inside a closed string
		{`private_pca(ds, neighbours="`, -1, []string{"replace-one", "add-remove"}, []string{""}, 28},
		// keywords of a DSL call after its first argument: only the
		// keywords, not yet given; none where a value goes
		{"private_pca(ds, de", -1, []string{"delta="}, []string{"defer", "delete"}, 16},
		{"private_pca(ds,\n\tk=2, ", -1, []string{"delta=", "eps=", "method="}, []string{"k="}, 22},
		{"private_pca(ds, eps=de", -1, []string{"defer"}, []string{"delta="}, 20},
		// strings the DSL lists: dataset names, a handle's columns
		{`dataset("`, -1, []string{"wine", "wide"}, []string{"myVariable"}, 9},
		{`x := dataset("wi`, -1, []string{"wine", "wide"}, nil, 14},
		{`private_pca(tabHandle, k=1, col="a`, -1, []string{"alcohol", "ash"}, nil, 33},
		{`private_pca(myVariable, col="`, -1, nil, []string{"alcohol"}, 29},
		{`private_pca(f(tabHandle), col="`, -1, nil, []string{"alcohol"}, 31},
		{`s := "my`, -1, nil, []string{"myVariable"}, 8},         // a plain string: no identifiers
		{`fmt.Println("k=`, -1, nil, []string{"k="}, 15},         // not a keyword's string
		{"x := 1 // my", -1, nil, []string{"myVariable"}, 12},    // a comment
		{"/* my", -1, nil, []string{"myVariable"}, 5},            // an open comment
		{"s := \"a\" + my", -1, []string{"myVariable"}, nil, 11}, // after a closed string
		// members of a value's type, through fields and calls
		{"r.", -1, []string{"Components", "Component"}, []string{"hidden"}, 2},
		{"r.Components.", -1, []string{"At", "Dims", "T", "Mul"}, nil, 13},
		{"r.Components.Di", -1, []string{"Dims"}, []string{"At"}, 13},
		{"h.Components.", -1, []string{"At", "Dims"}, nil, 13},
		{"hp.Components.", -1, []string{"At", "Dims"}, nil, 14},
		{"h.", -1, []string{"Components", "N"}, nil, 2},
		{"dense.T().", -1, []string{"At", "Dims", "T"}, []string{"Mul"}, 10},
		{"mat.NewDense(2, 2, []float64{1, 2, 3, 4}).", -1, []string{"At", "Mul"}, nil, 42},
		{"pca_like().Components.", -1, []string{"Dims"}, nil, 22},
		{"r.Nope.", -1, nil, []string{"Dims", "myVariable"}, 7},
	}
	for _, tt := range tests {
		cur := tt.cursor
		if cur < 0 {
			cur = utf8.RuneCountInString(tt.code)
		}
		c := e.Complete(tt.code, cur)
		got := strings.Join(c.Matches, " ")
		for _, w := range tt.want {
			if !contains(c.Matches, w) {
				t.Errorf("Complete(%q): %q missing from %s", tt.code, w, got)
			}
		}
		for _, w := range tt.notWant {
			if contains(c.Matches, w) {
				t.Errorf("Complete(%q): %q should not be offered", tt.code, w)
			}
		}
		if c.CursorStart != tt.wantStart || c.CursorEnd != cur {
			t.Errorf("Complete(%q): cursor %d..%d, want %d..%d", tt.code, c.CursorStart, c.CursorEnd, tt.wantStart, cur)
		}
	}
	// keyword names come first inside a DSL call
	if c := e.Complete("private_pca(ds, ", 16); len(c.Matches) == 0 || !strings.HasSuffix(c.Matches[0], "=") {
		t.Errorf("keywords should come first: %v", c.Matches[:3])
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestInspect(t *testing.T) {
	e, err := New(Config{Plugin: &fakeDSL{cap: 1}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, "budgetLeft := 0.75\nfunc helper() {}\nbc := 1")
	tests := []struct {
		code   string
		cursor int
		found  bool
		want   string
	}{
		{"private_pca(ds)", 3, true, "Private PCA."},
		{"private_pca(", 12, true, "method=\"auto\""}, // after the paren
		{"math.Sqrt(2)", 7, true, "func math.Sqrt(float64) float64"},
		{"x := strings.Builder{}", 15, true, "type strings.Builder (struct)"},
		{"math.Pi", 6, true, "const math.Pi = 3.14159"},
		{"budgetLeft", 4, true, "budgetLeft float64\n\n0.75"},
		{"helper()", 2, true, "func helper (defined in a cell)"},
		{"show(x)", 1, true, "show(values ...any)"},
		{"math", 2, true, "package math:"},
		{"nothingHere", 3, false, ""},
		// inside a call's parentheses: the call, as IPython does
		{"private_pca(bc, k=2", 19, true, "Private PCA."},
		{"private_pca(bc, k=2)", 14, true, "Private PCA."},        // on an argument
		{"private_pca(bc, method=\"np", 26, true, "Private PCA."}, // in a string argument
		{"math.Sqrt(2", 11, true, "func math.Sqrt"},
		{"show(budgetLeft)", 8, true, "show(values ...any)"},
		{"fmt.Println(math.Sqrt(2))", 18, true, "func math.Sqrt"}, // on a call's own name
		{"private_pca(math.Sqrt(2), k", 27, true, "Private PCA."},
		{"nothing(nope", 12, false, ""},
		{"   ", 1, false, ""},
	}
	for _, tt := range tests {
		in := e.Inspect(tt.code, tt.cursor, 0)
		if in.Found != tt.found {
			t.Errorf("Inspect(%q, %d): found=%v, want %v", tt.code, tt.cursor, in.Found, tt.found)
			continue
		}
		if tt.found && !strings.Contains(in.Data["text/plain"].(string), tt.want) {
			t.Errorf("Inspect(%q, %d) = %q, want it to contain %q", tt.code, tt.cursor, in.Data["text/plain"], tt.want)
		}
	}
}

func TestIsComplete(t *testing.T) {
	e := newEngine(t)
	tests := []struct{ code, status, indent string }{
		{"x := 1", "complete", ""},
		{"", "complete", ""},
		{"func f() {", "incomplete", "    "},
		{"for i := 0; i < 3; i++ {\n\tif i > 1 {", "incomplete", "        "},
		{"budget eps=1 {", "incomplete", "    "},
		{"budget eps=1 {\n x := 1\n}", "invalid", ""}, // BasicPlugin knows no budget blocks
		{"x := []int{1,\n2,", "incomplete", "    "},
		{"s := `raw", "incomplete", ""},
		{"/* comment", "incomplete", ""},
		{"x := 1 +", "incomplete", ""},
		{"f(a,", "incomplete", "    "},
		{"x := )", "invalid", ""},
		{"}", "invalid", ""},
		{"import \"fmt\"\nfmt.Println(1)", "complete", ""},
		{"%help show", "complete", ""},
		{"%%budget eps=1\nx := 1", "incomplete", ""},
		{"%%budget eps=1\nx := 1\n\n", "invalid", ""}, // complete input; BasicPlugin refuses %%
	}
	for _, tt := range tests {
		c := e.IsComplete(tt.code)
		if c.Status != tt.status || c.Indent != tt.indent {
			t.Errorf("IsComplete(%q) = %q %q, want %q %q", tt.code, c.Status, c.Indent, tt.status, tt.indent)
		}
	}
}
