package release_test

import (
	"testing"

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
