package interp

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
)

// run executes code and fails the test on an error.
func run(t *testing.T, e *Engine, code string) engine.ExecuteResult {
	t.Helper()
	r := e.Execute(context.Background(), engineReq(code), &recOutput{})
	if r.Error != nil {
		t.Fatalf("%q: %s: %s\n%s", code, r.Error.Name, r.Error.Value, strings.Join(r.Error.Traceback, "\n"))
	}
	return r
}

// value runs code and returns the text/plain of its result.
func value(t *testing.T, e *Engine, code string) string {
	t.Helper()
	r := run(t, e, code)
	if r.Value == nil {
		t.Fatalf("%q: no value", code)
	}
	return r.Value.Data["text/plain"].(string)
}

// hang bounds every wait of these tests. It is no requirement: it only
// turns a hang (an interrupt that never arrives, a loop that never stops)
// into a failure instead of a stuck test binary, so it is far above
// anything a loaded machine needs.
const hang = 60 * time.Second

// interrupt runs code, waits until its first chunk has started, lets it
// run for delay, cancels it and checks that Execute returns Interrupted.
// Waiting for the start keeps a slow start on a loaded machine from turning
// the test into a cancel before anything ran. The cells given to it never
// end on their own, so an Interrupted result within hang can only come from
// the cancel; the wait itself is no timing requirement (Execute returns
// after at most Config.InterruptWait by design, which is why the tests of
// loops check that the loop stopped with interruptLoop, not how fast
// Execute returned).
func interrupt(t *testing.T, e *Engine, code string, delay time.Duration) *engine.Error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seq0 := e.chunkSeq.Load()
	done := make(chan engine.ExecuteResult, 1)
	go func() { done <- e.Execute(ctx, engineReq(code), &recOutput{}) }()
	for deadline := time.Now().Add(hang); e.chunkSeq.Load() == seq0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q: did not start within %v", code, hang)
		}
	}
	time.Sleep(delay)
	cancel()
	select {
	case r := <-done:
		if r.Error == nil || r.Error.Name != "Interrupted" {
			t.Fatalf("%q: want Interrupted, got %+v", code, r.Error)
		}
		return r.Error
	case <-time.After(hang):
		t.Fatalf("%q: Execute did not return within %v of the cancel", code, hang)
	}
	return nil
}

// interruptLoop interrupts code like interrupt and then waits for the
// event that shows the interrupt stopped it: every goroutine of the cell
// (its eval goroutine and those it started) has ended. An interrupt that
// leaves the loop running fails here, however fast Execute returned.
func interruptLoop(t *testing.T, e *Engine, code string, delay time.Duration) *engine.Error {
	t.Helper()
	ie := interrupt(t, e, code, delay)
	if n := settledGoroutines(e); n != 0 {
		t.Fatalf("%q: %d goroutines of the cell still run %v after the interrupt returned: the interrupt did not stop it", code, n, hang)
	}
	return ie
}

func TestInterruptStopsLoops(t *testing.T) {
	e := newEngine(t)
	run(t, e, "kept := 42\nfunc spin() { for {} }")
	for _, code := range []string{
		"for {}",
		"spin()",
		"x := 1\nfor x > 0 { x++ }",
		"func() { for {} }()",
		"if kept > 0 {\n\tfor {}\n}",
		"ch := make(chan int)\n<-ch",
		"select {}",
	} {
		t.Run(code, func(t *testing.T) {
			interruptLoop(t, e, code, 30*time.Millisecond)
			if got := value(t, e, "kept"); got != "42" {
				t.Fatalf("kept = %s after interrupt, want 42", got)
			}
		})
	}
}

// TestNoZombieLoops proves that a cancelled top-level loop does not come
// back when the next cell starts at once (the yaegi flaw described in the
// package doc): the counter the loop increments must stay fixed.
func TestNoZombieLoops(t *testing.T) {
	for _, loop := range []string{
		"for { counter++ }",
		"for i := 0; ; i++ { counter++ }",
		"for { time.Sleep(time.Millisecond); counter++ }",
		"func() { for { counter++ } }()",
	} {
		t.Run(loop, func(t *testing.T) {
			e := newEngine(t)
			run(t, e, "counter := 0")
			reps := 10
			if testing.Short() {
				reps = 4 // still two repetitions that wait the full 300 ms
			}
			for rep := 0; rep < reps; rep++ {
				interrupt(t, e, loop, 20*time.Millisecond)
				v1 := value(t, e, "counter") // the next cell, at once
				time.Sleep(30 * time.Millisecond)
				v2 := value(t, e, "counter")
				if rep%3 == 0 { // the full 300 ms on some repetitions
					time.Sleep(270 * time.Millisecond)
				}
				v3 := value(t, e, "counter")
				if v1 != v2 || v2 != v3 {
					t.Fatalf("rep %d: counter moved after the interrupt: %s, %s, %s", rep, v1, v2, v3)
				}
				if n := settledGoroutines(e); n != 0 {
					t.Fatalf("rep %d: %d goroutines of the engine's cells still running", rep, n)
				}
			}
		})
	}
}

// TestInterruptBlockingCall: a compiled call that outlasts the wait bound
// does not block the next cell, and the rest of the interrupted loop never
// runs again. The call blocks until the test releases it, so the next cell
// provably ran while it was blocked (no timing bound needed).
func TestInterruptBlockingCall(t *testing.T) {
	p := &holdPlugin{release: make(chan struct{})}
	e, err := New(Config{InterruptWait: 50 * time.Millisecond, Plugin: p})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, "n := 0")
	ie := interrupt(t, e, "for { n++; hold(); n++ }", 50*time.Millisecond)
	if !strings.Contains(ie.Value, "compiled call") {
		t.Fatalf("the error should say a compiled call is still running: %q", ie.Value)
	}
	next := make(chan engine.ExecuteResult, 1)
	go func() { next <- e.Execute(context.Background(), engineReq("n"), &recOutput{}) }()
	select {
	case r := <-next:
		if r.Error != nil || r.Value == nil || r.Value.Data["text/plain"] != "1" {
			t.Fatalf("the next cell: %+v %+v, want n = 1", r.Error, r.Value)
		}
	case <-time.After(hang):
		close(p.release)
		t.Fatal("the next cell waited for the blocked compiled call")
	}
	if p.returned.Load() {
		t.Fatal("the blocked call returned before the next cell ran: the test proves nothing")
	}
	close(p.release)
	if n := settledGoroutines(e); n != 0 { // the loop's goroutine is gone
		t.Fatalf("%d goroutines of the cell left after the call returned", n)
	}
	if !p.returned.Load() {
		t.Fatal("the released call did not return")
	}
	if got := value(t, e, "n"); got != "1" {
		t.Fatalf("n = %s after the blocked call returned, want 1 (the loop resumed)", got)
	}
}

// holdPlugin exports hold(), a compiled call that blocks until release is
// closed.
type holdPlugin struct {
	BasicPlugin
	release  chan struct{}
	returned atomic.Bool
}

func (p *holdPlugin) Exports() map[string]reflect.Value {
	ex := p.BasicPlugin.Exports()
	ex["hold"] = reflect.ValueOf(func() {
		<-p.release
		p.returned.Store(true)
	})
	return ex
}

// TestInterruptStopsCellGoroutines: goroutines a cell started stop with it.
func TestInterruptStopsCellGoroutines(t *testing.T) {
	e := newEngine(t)
	run(t, e, "g := 0")
	interruptLoop(t, e, "go func() { for { g++ } }()\nfor {}", 30*time.Millisecond)
	v1 := value(t, e, "g")
	time.Sleep(100 * time.Millisecond)
	if v2 := value(t, e, "g"); v1 != v2 {
		t.Fatalf("goroutine of the interrupted cell still runs: %s then %s", v1, v2)
	}
}

// settledGoroutines counts the goroutines of e's cells, giving goroutines
// that have finished their work up to hang to exit (an eval goroutine
// signals completion just before it returns). It returns as soon as none
// is left; only a goroutine that never ends (a loop the interrupt did not
// stop) makes it wait the whole bound.
func settledGoroutines(e *Engine) int {
	n := countGoroutines(e.label + "/")
	for end := time.Now().Add(hang); n > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
		n = countGoroutines(e.label + "/")
	}
	return n
}

func newEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// shardPlugin exports shards(n), a compiled call that runs n goroutines
// blocked until release is closed and waits for them, as a mechanism's row
// pass does.
type shardPlugin struct {
	BasicPlugin
	release chan struct{}
}

func (p *shardPlugin) Exports() map[string]reflect.Value {
	ex := p.BasicPlugin.Exports()
	ex["shards"] = reflect.ValueOf(func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-p.release
			}()
		}
		wg.Wait()
	})
	return ex
}

// TestInterruptMessageHidesGoroutineCount: the interrupt message does not
// count the goroutines left inside compiled calls. Goroutines that a
// mechanism starts inherit the cell's label, and their number follows the
// private row count (one per shard of a row pass), so a count would leak.
func TestInterruptMessageHidesGoroutineCount(t *testing.T) {
	var msgs []string
	for _, n := range []int{1, 4} {
		p := &shardPlugin{release: make(chan struct{})}
		e, err := New(Config{InterruptWait: 50 * time.Millisecond, Plugin: p})
		if err != nil {
			t.Fatal(err)
		}
		ie := interrupt(t, e, fmt.Sprintf("shards(%d)", n), 50*time.Millisecond)
		if !strings.Contains(ie.Value, "compiled call") {
			t.Fatalf("the error should say a compiled call is still running: %q", ie.Value)
		}
		msgs = append(msgs, ie.Value)
		close(p.release)
		if left := settledGoroutines(e); left != 0 {
			t.Fatalf("shards(%d): %d goroutines left after the release", n, left)
		}
	}
	if msgs[0] != msgs[1] {
		t.Errorf("the message depends on the number of goroutines:\n %s\n %s", msgs[0], msgs[1])
	}
}
