package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// DSL types appear without their package path in inspect, help and error
// texts (issue 11): `Dataset`, not `runtime.Dataset`.
func TestTypeNamesWithoutPackage(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(40, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("d")
var r *PCAResult`)
	texts := map[string]string{}
	insp := s.eng.Inspect("ds", 2, 0)
	texts["inspect ds"], _ = insp.Data["text/plain"].(string)
	insp = s.eng.Inspect("r", 1, 0)
	texts["inspect r"], _ = insp.Data["text/plain"].(string)
	for _, cell := range []string{
		`private_count(ds, eps=ds)`,
		`var x int = ds`,
		`private_pca(r, eps=1, delta=1e-6)`,
	} {
		res, o := s.run(cell)
		if res.Error == nil {
			t.Fatalf("%s: no error", cell)
		}
		texts[cell] = o.all(res) + res.Error.Value + strings.Join(res.Error.Traceback, "\n")
	}
	for what, text := range texts {
		if strings.Contains(text, "runtime.") || strings.Contains(text, "interp.") {
			t.Errorf("%s names a package path: %s", what, text)
		}
	}
	if !strings.Contains(texts["inspect ds"], "ds Dataset") || !strings.Contains(texts["inspect r"], "r *PCAResult") {
		t.Errorf("inspect: %q, %q", texts["inspect ds"], texts["inspect r"])
	}
	if !strings.Contains(texts[`private_count(ds, eps=ds)`], "got Dataset") {
		t.Errorf("argument error: %s", texts[`private_count(ds, eps=ds)`])
	}
	if !strings.Contains(texts[`var x int = ds`], "Dataset") {
		t.Errorf("compile error: %s", texts[`var x int = ds`])
	}
}
