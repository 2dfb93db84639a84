package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// progressDisplays returns the progress displays a cell showed.
func progressDisplays(o *recOutput) []engine.Display {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ds []engine.Display
	for _, d := range o.disp {
		if d.Progress != nil {
			ds = append(ds, d)
		}
	}
	return ds
}

// A private_pca call with iters=T shows one progress display that updates
// in place: display_data first, then at most T updates of the same display
// id, never going back, ending at T of T; the steps are the plan's, so the
// same on a small and a large dataset. A single-step method and a dry run
// show none.
func TestPrivateCallShowsProgress(t *testing.T) {
	const T = 6
	dir := t.TempDir()
	register(t, dir, "small", table(40, 4, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	register(t, dir, "large", table(3000, 4, 2, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	for _, name := range []string{"small", "large"} {
		res, out := s.run(`r := private_pca(dataset("` + name + `"), k=2, eps=0.5, delta=1e-6, method="npm", iters=6)`)
		if res.Error != nil {
			t.Fatalf("%s: %s: %s", name, res.Error.Name, res.Error.Value)
		}
		ds := progressDisplays(out)
		if len(ds) == 0 || len(ds) > T+1 {
			t.Fatalf("%s: %d progress displays, want 1 display and at most %d updates", name, len(ds), T)
		}
		prev := -1
		for i, d := range ds {
			p := d.Progress
			if d.Update != (i > 0) || d.DisplayID != ds[0].DisplayID || d.DisplayID == "" {
				t.Errorf("%s: display %d: update %v, id %q (first %q); want one display, then updates of its id", name, i, d.Update, d.DisplayID, ds[0].DisplayID)
			}
			if p.Total != T || p.Done < prev || p.Label != "private_pca (npm)" {
				t.Errorf("%s: display %d: %+v after step %d", name, i, *p, prev)
			}
			if !strings.Contains(d.Data["text/html"].(string), "<progress") {
				t.Errorf("%s: display %d has no progress bar: %v", name, i, d.Data)
			}
			prev = p.Done
		}
		if last := ds[len(ds)-1].Progress; last.Done != T {
			t.Errorf("%s: the last display is %s, want step %d of %d", name, last.Text(), T, T)
		}
	}
	for _, call := range []string{
		`r := private_pca(dataset("small"), k=1, eps=0.5, delta=1e-6, method="gauss")`,
		`r := private_pca(dataset("small"), k=1, eps=0.5, delta=1e-6, method="npm", iters=6, dry_run=true)`,
	} {
		res, out := s.run(call)
		if res.Error != nil {
			t.Fatalf("%s: %s: %s", call, res.Error.Name, res.Error.Value)
		}
		if len(progressDisplays(out)) != 0 {
			t.Errorf("%s showed progress: %v", call, progressDisplays(out))
		}
	}
}
