package interp

import (
	"context"
	"strings"
	"testing"
)

// TestErrorPositions checks that errors point at the user's line:column
// through cell splitting and the engine's rewrites.
func TestErrorPositions(t *testing.T) {
	tests := []struct {
		name, code string
		ename      string
		value      string // prefix of the error value
	}{
		{"undefined first line", "undefinedz + 1", "NameError", "line 1:1: undefined: undefinedz"},
		{"undefined third line", "x := 1\ny := 2\nz := x + nope", "NameError", "line 3:10: undefined: nope"},
		{"after a guard", "a := 1\n_ = a\n  bad(a)", "NameError", "line 3:3: undefined: bad"},
		{"inside a wrapped loop", "s := 0\nfor i := 0; i < 2; i++ {\n\ts += nope2\n}", "NameError", "line 3:7: undefined: nope2"},
		{"in the final expression", "q := 1\nq + nope3", "NameError", "line 2:5: undefined: nope3"},
		{"in a declaration after statements", "w := 1\nfunc f() int {\n\treturn nope4\n}", "NameError", "line 3:9: undefined: nope4"},
		{"unicode columns", "s := \"héllo\"; t := nope5", "NameError", "line 1:20: undefined: nope5"},
		{"syntax error", "x := (1 +\n2", "SyntaxError", "line 2:2: "},
		{"syntax error at the end", "y := 1 +", "SyntaxError", "line 1:9: "},
		{"forbidden import", "import \"fmt\"\nimport \"os\"", "ImportError", "line 2:8: package \"os\" cannot be imported"},
		{"type mismatch", "var n int\nn = \"s\"", "CompileError", "line 2:5: cannot convert"},
		{"min builtin", "m := min(1, 2)", "NameError", "line 1:6: undefined: min (the Go 1.21 builtins"},
		{"range over int", "for i := range 10 {\n\t_ = i\n}", "UnsupportedError", "line 1:16: range over an integer"},
		{"range over func", "for x := range func(yield func(int) bool) {} {\n\t_ = x\n}", "UnsupportedError", "line 1:16: range over a function"},
		{"reserved name", "__pni_guard(1)", "SyntaxError", "line 1:1: identifiers starting with __pn are reserved"},
	}
	e := newEngine(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Execute(context.Background(), engineReq(tt.code), &recOutput{})
			if r.Error == nil {
				t.Fatalf("no error for %q", tt.code)
			}
			if r.Error.Name != tt.ename || !strings.HasPrefix(r.Error.Value, tt.value) {
				t.Fatalf("got %s: %s\nwant %s: %s...", r.Error.Name, r.Error.Value, tt.ename, tt.value)
			}
			if len(r.Error.Traceback) < 3 || !strings.HasSuffix(r.Error.Traceback[2], "^") {
				t.Errorf("traceback should show the line and a caret: %q", r.Error.Traceback)
			}
		})
	}
}

func TestRuntimePanicTraceback(t *testing.T) {
	e := newEngine(t)
	run(t, e, "func at(xs []int, i int) int {\n\treturn xs[i]\n}")
	r := e.Execute(context.Background(), engineReq("xs := []int{1}\n\ny := at(xs, 5)"), &recOutput{})
	if r.Error == nil || r.Error.Name != "RuntimeError" {
		t.Fatalf("want RuntimeError, got %+v", r.Error)
	}
	tb := strings.Join(r.Error.Traceback, "\n")
	if !strings.Contains(tb, "in at") || !strings.Contains(tb, "line 3:") {
		t.Fatalf("traceback should name the function and the cell line:\n%s", tb)
	}
	// The engine stays usable and earlier state survives.
	if got := value(t, e, "len(xs)"); got != "1" {
		t.Fatalf("len(xs) = %s", got)
	}
}

// TestPanicsLeaveEngineUsable covers panics at run time, panics with
// error values, nil dereferences and a panic of yaegi's compiler.
func TestPanicsLeaveEngineUsable(t *testing.T) {
	e := newEngine(t)
	run(t, e, "keep := \"kept\"")
	for _, tt := range []struct{ code, ename, contains string }{
		{`panic("boom")`, "RuntimeError", "boom"},
		{`panic(errors.New("as error"))`, "RuntimeError", "as error"},
		{"var p *struct{ A int }\n_ = p.A", "RuntimeError", "nil"},
		{"m := mat.NewDense(2, 2, nil)\nm.Mul(m, mat.NewDense(3, 3, nil))", "RuntimeError", "dimension mismatch"},
		{"func() { panic(\"in a literal\") }()", "RuntimeError", "in a literal"},
		// n is not a global yet when the cell is checked, so the static
		// check misses it and yaegi's compiler panics ("nil type").
		{"n := 3\nfor i := range n {\n\t_ = i\n}", "CompileError", "range over an integer"},
	} {
		r := e.Execute(context.Background(), engineReq(tt.code), &recOutput{})
		if r.Error == nil || r.Error.Name != tt.ename || !strings.Contains(strings.Join(append(r.Error.Traceback, r.Error.Value), "\n"), tt.contains) {
			t.Errorf("%q: got %+v, want %s containing %q", tt.code, r.Error, tt.ename, tt.contains)
		}
		if got := value(t, e, "keep"); got != `"kept"` {
			t.Fatalf("after %q: keep = %s", tt.code, got)
		}
	}
}

// TestRuntimePanicWording checks that run-time panics read as Go's, not as
// the reflect calls the interpreter makes, with the index and length when
// they follow statically from literals and globals, and the cell position.
func TestRuntimePanicWording(t *testing.T) {
	e := newEngine(t)
	run(t, e, "xs := []int{}\nz := []int{1, 2}\nword := \"ab\"\ni := 1\nvar np *struct{ A int }\nfunc at(s []int, k int) int {\n\treturn s[k]\n}")
	tests := []struct {
		name, code string
		value      string   // the whole error value
		tb         []string // lines the traceback must contain
	}{
		{"index in a one-line cell", "xs[5]",
			"panic: runtime error: index out of range [5] with length 0 (at line 1:1)", []string{"    xs[5]", "    ^"}},
		{"index defined in the same cell", "ys := []int{}\n_ = ys[5]",
			"panic: runtime error: index out of range [5] with length 0 (at line 2:5)", []string{"  cell line 2:5:", "    _ = ys[5]", "        ^"}},
		{"index from globals", "a := 1; b := z[i+len(z)]",
			"panic: runtime error: index out of range [3] with length 2 (at line 1:14)", nil},
		{"the out-of-range one of two", "_ = z[0] + z[7]",
			"panic: runtime error: index out of range [7] with length 2 (at line 1:12)", nil},
		{"string index", "_ = word[7]",
			"panic: runtime error: index out of range [7] with length 2 (at line 1:5)", nil},
		{"inside a loop", "for k := 0; k < 3; k++ {\n\t_ = z[5]\n}",
			"panic: runtime error: index out of range [5] with length 2 (at line 2:6)", []string{"        _ = z[5]"}},
		{"loop variable: no values", "for k := 0; k < 9; k++ {\n\t_ = z[k]\n}",
			"panic: runtime error: index out of range (at line 1:1)", nil},
		{"local shadows a global", "for i := 5; i < 9; i++ {\n\t_ = z[i]\n}",
			"panic: runtime error: index out of range (at line 1:1)", nil},
		{"slice beyond capacity", "s := z[1:5]",
			"panic: runtime error: slice bounds out of range [:5] with capacity 2 (at line 1:6)", nil},
		{"slice low beyond length", "s := z[3:]",
			"panic: runtime error: slice bounds out of range [3:2] (at line 1:6)", nil},
		{"string slice", "s := word[1:9]",
			"panic: runtime error: slice bounds out of range [:9] with length 2 (at line 1:6)", nil},
		{"in a function", "y := 0\ny = at(z, 7)",
			"panic: runtime error: index out of range (at line 2:1)", []string{"  in at (defined in cell test)", "  cell line 2:1:"}},
		{"nil pointer", "np.A = 1",
			"panic: runtime error: invalid memory address or nil pointer dereference (at line 1:1)", nil},
		{"nil function", "var f func()\nf()",
			"panic: runtime error: invalid memory address or nil pointer dereference (at line 2:1)", nil},
		{"interface conversion at its position", "var q any = 1\n  _ = q.(string)",
			"panic: interface conversion: interface {} is int, not string (at line 2:7)", nil},
		{"user panic keeps its text", "x := 1\npanic(\"index 3 is bad\")",
			"panic: index 3 is bad (at line 2:1)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Execute(context.Background(), engineReq(tt.code), &recOutput{})
			if r.Error == nil || r.Error.Name != "RuntimeError" {
				t.Fatalf("want a RuntimeError, got %+v", r.Error)
			}
			if r.Error.Value != tt.value {
				t.Errorf("value\n got %q\nwant %q", r.Error.Value, tt.value)
			}
			tb := r.Error.Traceback
			if len(tb) == 0 || tb[0] != "RuntimeError: "+r.Error.Value {
				t.Errorf("the traceback should open with the error: %q", tb)
			}
			for _, want := range tt.tb {
				if !contains(tb, want) {
					t.Errorf("traceback lacks %q:\n%s", want, strings.Join(tb, "\n"))
				}
			}
			if all := strings.Join(tb, "\n"); strings.Contains(all, "reflect") {
				t.Errorf("the interpreter's wording leaks through:\n%s", all)
			}
		})
	}
}
