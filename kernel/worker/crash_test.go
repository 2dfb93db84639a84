package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/enginetest"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

// privateFake is the test worker's engine: enginetest's commands plus two
// that panic inside a mechanism's frame (federated.Local.Round calling
// back) with a value standing for private data ("rows=137"):
//
//	private-goroutine-panic   in a new goroutine: the process dies
//	private-panic             on the cell's goroutine: Serve recovers it
type privateFake struct{ *enginetest.Fake }

const secretValue = "rows=137"

func (f *privateFake) Execute(ctx context.Context, req engine.ExecuteRequest, out engine.Output) engine.ExecuteResult {
	switch strings.TrimSpace(req.Code) {
	case "private-goroutine-panic":
		go panicInMechanism()
		select {}
	case "private-panic":
		panicInMechanism()
	}
	return f.Fake.Execute(ctx, req, out)
}

// Complete never answers the code "never-answer", as a wedged engine
// would not.
func (f *privateFake) Complete(code string, cursor int) engine.Completion {
	if code == "never-answer" {
		select {}
	}
	return f.Fake.Complete(code, cursor)
}

type nopProvider struct{}

func (nopProvider) Answer(context.Context, int) (int, error) { return 0, nil }

// panicInMechanism panics with a private-looking value below a frame of
// mechanisms/federated.
func panicInMechanism() {
	tr := federated.NewLocal([]federated.Provider[int, int]{nopProvider{}})
	tr.Round(context.Background(), 0, func(i, rep int) error {
		panic(errors.New("index out of range: " + secretValue))
	})
}

func newLoggedSupervisor(t *testing.T) (*Supervisor, *syncBuffer) {
	t.Helper()
	var buf syncBuffer
	s, err := NewSupervisor(Config{
		Path: os.Args[0],
		Env:  append(os.Environ(), fakeWorkerEnv+"=1", "GOTRACEBACK=none"),
		Log:  log.New(&buf, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &buf
}

// A worker that dies of a panic inside a mechanism: neither the cell's
// error nor the kernel's log shows the panic value or the stack, even
// with GOTRACEBACK=none inherited; the next cell runs. A panic in public
// code (the fake engine's own goroutine) is still reported with its value.
func TestPrivateCrashReportWithheld(t *testing.T) {
	s, logBuf := newLoggedSupervisor(t)
	res, out := run(t, s, "private-goroutine-panic")
	if res.Error == nil || res.Error.Name != ErrRestarted {
		t.Fatalf("result %+v, want %s", res, ErrRestarted)
	}
	shown := res.Error.Value + strings.Join(res.Error.Traceback, "\n") + out.String()
	if !strings.Contains(shown, withheldReason) {
		t.Errorf("the error does not say the report is withheld: %s", shown)
	}
	if got := valueOf(t, must(run(t, s, "value ok"))); got != "ok" {
		t.Errorf("next cell gave %q", got)
	}
	s.Close() // flush the log of the dead worker
	logged := logBuf.String()
	for _, text := range []string{shown, logged} {
		for _, bad := range []string{secretValue, "goroutine ", "federated", ".go:"} {
			if strings.Contains(text, bad) {
				t.Errorf("%q reached the analyst's view or the kernel's log:\n%s", bad, text)
			}
		}
	}
	if !strings.Contains(logged, withheldReason) {
		t.Errorf("the log does not record the withheld crash:\n%s", logged)
	}

	s2, logBuf2 := newLoggedSupervisor(t)
	res, _ = run(t, s2, "goroutine-panic")
	if res.Error == nil || !strings.Contains(res.Error.Value, "panic: boom from a goroutine") {
		t.Errorf("a public crash lost its reason: %+v", res.Error)
	}
	s2.Close()
	if !strings.Contains(logBuf2.String(), "goroutine ") {
		t.Errorf("a public crash report was not logged:\n%s", logBuf2.String())
	}
}

// A panic that escapes the engine on the cell's goroutine through a
// private frame is an InternalError without value or stack.
func TestPrivatePanicInEngineWithheld(t *testing.T) {
	s, _ := newLoggedSupervisor(t)
	run(t, s, "set x 1")
	res, _ := run(t, s, "private-panic")
	if res.Error == nil || res.Error.Name != "InternalError" {
		t.Fatalf("result %+v, want InternalError", res)
	}
	text := res.Error.Value + strings.Join(res.Error.Traceback, "\n")
	for _, bad := range []string{secretValue, "goroutine ", "federated", ".go:"} {
		if strings.Contains(text, bad) {
			t.Errorf("%q reached the cell:\n%s", bad, text)
		}
	}
	if got := valueOf(t, must(run(t, s, "get x"))); got != "1" {
		t.Errorf("the variables were lost: x = %q", got)
	}
}

func TestPrivateFrames(t *testing.T) {
	cases := []struct {
		trace string
		want  bool
	}{
		{"goroutine 7 [running]:\ngithub.com/privnotes/privnotes/mechanisms/pca.(*Plan).runNPM(0x1, 0x3ff0000000000000)\n\t/src/pca/npm.go:150 +0x1f\n", true},
		{"goroutine 7 [running]:\nmain.f()\ncreated by github.com/privnotes/privnotes/mechanisms/internal/rowpass.For in goroutine 1\n", true},
		{"github.com/privnotes/privnotes/dsl/runtime.(*Runtime).execute(...)\n", true},
		{"github.com/privnotes/privnotes/dsl/ledger.(*Store).Load(...)\n", true},
		{"github.com/privnotes/privnotes/mechanisms/federated.(*Local[...]).Round(0xc0001)\n", true},
		{"github.com/privnotes/privnotes/newpkg.F()\n", true}, // unknown packages fail safe
		{"goroutine 1 [running]:\ngithub.com/traefik/yaegi/interp.runCfg(...)\ngithub.com/privnotes/privnotes/dsl/interp.(*Engine).Execute(...)\ncreated by github.com/privnotes/privnotes/kernel/worker.Serve in goroutine 1\n", false},
		{"github.com/privnotes/privnotes/kernel/enginetest.(*Fake).Execute.func1()\n", false},
		{"github.com/privnotes/privnotes/stdlib.init()\n", false},
		{"", false},
	}
	for _, c := range cases {
		if got := privateFrames(c.trace); got != c.want {
			t.Errorf("privateFrames(%q) = %v, want %v", c.trace, got, c.want)
		}
	}
	if !mustWithhold("panic: x\n", false) {
		t.Error("a report without a goroutine trace is not withheld")
	}
	if !mustWithhold("panic: x\ngoroutine 1 [running]:\nmain.f()\n", true) {
		t.Error("a truncated report is not withheld")
	}
	if mustWithhold("panic: x\ngoroutine 1 [running]:\nmain.f()\n", false) {
		t.Error("a public report is withheld")
	}
}

// The tail writer never logs a line of a crash report before the worker
// has exited, so a withheld report cannot leak through the log while it
// is being written.
func TestTailWriterHoldsReport(t *testing.T) {
	var buf bytes.Buffer
	w := &tailWriter{log: log.New(&buf, "", 0), prefix: "w: ", reports: true}
	fmt.Fprint(w, "a log line\npanic: rows=137\n\ngoroutine 1 [running]:\ngithub.com/privnotes/privnotes/mechanisms/pca.f(0x89)\n")
	if got := buf.String(); got != "w: a log line\n" {
		t.Fatalf("logged before exit: %q", got)
	}
	reason := w.finish(42, errExit("exit status 2"), nil)
	if strings.Contains(buf.String()+reason, "137") || !strings.Contains(reason, withheldReason) {
		t.Errorf("log %q, reason %q", buf.String(), reason)
	}
}

// syncBuffer is a bytes.Buffer safe for the supervisor's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The splitter yields the same lines whatever pieces the pipe delivers,
// marks every line from the first line of a report on, and keeps a last
// line without a newline until Flush.
func TestReportSplitter(t *testing.T) {
	const in = "a log line\nruntime: goroutine stack exceeds 1000-byte limit\nfatal error: stack overflow\n\ngoroutine 1 [running]:\nmain.f(0x2a)"
	want := []string{
		"- a log line\n",
		"R runtime: goroutine stack exceeds 1000-byte limit\n",
		"R fatal error: stack overflow\n",
		"R \n",
		"R goroutine 1 [running]:\n",
		"R main.f(0x2a)\n",
	}
	for _, piece := range []int{1, 3, 7, 64, len(in)} {
		var s ReportSplitter
		var got []string
		take := func(line []byte, inReport bool) {
			mark := "- "
			if inReport {
				mark = "R "
			}
			got = append(got, mark+string(line))
		}
		for i := 0; i < len(in); i += piece {
			s.Feed([]byte(in[i:min(i+piece, len(in))]), take)
		}
		if len(got) != len(want)-1 {
			t.Errorf("pieces of %d: %d lines before Flush, want %d", piece, len(got), len(want)-1)
		}
		s.Flush(take)
		if strings.Join(got, "") != strings.Join(want, "") {
			t.Errorf("pieces of %d: lines %q, want %q", piece, got, want)
		}
		if !s.InReport() {
			t.Errorf("pieces of %d: InReport() = false after a report", piece)
		}
	}
}
