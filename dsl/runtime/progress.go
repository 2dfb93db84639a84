package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/release"
)

// progressSeq numbers the progress displays of the process, so that two
// calls of one cell (a loop, goroutines) never share a display id.
var progressSeq atomic.Uint64

// progressContext returns ctx carrying the progress callback of a private
// call: the execution core reports step i of T (T fixed by the plan from
// the call's public parameters) and the cell's output shows it as a display
// that updates in place (a progress bar in a notebook, a line on stderr in
// the REPL and scripts; engine.ProgressReporter, which also limits how
// often it is redrawn). The display appears with the first report, when
// the call has been charged and its mechanism starts.
func progressContext(ctx context.Context, b *binding, fn string, a *args) context.Context {
	if b == nil || b.out == nil {
		return ctx
	}
	label := progressLabel(fn, a)
	var (
		once sync.Once
		rep  *engine.ProgressReporter
	)
	return release.WithProgress(ctx, func(step, total int) {
		once.Do(func() {
			rep = engine.NewProgress(b.out, fmt.Sprintf("%s-%d", fn, progressSeq.Add(1)), label, total)
		})
		rep.Step(step)
	})
}

// progressLabel names the call in its progress display: the function, and
// the method when the call gave one (public keywords only).
func progressLabel(fn string, a *args) string {
	if a == nil || a.Args == nil {
		return fn
	}
	if m, ok := a.Vals["method"].(string); ok && m != "" && m != "auto" {
		return fmt.Sprintf("%s (%s)", fn, m)
	}
	return fn
}
