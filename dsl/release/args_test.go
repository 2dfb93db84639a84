package release_test

import (
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
)

// NewArgs marks what it is given and copies it; WithDefaults fills only
// the keywords not already set and marks none of them given.
func TestNewArgs(t *testing.T) {
	given := map[string]any{"eps": 0.5, "k": 2}
	a := release.NewArgs(given).WithDefaults(map[string]any{"eps": 1.0, "delta": 0.0, "method": "npm"})
	given["eps"] = 9.0
	for _, c := range []struct {
		name  string
		val   any
		given bool
	}{
		{"eps", 0.5, true}, {"k", 2, true}, {"delta", 0.0, false}, {"method", "npm", false},
	} {
		if a.Vals[c.name] != c.val || a.Given[c.name] != c.given {
			t.Errorf("%s: value %v given %v, want %v %v", c.name, a.Vals[c.name], a.Given[c.name], c.val, c.given)
		}
	}
	if len(a.Vals) != 4 || len(a.Given) != 2 {
		t.Errorf("Vals %v, Given %v: want 4 values, 2 given", a.Vals, a.Given)
	}
}

// ArgsFor holds every keyword of the catalog entry, the given ones over
// the defaults, and marks only those given; an unknown function is
// refused.
func TestArgsFor(t *testing.T) {
	a, err := release.ArgsFor("private_count", map[string]any{"eps": 0.25})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range catalog.PrivateCount.Keywords {
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
	if _, err := release.ArgsFor("no_such_function", nil); err == nil {
		t.Error("an unknown function gave arguments")
	}
}

// With copies: the original keeps its value and its given marks.
func TestArgsWith(t *testing.T) {
	a := release.NewArgs(map[string]any{"eps": 1.0}).WithDefaults(map[string]any{"delta": 0.0})
	b := a.With("delta", 1e-6)
	if b.Vals["delta"] != 1e-6 || !b.Given["delta"] || b.Vals["eps"] != 1.0 || !b.Given["eps"] {
		t.Errorf("With: %v given %v", b.Vals, b.Given)
	}
	if a.Vals["delta"] != 0.0 || a.Given["delta"] {
		t.Errorf("With changed its receiver: %v given %v", a.Vals, a.Given)
	}
	if c := (&release.Args{}).With("k", 2); c.Vals["k"] != 2 || !c.Given["k"] {
		t.Errorf("With on empty Args: %v given %v", c.Vals, c.Given)
	}
}
