package release

import (
	"context"
	"sync"
)

// ProgressFunc receives the progress of a private call's run: step of
// total finished. Both are public: total is fixed by the plan from the
// call's public parameters (iterations, steps, rounds), and the steps come
// in order, once each, whatever the data.
type ProgressFunc func(step, total int)

type progressKey struct{}

// WithProgress returns a context whose private calls report their progress
// to f. It travels with the context, like net/http/httptrace's hooks, and
// not with the Call: a Call is what a remote executor receives, and a
// callback is no part of it (a remote executor ignores it).
//
// A call whose plan has at least two steps reports step 0 of
// T once it is charged and about to run, then each step as the mechanism
// finishes it, and ends at T of T whether the mechanism finished normally
// or failed (a failure's step could depend on the data); only an
// interrupted run stops where it was. Calls of fewer steps report nothing.
// f runs on the goroutine of the run, between its steps: it should return
// quickly (rate limiting is the caller's, see engine.ProgressReporter).
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progressOf(ctx context.Context) ProgressFunc {
	f, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return f
}

// minProgressSteps is the fewest planned steps a call reports progress
// for: a single step has nothing between its start and its end.
const minProgressSteps = 2

// progressRelay carries a run's steps to the call's callback. Plans are
// made before the call's context is known, so a planner gives the
// mechanism the relay's step method as its options' Progress and records
// the planned number of steps, a public parameter (Plan.reportsSteps);
// Execute binds the callback when the run starts. The relay passes on only
// steps 1..planned in order, once each, so a mechanism's report can
// neither go back nor skip past the end.
type progressRelay struct {
	mu      sync.Mutex
	planned int
	f       ProgressFunc
	done    int
}

// reportsSteps records that p's run reports n steps through
// p.progress.step. n must come from the call's public parameters.
func (p *Plan) reportsSteps(n int) {
	p.progress.mu.Lock()
	p.progress.planned = n
	p.progress.mu.Unlock()
}

// start binds the callback of ctx and reports step 0. It reports nothing
// when ctx has no callback or the plan has fewer than minProgressSteps.
func (r *progressRelay) start(ctx context.Context) {
	f := progressOf(ctx)
	r.mu.Lock()
	total := r.planned
	if f == nil || total < minProgressSteps {
		r.mu.Unlock()
		return
	}
	r.f, r.done = f, 0
	r.mu.Unlock()
	report(f, 0, total)
}

// step is the mechanisms' callback: step of total finished. A total other
// than the planned one is a mechanism's bug; the planned total is what the
// analyst was shown, so the relay keeps it.
func (r *progressRelay) step(step, _ int) {
	r.mu.Lock()
	defer r.mu.Unlock() // held while reporting, so that reports stay in order
	if r.f == nil || step <= r.done || step > r.planned {
		return
	}
	r.done = step
	report(r.f, step, r.planned)
}

// finish ends the report at total of total (unless interrupted), so that
// where a run stopped, finished or failed, shows nothing of the data.
func (r *progressRelay) finish(interrupted bool) {
	r.mu.Lock()
	f, total, done := r.f, r.planned, r.done
	r.f = nil
	r.mu.Unlock()
	if f == nil || interrupted || done >= total {
		return
	}
	report(f, total, total)
}

// report calls f, dropping a panic: progress is a courtesy, and a failing
// display must not turn a charged call into a failed one.
func report(f ProgressFunc, step, total int) {
	defer func() { _ = recover() }()
	f(step, total)
}
