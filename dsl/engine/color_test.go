package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestColoredTraceback(t *testing.T) {
	const (
		red   = "\x1b[1;31m"
		green = "\x1b[0;32m"
		cyan  = "\x1b[0;36m"
		reset = "\x1b[0m"
	)
	runtime := &Error{Name: "RuntimeError", Value: "panic: boom (at line 2:1)", Traceback: []string{
		"RuntimeError: panic: boom (at line 2:1)",
		"Traceback (innermost first):",
		"  in f (defined in cell [1])",
		"  in g",
		"  cell line 2:1:",
		"    f() // in x",
		"    ^",
	}}
	syntax := &Error{Name: "SyntaxError", Value: "line 1:5: unexpected end", Traceback: []string{
		"SyntaxError: line 1:5: unexpected end", "    x := ", "        ^"}}
	tests := []struct {
		name string
		e    *Error
		want []string
	}{
		{"runtime error with frames", runtime, []string{
			red + "RuntimeError" + reset + ": panic: boom (at " + green + "line 2:1" + reset + ")",
			"Traceback (innermost first):",
			"  in " + cyan + "f" + reset + " (defined in " + green + "cell [1]" + reset + ")",
			"  in " + cyan + "g" + reset,
			"  " + green + "cell line 2:1" + reset + ":",
			"    f() // in x",
			"    " + red + "^" + reset,
		}},
		{"positioned error", syntax, []string{
			red + "SyntaxError" + reset + ": " + green + "line 1:5" + reset + ": unexpected end",
			"    x := ",
			"        " + red + "^" + reset,
		}},
		{"no traceback", &Error{Name: "BudgetExceeded", Value: "ε=2 requested, 1 remains"},
			[]string{red + "BudgetExceeded" + reset + ": ε=2 requested, 1 remains"}},
		// A first line that does not start with the name (an engine's
		// own format) is left alone rather than half-coloured.
		{"unknown shape", &Error{Name: "X", Value: "v", Traceback: []string{"something else: v", "  more"}},
			[]string{"something else: v", "  more"}},
	}
	for _, tc := range tests {
		got := ColoredTraceback(tc.e)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// The error's own fields stay plain, and its traceback unchanged.
	if runtime.Traceback[0] != "RuntimeError: panic: boom (at line 2:1)" || strings.Contains(runtime.Name+runtime.Value, "\x1b") {
		t.Errorf("ColoredTraceback changed the error: %+v", runtime)
	}
}

func ExampleColoredTraceback() {
	e := &Error{Name: "SyntaxError", Value: "line 1:6: unexpected )", Traceback: []string{
		"SyntaxError: line 1:6: unexpected )", "    x := )", "         ^"}}
	for _, line := range ColoredTraceback(e) {
		fmt.Printf("%q\n", line)
	}
	// Output:
	// "\x1b[1;31mSyntaxError\x1b[0m: \x1b[0;32mline 1:6\x1b[0m: unexpected )"
	// "    x := )"
	// "         \x1b[1;31m^\x1b[0m"
}
