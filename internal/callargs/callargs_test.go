package callargs

import (
	"testing"

	"github.com/privnotes/privnotes/dsl/syntax"
)

// Args holds every keyword of the table, the given ones over the
// defaults, and marks only those given; an unknown function is refused.
func TestArgs(t *testing.T) {
	a, ok := Args("private_count", map[string]any{"eps": 0.25})
	if !ok {
		t.Fatal("private_count not in the table")
	}
	f, _ := syntax.Lookup("private_count")
	for _, p := range f.Keywords {
		if _, ok := a.Vals[p.Name]; !ok {
			t.Errorf("keyword %s missing", p.Name)
		}
		if a.Given[p.Name] != (p.Name == "eps") {
			t.Errorf("keyword %s: given %v", p.Name, a.Given[p.Name])
		}
	}
	if a.Float("eps") != 0.25 || a.Float("delta") != 0 {
		t.Errorf("eps %v delta %v, want 0.25 and the default 0", a.Vals["eps"], a.Vals["delta"])
	}
	if _, ok := Args("no_such_function", nil); ok {
		t.Error("an unknown function gave arguments")
	}
}
