package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain runs the child process of a guarded repl or run session when
// the test binary is started as one; the tests themselves call the
// commands in-process unless they turn guardCrashes on.
func TestMain(m *testing.M) {
	if os.Getenv(cellChildEnv) != "" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	// A guarded parent process of a test (orphan_linux_test.go): the
	// command line runs as the binary would run it, its child included.
	if os.Getenv(guardedParentEnv) != "" {
		os.Unsetenv(guardedParentEnv)
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	guardCrashes = false
	os.Exit(m.Run())
}

func withGuard(t *testing.T) {
	t.Helper()
	guardCrashes = true
	t.Cleanup(func() { guardCrashes = false })
}

const runaway = "func f() int { return f() + 1 }\nf()\n"

func TestRunCrashIsContained(t *testing.T) {
	withGuard(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "deep.pn")
	if err := os.WriteFile(p, []byte("fmt.Println(\"before\")\n"+runaway), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	start := time.Now()
	code := dispatch([]string{"run", "--state", dir, p}, &out, &errb)
	elapsed := time.Since(start)
	if code != exitCrashed {
		t.Fatalf("exit status %d, want %d (stderr %q)", code, exitCrashed, errb.String())
	}
	if out.String() != "before\n" {
		t.Errorf("stdout %q, want the output before the crash", out.String())
	}
	msg := errb.String()
	for _, want := range []string{"privnotes run: the interpreter process crashed: stack overflow", "64 MiB", "withheld"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q: %q", want, msg)
		}
	}
	// nothing of the Go runtime's report: no goroutine stacks, no frames
	for _, leak := range []string{"goroutine", "runtime.", "fp=", "+0x"} {
		if strings.Contains(msg, leak) {
			t.Errorf("stderr shows the crash report (%q): %q", leak, msg)
		}
	}
	if n := strings.Count(msg, "\n"); n != 1 {
		t.Errorf("stderr has %d lines, want 1: %q", n, msg)
	}
	// The 64 MiB limit fails in well under a second; a 1 GB stack took
	// several. 20 s leaves room for a loaded CI machine.
	if elapsed > 20*time.Second {
		t.Errorf("the crash took %v", elapsed)
	}
	t.Logf("runaway recursion contained in %v", elapsed)
}

func TestReplCrashEndsSession(t *testing.T) {
	withGuard(t)
	var out, errb bytes.Buffer
	in := strings.NewReader("x := 2\nfmt.Println(x * 21)\n" + runaway + "fmt.Println(\"after\")\n")
	code := guarded("repl", runRepl, []string{"--state", t.TempDir(), "--history", "off"}, in, &out, &errb)
	if code != exitCrashed {
		t.Fatalf("exit status %d, want %d (stderr %q)", code, exitCrashed, errb.String())
	}
	if out.String() != "42\n" {
		t.Errorf("stdout %q, want 42 and nothing after the crash", out.String())
	}
	if msg := errb.String(); !strings.Contains(msg, "privnotes repl: the interpreter process crashed: stack overflow") ||
		!strings.Contains(msg, "variables are lost") || strings.Contains(msg, "goroutine") {
		t.Errorf("stderr %q", msg)
	}
}

// TestGuardPassesStatuses: through the child process, ordinary outcomes
// keep their statuses and messages (a usage error is still 2, not a crash).
func TestGuardPassesStatuses(t *testing.T) {
	withGuard(t)
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.pn")
	bad := filepath.Join(dir, "bad.pn")
	os.WriteFile(ok, []byte(`fmt.Println(strings.ToUpper("ok"))`), 0o644)
	os.WriteFile(bad, []byte("y := nope"), 0o644)
	tests := []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"run", "--state", dir, ok}, 0, "OK\n", ""},
		{[]string{"run", "--state", dir, bad}, exitError, "", "NameError"},
		{[]string{"run"}, exitUsage, "", "give exactly one script FILE"},
		{[]string{"run", "--no-such-flag"}, exitUsage, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := dispatch(tt.args, &out, &errb)
		if code != tt.code || out.String() != tt.stdout || !strings.Contains(errb.String(), tt.errs) || strings.Contains(errb.String(), "process crashed") {
			t.Errorf("%v: status %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out.String(), errb.String(), tt.code, tt.stdout, tt.errs)
		}
	}
}

func TestCrashFilter(t *testing.T) {
	tests := []struct {
		name, in, passed, kind string
	}{
		{"no report", "a line\nanother\n", "a line\nanother\n", ""},
		{"overflow", "note\nruntime: goroutine stack exceeds 67108864-byte limit\nruntime: sp=0x1\nfatal error: stack overflow\n\ngoroutine 1 [running]:\nmain.f(0x2a)\n", "note\n", "stack overflow"},
		{"panic without newline", "panic: runtime error: index out of range [137]", "", "a panic"},
		{"oom", "fatal error: runtime: out of memory\n", "", "out of memory"},
		{"other", "fatal error: all goroutines are asleep - deadlock!\n", "", "a fatal error of the Go runtime"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		f := &crashFilter{out: &out}
		// in small pieces, as a pipe delivers them
		for i := 0; i < len(tt.in); i += 7 {
			f.Write([]byte(tt.in[i:min(i+7, len(tt.in))]))
		}
		f.flush()
		if out.String() != tt.passed {
			t.Errorf("%s: passed on %q, want %q", tt.name, out.String(), tt.passed)
		}
		if got := f.crash(); !strings.HasPrefix(got, tt.kind) || (tt.kind == "") != (got == "") {
			t.Errorf("%s: crash() = %q, want %q…", tt.name, got, tt.kind)
		}
	}
}
