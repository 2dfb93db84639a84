package worker

import (
	"bytes"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWorkerBinaryMissing: a worker that cannot be started at all is an
// error of NewSupervisor that names the binary.
func TestWorkerBinaryMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-privnotes")
	s, err := NewSupervisor(Config{Path: path, Args: []string{"worker"}})
	if s != nil || err == nil {
		t.Fatalf("NewSupervisor = %v, %v; want an error", s, err)
	}
	want := "worker: start " + path + ": fork/exec " + path + ": no such file or directory"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestEngineThatCannotStart: when the worker cannot create its engine
// (say the state database is locked), the cell says why, as an
// InterpreterUnavailable error, and so does the next one.
func TestEngineThatCannotStart(t *testing.T) {
	s := newSupervisorWith(t, Config{Env: append(os.Environ(), fakeWorkerEnv+"=fatal")})
	want := "the interpreter could not start: " + fatalMessage
	for i := 0; i < 2; i++ {
		res, _ := run(t, s, "value 1")
		if res.Error == nil || res.Error.Name != ErrUnavailable || res.Error.Value != want {
			t.Fatalf("cell %d: %+v, want %s: %q", i, res.Error, ErrUnavailable, want)
		}
	}
}

// TestGarbageFromWorker: a worker whose frames do not decode is killed
// (nothing more from it can be trusted) and the cell reports why.
func TestGarbageFromWorker(t *testing.T) {
	logBuf := &syncBuffer{}
	s := newSupervisorWith(t, Config{Env: append(os.Environ(), fakeWorkerEnv+"=garbage"), Log: log.New(logBuf, "", 0)})
	pid := s.PID()
	res, _ := run(t, s, "value 1")
	want := "the interpreter process exited (worker protocol: decode: invalid character 'h' looking for beginning of value; signal: killed); variables were lost; the ledger is unaffected"
	if res.Error == nil || res.Error.Name != ErrRestarted || res.Error.Value != want {
		t.Fatalf("result %+v, want %s: %q", res.Error, ErrRestarted, want)
	}
	if l := logBuf.String(); !strings.Contains(l, "worker protocol: decode: invalid character 'h' looking for beginning of value; killing it") {
		t.Errorf("the log does not record the kill:\n%s", l)
	}
	if s.PID() == pid || s.PID() == 0 {
		t.Errorf("worker %d was not replaced (pid now %d)", pid, s.PID())
	}
}

// TestResultWithoutResult: a result frame without a result is an
// InternalError of the cell, not a nil dereference in the kernel.
func TestResultWithoutResult(t *testing.T) {
	s := newSupervisorWith(t, Config{Env: append(os.Environ(), fakeWorkerEnv+"=noresult")})
	res, _ := run(t, s, "value 1")
	if res.Error == nil || res.Error.Name != "InternalError" || res.Error.Value != "the worker sent a result frame without a result" {
		t.Fatalf("result %+v", res.Error)
	}
}

// TestMainRefusesWithoutPipes: "privnotes worker" run by hand (no pipes on
// fd 3 and 4) says how it is meant to be started and exits 2.
func TestMainRefusesWithoutPipes(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fakeWorkerEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2", err)
	}
	want := "privnotes worker: file descriptors 3 and 4 are not pipes; the worker is started by \"privnotes kernel\", not by hand\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestRestartAndClose: Restart gives a fresh worker without the variables;
// after Close every request fails cleanly instead of starting a worker.
func TestRestartAndClose(t *testing.T) {
	s := newTestSupervisor(t, 0)
	run(t, s, "set x 1")
	pid := s.PID()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.PID() == pid || s.PID() == 0 {
		t.Errorf("Restart kept worker %d (pid now %d)", pid, s.PID())
	}
	if res, _ := run(t, s, "get x"); res.Error == nil || res.Error.Value != "undefined: x" {
		t.Errorf("x after Restart: %+v", res.Error)
	}
	s.Close()
	if s.PID() != 0 {
		t.Errorf("PID %d after Close", s.PID())
	}
	if err := s.Restart(); err == nil || err.Error() != "worker: supervisor is closed" {
		t.Errorf("Restart after Close: %v", err)
	}
	res, _ := run(t, s, "value 1")
	if res.Error == nil || res.Error.Name != ErrUnavailable || res.Error.Value != "could not start the interpreter: the kernel is shutting down" {
		t.Errorf("Execute after Close: %+v", res.Error)
	}
	if c := s.Complete("pri", 3); len(c.Matches) != 0 || c.CursorStart != 3 {
		t.Errorf("Complete after Close: %+v", c)
	}
	if i := s.Inspect("print", 2, 0); i.Found {
		t.Errorf("Inspect after Close: %+v", i)
	}
	if c := s.IsComplete("value 1"); c.Status != "unknown" {
		t.Errorf("IsComplete after Close: %+v", c)
	}
}

// TestWedgedCompletion: a completion the engine never answers gives the
// empty answer after RequestTimeout, and later requests are answered. The
// engine blocks for ever, so the empty answer can only come from the
// timeout; how long it took is no part of the test.
func TestWedgedCompletion(t *testing.T) {
	s := newSupervisorWith(t, Config{RequestTimeout: 100 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c := s.Complete("never-answer", 5); len(c.Matches) != 0 || c.CursorStart != 5 || c.CursorEnd != 5 {
			t.Errorf("wedged completion %+v, want the empty answer at 5", c)
		}
	}()
	select {
	case <-done:
	case <-time.After(hang):
		t.Fatalf("Complete did not give up within %v", hang)
	}
	s.cfg.RequestTimeout = hang // the worker answers the next one; a loaded machine must not time it out
	if c := s.Complete("pri", 3); strings.Join(c.Matches, ",") != "print" {
		t.Errorf("completion after a wedged one: %+v", c)
	}
}

// TestWorkerBinaryGoneAfterACrash: when the worker dies between cells and
// its binary cannot be started again (removed by an upgrade), the next
// cell says so and that the variables were lost; once the binary is back,
// cells run again.
func TestWorkerBinaryGoneAfterACrash(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "worker.sh")
	body := []byte("#!/bin/sh\nexec '" + os.Args[0] + "' \"$@\"\n")
	if err := os.WriteFile(script, body, 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSupervisorWith(t, Config{Path: script})
	run(t, s, "set x 1")
	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	p, _ := os.FindProcess(pid)
	p.Kill()
	// The supervisor tries to replace the worker at once, fails, and has
	// no worker until the next cell.
	for deadline := time.Now().Add(hang); s.PID() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor did not notice the worker's death within %v", hang)
		}
	}
	res, out := run(t, s, "value 1")
	want := "could not start the interpreter: worker: start " + script + ": fork/exec " + script + ": no such file or directory"
	if res.Error == nil || res.Error.Name != ErrUnavailable || res.Error.Value != want {
		t.Errorf("cell without a binary: %+v, want %q", res.Error, want)
	}
	if !strings.Contains(out.String(), "stderr:"+ErrRestarted+": the interpreter process exited after the previous cell (signal: killed); variables were lost") {
		t.Errorf("the cell was not told of the lost worker: %q", out.String())
	}
	if err := os.WriteFile(script, body, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := valueOf(t, must(run(t, s, "value back"))); got != "back" {
		t.Errorf("with the binary back: %q", got)
	}
}
