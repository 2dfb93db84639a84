package worker

import (
	"context"
	"errors"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/enginetest"
)

// The test binary doubles as the worker: started with this variable set, it
// serves the fake engine on fd 3 and 4 instead of running tests. Other
// values make it a broken worker:
//
//	fatal       the engine cannot be created (Main reports it and exits)
//	garbage     says hello, then answers the first request with a frame
//	            that is not JSON, and waits to be killed
//	noresult    says hello, then answers the first request with a result
//	            frame that carries no result, and serves no more
const fakeWorkerEnv = "PRIVNOTES_TEST_FAKE_WORKER"

// fatalMessage is the engine error of the "fatal" worker.
const fatalMessage = "cannot open the state database: it is locked by another program"

// hang bounds every wait of these tests. It is no requirement: it only
// turns a hang (a cell an interrupt did not stop, a reply that never
// comes) into a failure instead of a stuck test binary. What a test proves
// comes from which result arrived, never from how fast.
const hang = 60 * time.Second

func TestMain(m *testing.M) {
	switch os.Getenv(fakeWorkerEnv) {
	case "1":
		os.Exit(Main(func() (engine.Engine, error) { return &privateFake{enginetest.New()}, nil }))
	case "fatal":
		os.Exit(Main(func() (engine.Engine, error) { return nil, errors.New(fatalMessage) }))
	case "garbage", "noresult":
		brokenWorker(os.Getenv(fakeWorkerEnv))
	}
	os.Exit(m.Run())
}

// brokenWorker speaks the protocol up to the first request, then breaks it.
func brokenWorker(mode string) {
	in, out := os.NewFile(3, "in"), os.NewFile(4, "out")
	writeFrame(out, &frame{Type: tHello, PID: os.Getpid()})
	f, err := readFrame(in)
	if err != nil {
		os.Exit(1)
	}
	if mode == "garbage" {
		out.Write([]byte{0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'})
	} else {
		writeFrame(out, &frame{ID: f.ID, Type: tResult})
	}
	// Wait for the kill (or the supervisor's end) in a read: a goroutine
	// blocked for ever without one would make the runtime report a
	// deadlock, a crash of its own that would race with the kill.
	for {
		if _, err := readFrame(in); err != nil {
			os.Exit(0)
		}
	}
}

func newTestSupervisor(t *testing.T, grace time.Duration) *Supervisor {
	t.Helper()
	return newSupervisorWith(t, Config{InterruptGrace: grace})
}

// newSupervisorWith starts a supervisor of the fake worker (or of the
// broken worker named by mode in cfg.Env) with cfg's other settings.
func newSupervisorWith(t *testing.T, cfg Config) *Supervisor {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = os.Args[0]
	}
	if cfg.Env == nil {
		cfg.Env = append(os.Environ(), fakeWorkerEnv+"=1")
	}
	s, err := NewSupervisor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder is an engine.Output that keeps everything in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Stream(name, text string) { r.add(name + ":" + text) }
func (r *recorder) Display(d engine.Display) {
	kind := "display"
	if d.Update {
		kind = "update"
	}
	r.add(kind + ":" + d.DisplayID + ":" + d.Data["text/plain"].(string))
}
func (r *recorder) ClearOutput(wait bool) { r.add("clear") }
func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}
func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.events, "|")
}

func run(t *testing.T, s *Supervisor, code string) (engine.ExecuteResult, *recorder) {
	t.Helper()
	return runCtx(t, s, context.Background(), code)
}

func runCtx(t *testing.T, s *Supervisor, ctx context.Context, code string) (engine.ExecuteResult, *recorder) {
	t.Helper()
	out := &recorder{}
	done := make(chan engine.ExecuteResult, 1)
	go func() { done <- s.Execute(ctx, engine.ExecuteRequest{Code: code}, out) }()
	select {
	case res := <-done:
		return res, out
	case <-time.After(hang):
		t.Fatalf("cell %q did not finish within %v", code, hang)
		return engine.ExecuteResult{}, nil
	}
}

func valueOf(t *testing.T, res engine.ExecuteResult) string {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("unexpected error %s: %s", res.Error.Name, res.Error.Value)
	}
	if res.Value == nil {
		t.Fatal("no value")
	}
	return res.Value.Data["text/plain"].(string)
}

func TestOutputsInOrderThenValue(t *testing.T) {
	s := newTestSupervisor(t, 0)
	res, out := run(t, s, "print a\neprint b\ndisplay d1 x\nupdate d1 y\nclear\nprint c\nvalue 42")
	if got := valueOf(t, res); got != "42" {
		t.Errorf("value %q", got)
	}
	if want := "stdout:a\n|stderr:b\n|display:d1:x|update:d1:y|clear|stdout:c\n"; out.String() != want {
		t.Errorf("outputs %q, want %q", out.String(), want)
	}
}

func TestCrashThenNextCellRuns(t *testing.T) {
	cases := []struct{ code, reason string }{
		{"goroutine-panic", "panic: boom from a goroutine"},
		{"recurse", "stack overflow"},
		{"exit 3", "exit status 3"},
	}
	s := newTestSupervisor(t, 0)
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			run(t, s, "set x 1")
			pid := s.PID()
			res, _ := run(t, s, c.code)
			if res.Error == nil || res.Error.Name != ErrRestarted {
				t.Fatalf("result %+v, want %s", res, ErrRestarted)
			}
			for _, want := range []string{c.reason, "variables were lost", "ledger is unaffected"} {
				if !strings.Contains(res.Error.Value, want) {
					t.Errorf("error %q does not say %q", res.Error.Value, want)
				}
			}
			if got := valueOf(t, must(run(t, s, "value ok"))); got != "ok" {
				t.Errorf("next cell gave %q", got)
			}
			if s.PID() == pid {
				t.Errorf("worker pid %d did not change", pid)
			}
			if res, _ := run(t, s, "get x"); res.Error == nil {
				t.Errorf("variable x survived a crash: %+v", res.Value)
			}
		})
	}
}

func must(res engine.ExecuteResult, _ *recorder) engine.ExecuteResult { return res }

// startCell runs code in the background; the cell must print "started"
// first, and startCell returns once that output has arrived (so the
// worker is inside the cell), with a function waiting for the result.
func startCell(t *testing.T, s *Supervisor, ctx context.Context, code string) func() engine.ExecuteResult {
	t.Helper()
	out := &recorder{}
	done := make(chan engine.ExecuteResult, 1)
	go func() { done <- s.Execute(ctx, engine.ExecuteRequest{Code: code}, out) }()
	for deadline := time.Now().Add(hang); !strings.Contains(out.String(), "stdout:started"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("cell %q did not start within %v", code, hang)
		}
	}
	return func() engine.ExecuteResult {
		t.Helper()
		select {
		case res := <-done:
			return res
		case <-time.After(hang):
			t.Fatalf("cell %q did not finish within %v", code, hang)
			return engine.ExecuteResult{}
		}
	}
}

// TestInterruptKeepsVariables: an interrupt stops the cell and variables
// survive. Neither cell ends by itself (block never, sleep only after an
// hour), and the grace before a kill is hang, so an Interrupted result is
// the event that proves the cancel reached the worker's cell and stopped
// it: an interrupt that does not stop it gives no result within hang, or
// InterpreterRestarted, and fails. No wall-clock bound: on a loaded machine
// the time to the result says nothing about the supervisor.
func TestInterruptKeepsVariables(t *testing.T) {
	s := newTestSupervisor(t, hang)
	run(t, s, "set x 7")
	for _, code := range []string{"block", "sleep 3600000"} {
		ctx, cancel := context.WithCancel(context.Background())
		wait := startCell(t, s, ctx, "print started\n"+code)
		cancel()
		res := wait()
		if res.Error == nil || res.Error.Name != "Interrupted" {
			t.Fatalf("%s: result %+v, want Interrupted", code, res.Error)
		}
		if got := valueOf(t, must(run(t, s, "get x"))); got != "7" {
			t.Errorf("after interrupting %s, x = %q", code, got)
		}
	}
}

// TestInterruptIgnoredRestartsAfterGrace: a cell that ignores the cancel
// is killed once the grace has passed, never before (the timer starts
// after the cancel, so the lower bound holds on any machine), and the
// log and the error say it was the grace that ran out. The upper end is
// only bounded by hang.
func TestInterruptIgnoredRestartsAfterGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	logBuf := &syncBuffer{}
	s := newSupervisorWith(t, Config{InterruptGrace: grace, Log: log.New(logBuf, "", 0)})
	run(t, s, "set x 7")
	pid := s.PID()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := startCell(t, s, ctx, "print started\nspin")
	start := time.Now()
	cancel()
	res := wait()
	took := time.Since(start)
	want := "the cell did not stop within 300ms of the interrupt, so the interpreter process was restarted; variables were lost; the ledger is unaffected"
	if res.Error == nil || res.Error.Name != ErrRestarted || res.Error.Value != want {
		t.Fatalf("result %+v, want %s: %q", res.Error, ErrRestarted, want)
	}
	if took < grace {
		t.Errorf("spin was killed %v after the interrupt, before the grace of %v", took, grace)
	}
	if l := logBuf.String(); !strings.Contains(l, "cell ignored the interrupt for 300ms; killing it") {
		t.Errorf("the log does not record the kill:\n%s", l)
	}
	if res, _ := run(t, s, "get x"); res.Error == nil {
		t.Error("x survived the restart")
	}
	if got := valueOf(t, must(run(t, s, "value ok"))); got != "ok" {
		t.Errorf("next cell gave %q", got)
	}
	if s.PID() == pid {
		t.Errorf("the worker %d was not replaced", pid)
	}
}

// TestCompleteWhileCellRuns: completion, is_complete and inspect answer
// while a cell blocks. The cell blocks until cancelled, and the test
// cancels it only after the answers: had they queued behind it, they would
// wait for ever (the request timeout is hang here, so a slow answer on a
// loaded machine is no failure, and no answer is).
func TestCompleteWhileCellRuns(t *testing.T) {
	s := newSupervisorWith(t, Config{RequestTimeout: hang})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := startCell(t, s, ctx, "print started\nblock")
	c := s.Complete("é pri", 5)
	if strings.Join(c.Matches, ",") != "print" || c.CursorStart != 2 || c.CursorEnd != 5 {
		t.Errorf("completion %+v, want print at code points 2..5", c)
	}
	if got := s.IsComplete("set x {"); got.Status != "incomplete" || got.Indent == "" {
		t.Errorf("is_complete %+v", got)
	}
	if got := s.Inspect("spin", 2, 0); !got.Found {
		t.Errorf("inspect %+v", got)
	}
	cancel()
	if res := wait(); res.Error == nil || res.Error.Name != "Interrupted" {
		t.Errorf("the blocked cell: %+v, want Interrupted", res.Error)
	}
}

func TestDeathBetweenCellsIsReported(t *testing.T) {
	s := newTestSupervisor(t, 0)
	run(t, s, "set x 1")
	// Kill the worker behind the supervisor's back, as a goroutine panic
	// after its cell ended would.
	p, err := os.FindProcess(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	p.Kill()
	// The supervisor replaces a worker that dies between cells at once;
	// wait for that instead of sleeping (the next cell must be warned, and
	// it can only be if the death was noticed before it started).
	for deadline := time.Now().Add(hang); s.PID() == pid; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor did not notice the worker's death within %v", hang)
		}
	}
	res, out := run(t, s, "value ok")
	if got := valueOf(t, res); got != "ok" {
		t.Errorf("value %q", got)
	}
	if !strings.Contains(out.String(), "stderr:"+ErrRestarted) || !strings.Contains(out.String(), "variables were lost") {
		t.Errorf("the cell after the death was not warned: %q", out.String())
	}
	// The warning is given once.
	if _, out := run(t, s, "value ok"); out.String() != "" {
		t.Errorf("warned twice: %q", out.String())
	}
}

// TestStartFailureIsAnErrorNotAHang: a worker that exits at once, without
// a hello, makes the cell fail with the reason, and the next cell tries a
// new worker instead of hanging on the dead one.
func TestStartFailureIsAnErrorNotAHang(t *testing.T) {
	// The test binary without the variable runs no test and exits 0
	// without a hello.
	s := newSupervisorWith(t, Config{Env: append(os.Environ(), fakeWorkerEnv+"=0"), Args: []string{"-test.run=^$"}})
	want := "the interpreter process exited (exit status 0); variables were lost; the ledger is unaffected"
	for i := 0; i < 2; i++ {
		res, _ := run(t, s, "value 1")
		if res.Error == nil || res.Error.Name != ErrRestarted || res.Error.Value != want {
			t.Fatalf("cell %d: result %+v, want %s: %q", i, res.Error, ErrRestarted, want)
		}
	}
	// The short requests give their empty answers, not a hang.
	if c := s.Complete("pri", 3); len(c.Matches) != 0 || c.CursorStart != 3 || c.CursorEnd != 3 {
		t.Errorf("completion from a dead worker %+v", c)
	}
}

func TestProtocolFrames(t *testing.T) {
	r, w, _ := os.Pipe()
	defer r.Close()
	go func() {
		writeFrame(w, &frame{ID: 9, Type: tStream, Name: "stdout", Text: "hé\n"})
		w.Write([]byte{0xff, 0xff, 0xff, 0xff}) // a length beyond maxFrame
		w.Close()
	}()
	f, err := readFrame(r)
	if err != nil || f.ID != 9 || f.Text != "hé\n" {
		t.Fatalf("frame %+v, %v", f, err)
	}
	if _, err := readFrame(r); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("oversized frame accepted: %v", err)
	}
}

func TestCrashReason(t *testing.T) {
	report := "runtime: goroutine stack exceeds 67108864-byte limit\nfatal error: stack overflow\n\nruntime stack:\n"
	if got := crashReason(report, false, errExit("exit status 2"), nil); got != "fatal error: stack overflow; exit status 2" {
		t.Errorf("reason %q", got)
	}
	if got := crashReason(report, true, errExit("exit status 2"), nil); got != withheldReason+"; exit status 2" {
		t.Errorf("withheld reason %q", got)
	}
}

type errExit string

func (e errExit) Error() string { return string(e) }
