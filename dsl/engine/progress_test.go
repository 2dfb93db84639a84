package engine

import (
	"strings"
	"sync"
	"testing"
	"time"
)

type recorder struct {
	mu sync.Mutex
	ds []Display
}

func (r *recorder) Stream(string, string) {}
func (r *recorder) Display(d Display) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}
func (r *recorder) ClearOutput(bool) {}

func TestProgressReporter(t *testing.T) {
	rec := &recorder{}
	p := NewProgress(rec, "pca-1-1", "private_pca (npm)", 10)
	p.interval = time.Hour // only the first and the last step get through
	for i := 1; i <= 10; i++ {
		p.Step(i)
	}
	p.Step(10) // a repeat of the last step shows nothing new
	if len(rec.ds) != 2 {
		t.Fatalf("%d displays, want the first and the last step: %+v", len(rec.ds), rec.ds)
	}
	first, last := rec.ds[0], rec.ds[1]
	if first.Update || !last.Update || first.DisplayID != "privnotes-progress-pca-1-1" || last.DisplayID != first.DisplayID {
		t.Errorf("display ids and updates: %+v %+v", first, last)
	}
	if first.Data["text/plain"] != "private_pca (npm): step 1 of 10" || last.Data["text/plain"] != "private_pca (npm): step 10 of 10" {
		t.Errorf("texts %q %q", first.Data["text/plain"], last.Data["text/plain"])
	}
	if h := last.Data["text/html"].(string); !strings.Contains(h, `<progress value="10" max="10"`) || !strings.Contains(h, "(100%)") {
		t.Errorf("html %s", h)
	}
	if last.Progress == nil || *last.Progress != (Progress{Label: "private_pca (npm)", Done: 10, Total: 10}) {
		t.Errorf("progress %+v", last.Progress)
	}

	// With no interval every step is shown; steps are clamped to [0, total].
	rec = &recorder{}
	p = NewProgress(rec, "x", "<x>", 3)
	p.interval = 0
	for _, s := range []int{1, 2, 7} {
		p.Step(s)
	}
	if len(rec.ds) != 3 || rec.ds[2].Progress.Done != 3 || !strings.Contains(rec.ds[0].Data["text/html"].(string), "&lt;x&gt;") {
		t.Errorf("displays %+v", rec.ds)
	}
	// Nothing to report on: no output, no panic.
	var nilp *ProgressReporter
	nilp.Step(1)
	NewProgress(nil, "y", "y", 3).Step(1)
	NewProgress(rec, "z", "z", 0).Step(1)
	if len(rec.ds) != 3 {
		t.Errorf("a reporter without output or steps displayed something")
	}
}
