package engine

import (
	"fmt"
	"html"
	"sync"
	"time"
)

// Progress is how far a long computation is: step Done of Total. Both
// numbers and the label must be public facts (a mechanism's iteration
// count from its public parameters, never a count of private rows), since
// the front end shows them while the computation runs.
type Progress struct {
	Label string `json:"label"`
	Done  int    `json:"done"`
	Total int    `json:"total"`
}

// Text is the plain form: "private_pca (npm): step 3 of 10".
func (p Progress) Text() string {
	return fmt.Sprintf("%s: step %d of %d", p.Label, p.Done, p.Total)
}

// ProgressReporter turns the steps of one computation into a display that
// updates in place: a Jupyter front end gets display_data once and then
// update_display_data with the same display_id (an HTML progress bar); a
// terminal front end sees Display.Progress and draws a progress line on
// stderr. Steps closer together than its interval are coalesced, so a
// mechanism may report every iteration. Safe for concurrent use.
type ProgressReporter struct {
	out      Output
	id       string
	label    string
	total    int
	interval time.Duration

	mu    sync.Mutex
	shown bool
	last  time.Time
	done  int
}

// progressInterval bounds how often a progress display is updated: often
// enough to look alive, rarely enough not to flood the front end.
const progressInterval = 200 * time.Millisecond

// NewProgress starts reporting a computation of total steps on out. id
// names the display; it must be unique within the cell (for example the
// function and its call's position).
func NewProgress(out Output, id, label string, total int) *ProgressReporter {
	return &ProgressReporter{out: out, id: "privnotes-progress-" + id, label: label, total: total, interval: progressInterval}
}

// Step reports that done steps of total are finished. The first report
// and the last (done >= total) are always shown; the others when the
// interval has passed since the previous one shown.
func (r *ProgressReporter) Step(done int) {
	if r == nil || r.out == nil || r.total <= 0 {
		return
	}
	done = min(max(done, 0), r.total)
	r.mu.Lock()
	now := time.Now()
	if r.shown && done < r.total && now.Sub(r.last) < r.interval || r.shown && done == r.done {
		r.mu.Unlock()
		return
	}
	update := r.shown
	r.shown, r.last, r.done = true, now, done
	r.mu.Unlock()
	r.out.Display(ProgressDisplay(r.id, Progress{Label: r.label, Done: done, Total: r.total}, update))
}

// ProgressDisplay is the display of p under display id; update replaces
// the display of an earlier step.
func ProgressDisplay(id string, p Progress, update bool) Display {
	pct := 0
	if p.Total > 0 {
		pct = 100 * p.Done / p.Total
	}
	htm := fmt.Sprintf(`<div class="privnotes-progress"><progress value="%d" max="%d" style="width:20em"></progress> %s: step %d of %d (%d%%)</div>`,
		p.Done, p.Total, html.EscapeString(p.Label), p.Done, p.Total, pct)
	return Display{
		Data:      MIMEBundle{"text/plain": p.Text(), "text/html": htm},
		Metadata:  map[string]any{},
		DisplayID: id,
		Update:    update,
		Progress:  &p,
	}
}
