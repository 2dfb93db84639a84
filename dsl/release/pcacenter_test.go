package release

import (
	"strings"
	"testing"
)

// A private_pca call named before center and center_share existed keeps
// replaying: with both at their defaults, given or not, its public
// parameters are those stored before; center=true is another call.
func TestPCACenterKeepsNamedCalls(t *testing.T) {
	ref := Ref{Name: "t", Schema: tabSchema("replace-one", "row")}
	params := func(vals map[string]any) string {
		t.Helper()
		kw := map[string]any{"eps": 1.0, "delta": 1e-6}
		for k, v := range vals {
			kw[k] = v
		}
		s, err := PublicParams(Call{Func: "private_pca", Dataset: ref, Args: mustArgs("private_pca", kw)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := params(nil)
	if strings.Contains(before, "center") {
		t.Errorf("defaults: %s names center", before)
	}
	if got := params(map[string]any{"center": false, "center_share": 0.0}); got != before {
		t.Errorf("defaults given: %s, want %s", got, before)
	}
	if got := params(map[string]any{"center": true}); got == before || !strings.Contains(got, `"center":true`) {
		t.Errorf("center=true: %s", got)
	}
}
