package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/mechanisms/bench"
)

func TestInstallCommand(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	prefix := filepath.Join(dir, "prefix")
	bin := filepath.Join(dir, "bin", "privnotes")
	kernels := filepath.Join(prefix, "share", "jupyter", "kernels")

	code, out, stderr := runCLI("install", "--prefix", prefix, "--binary", bin)
	want := `Installed kernel spec "privnotes" in ` + filepath.Join(kernels, "privnotes") + "\n" +
		"The kernel uses $PRIVNOTES_STATE from the environment Jupyter starts it in, else " + filepath.Join(dir, "xdg", "privnotes") + "\n" +
		"(give --state DIR to fix one).\n"
	if code != 0 || out != want || stderr != "" {
		t.Errorf("install: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, stderr, want)
	}
	var spec struct {
		Argv []string          `json:"argv"`
		Env  map[string]string `json:"env"`
	}
	b, err := os.ReadFile(filepath.Join(kernels, "privnotes", "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &spec); err != nil || strings.Join(spec.Argv, " ") != bin+" kernel {connection_file}" || len(spec.Env) != 0 {
		t.Errorf("kernel.json %s (%v)", b, err)
	}

	// A state directory without data: the spec names it and says how to
	// register data; one with data: no such hint.
	empty := filepath.Join(dir, "empty-state")
	code, out, _ = runCLI("install", "--prefix", prefix, "--binary", bin, "--name", "empty", "--state", empty)
	want = `Installed kernel spec "empty" in ` + filepath.Join(kernels, "empty") + "\n" +
		"The kernel uses the state directory " + empty + " (PRIVNOTES_STATE in kernel.json).\n" +
		"No data is registered there yet: privnotes dataset add NAME --state " + empty + " ...\n"
	if code != 0 || out != want {
		t.Errorf("install --state (empty): exit %d, stdout %q; want %q", code, out, want)
	}
	state, _ := registeredState(t)
	code, out, _ = runCLI("install", "--prefix", prefix, "--binary", bin, "--name", "full", "--state", state)
	if code != 0 || strings.Contains(out, "No data") || !strings.Contains(out, "The kernel uses the state directory "+state+" ") {
		t.Errorf("install --state (registered): exit %d, stdout %q", code, out)
	}

	// Without --binary, the spec starts this very binary.
	if code, _, stderr := runCLI("install", "--prefix", prefix, "--name", "self"); code != 0 {
		t.Fatalf("install without --binary: exit %d, %q", code, stderr)
	}
	b, _ = os.ReadFile(filepath.Join(kernels, "self", "kernel.json"))
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if err := json.Unmarshal(b, &spec); err != nil || spec.Argv[0] != exe {
		t.Errorf("install without --binary starts %v, want %s", spec.Argv, exe)
	}

	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		args   []string
		code   int
		stderr string // prefix
	}{
		{[]string{"install", "--prefix", prefix, "extra"}, 2, "privnotes install: unexpected argument \"extra\"\n"},
		{[]string{"install", "--bogus"}, 2, "flag provided but not defined: -bogus\nUsage: privnotes install "},
		{[]string{"install", "--prefix", prefix, "--binary", bin, "--name", "Bad/Name"}, 1,
			"privnotes install: kernel name \"Bad/Name\": use lowercase letters, digits, '.', '_' and '-' only (Jupyter's rule)\n"},
		{[]string{"install", "--prefix", prefix, "--user", "--binary", bin}, 1, "privnotes install: use only one of --user, --prefix and --sys-prefix\n"},
		{[]string{"install", "--prefix", filepath.Join(file, "p"), "--binary", bin, "--name", "t"}, 1,
			"privnotes install: create " + filepath.Join(file, "p", "share", "jupyter", "kernels", "t") + ": mkdir " + file + ": not a directory\n"},
	}
	for _, tt := range tests {
		code, out, stderr := runCLI(tt.args...)
		if code != tt.code || out != "" || !strings.HasPrefix(stderr, tt.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.args, code, out, stderr, tt.code, tt.stderr)
		}
	}
}

func TestWorkerCommandErrors(t *testing.T) {
	code, out, stderr := runCLI("worker", "--bogus")
	if code != 2 || out != "" || !strings.HasPrefix(stderr, "flag provided but not defined: -bogus\nUsage: privnotes worker [--state DIR]\n") {
		t.Errorf("worker --bogus: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	old := newWorkerEngine
	newWorkerEngine = nil
	code, _, stderr = runCLI("worker")
	newWorkerEngine = old
	if code != 1 || stderr != "privnotes worker: this binary has no language engine linked\n" {
		t.Errorf("worker without an engine: exit %d, %q", code, stderr)
	}

	// Started by a person, not by a kernel: no pipes on fd 3 and 4. (In a
	// child process: the check opens fd 3 and 4 of the process.)
	cmd := exec.Command(os.Args[0], "worker")
	cmd.Env = append(os.Environ(), cellChildEnv+"=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("worker by hand: %v, want exit status 2", err)
	}
	if want := "privnotes worker: file descriptors 3 and 4 are not pipes; the worker is started by \"privnotes kernel\", not by hand\n"; errb.String() != want {
		t.Errorf("worker by hand: stderr %q, want %q", errb.String(), want)
	}
}

var registerTestWorkloads sync.Once

// testWorkloads registers two workloads that run at once: one whose rows
// echo the flags and hold non-finite numbers, one that fails.
func testWorkloads() {
	registerTestWorkloads.Do(func() {
		bench.Register(bench.Workload{Name: "zz-test-rows", Summary: "test rows", Run: func(ctx context.Context, cfg bench.Config) ([]bench.Row, error) {
			eps, method := 1.0, "m"
			if len(cfg.Eps) > 0 {
				eps = cfg.Eps[0]
			}
			if len(cfg.Methods) > 0 {
				method = cfg.Methods[0]
			}
			return []bench.Row{
				{Workload: "zz-test-rows", Method: method, N: 10, D: 2, K: 1, Eps: eps, Delta: 1e-6, Seed: 0, Error: math.NaN(), Seconds: 0.001,
					Extra: map[string]any{"setting": "s", "ratio": math.Inf(1)}},
				{Workload: "zz-test-rows", Method: method, N: 10, D: 2, K: 1, Eps: eps, Delta: 1e-6, Seed: 1, Error: 0.25, Seconds: 0.002,
					Extra: map[string]any{"setting": "s"}},
			}, nil
		}})
		bench.Register(bench.Workload{Name: "zz-test-fails", Summary: "test failure", Run: func(context.Context, bench.Config) ([]bench.Row, error) {
			return []bench.Row{{Workload: "zz-test-fails", Method: "m", N: 1, D: 1, K: 1, Eps: 1, Error: 0.5, Seconds: 0.001}}, errors.New("synthetic failure")
		}})
	})
}

func TestBenchOutputs(t *testing.T) {
	testWorkloads()
	code, out, stderr := runCLI("bench", "--workload", "zz-test-rows", "--eps", "0.5", "--methods", "gauss")
	if code != 0 || stderr != "" {
		t.Fatalf("bench: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(out, "\n")
	if norm(lines[0]) != "workload method n d k eps delta setting seeds median error median s" ||
		!strings.HasPrefix(norm(lines[1]), "zz-test-rows gauss 10 2 1 0.5 1e-06 s 2 ") ||
		!strings.HasPrefix(lines[3], "2 runs in ") || !strings.HasSuffix(lines[3], "s (seeded noise, public synthetic data)") {
		t.Errorf("bench table:\n%s", out)
	}

	code, out, _ = runCLI("bench", "--workload", "zz-test-rows", "--json")
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		rows = append(rows, r)
	}
	if code != 0 || len(rows) != 2 {
		t.Fatalf("bench --json: exit %d, %d rows:\n%s", code, len(rows), out)
	}
	extra, _ := rows[0]["extra"].(map[string]any)
	if rows[0]["error"] != -1.0 || extra["error_note"] != "non-finite" || extra["ratio"] != "+Inf" || rows[1]["error"] != 0.25 {
		t.Errorf("non-finite numbers in JSON: %v", rows)
	}

	code, out, stderr = runCLI("bench", "--workload", "zz-test-fails")
	if code != 1 || stderr != "privnotes bench: workload zz-test-fails: synthetic failure\n" || !strings.Contains(out, "zz-test-fails") {
		t.Errorf("failing workload: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, _, stderr = runCLI("bench", "--workload", "zz-test-rows", "--calibration", "fast")
	if code != 2 || stderr != "privnotes bench: --calibration \"fast\": use zcdp, analytic, gdp or paper\n" {
		t.Errorf("bad calibration: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI("bench", "--workers", "-1")
	if code != 2 || stderr != "privnotes bench: sizes, seeds and workers must be ≥ 0 and delta in [0, 1)\n" {
		t.Errorf("negative workers: exit %d, %q", code, stderr)
	}
}

// brokenEngine fails to start, as an interpreter with a broken state
// directory would.
func withBrokenEngine(t *testing.T) {
	t.Helper()
	old := newCellEngine
	newCellEngine = func(string) (engine.Engine, error) { return nil, errors.New("interp: the state database is locked") }
	t.Cleanup(func() { newCellEngine = old })
}

func TestReplAndRunErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, nil, 0o600)
	script := filepath.Join(dir, "s.pn")
	os.WriteFile(script, []byte("1"), 0o600)
	badState := filepath.Join(file, "state")
	call := func(f cellMain, args []string, stdin string) (int, string, string) {
		var out, errb bytes.Buffer
		code := f(args, strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	tests := []struct {
		name   string
		f      cellMain
		args   []string
		code   int
		stderr string // prefix
	}{
		{"repl extra", runRepl, []string{"extra"}, 2, "privnotes repl: unexpected arguments [\"extra\"] (to run a script: privnotes run FILE)\n"},
		{"repl bad flag", runRepl, []string{"--bogus"}, 2, "flag provided but not defined: -bogus\nUsage: privnotes repl "},
		{"repl help", runRepl, []string{"-h"}, 0, "Usage: privnotes repl "},
		{"repl bad state", runRepl, []string{"--state", badState}, 1, "privnotes repl: state directory " + badState + " (from --state): not a directory; give a directory that holds privnotes state, or one to create with mkdir -p\n"},
		{"run two files", runScript, []string{script, script}, exitUsage, "privnotes run: give exactly one script FILE (or - for stdin)\n"},
		{"run help", runScript, []string{"-h"}, 0, "Usage: privnotes run "},
		{"run bad state", runScript, []string{"--state", badState, script}, exitError, "privnotes run: state directory " + badState + " (from --state): not a directory; give a directory that holds privnotes state, or one to create with mkdir -p\n"},
		{"run a directory", runScript, []string{dir}, exitError, "privnotes run: read " + dir + ": is a directory\n"},
	}
	for _, tt := range tests {
		code, out, stderr := call(tt.f, tt.args, "")
		if code != tt.code || out != "" || !strings.HasPrefix(stderr, tt.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.name, code, out, stderr, tt.code, tt.stderr)
		}
	}

	withBrokenEngine(t)
	for _, tt := range []struct {
		f    cellMain
		args []string
		want string
	}{
		{runRepl, []string{"--state", dir}, "privnotes repl: interp: the state database is locked\n"},
		{runScript, []string{"--state", dir, script}, "privnotes run: interp: the state database is locked\n"},
	} {
		if code, out, stderr := call(tt.f, tt.args, ""); code != 1 || out != "" || stderr != tt.want {
			t.Errorf("%v with a broken engine: exit %d, stdout %q, stderr %q; want 1 and %q", tt.args, code, out, stderr, tt.want)
		}
	}
}

// TestReplInputError: an input that fails mid-session ends it with
// status 1 and the reason; the cells before it ran.
func TestReplInputError(t *testing.T) {
	withTestEngine(t)
	var out, errb bytes.Buffer
	in := iotest.TimeoutReader(strings.NewReader("fmt.Println(\"before\")\n"))
	code := runRepl([]string{"--state", t.TempDir()}, in, &out, &errb)
	if code != 1 || out.String() != "before\n" || errb.String() != "privnotes repl: reading input: "+iotest.ErrTimeout.Error()+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	var out2, errb2 bytes.Buffer
	code = runScript([]string{"-", "--state", t.TempDir()}, iotest.ErrReader(errors.New("stdin closed")), &out2, &errb2)
	if code != exitError || errb2.String() != "privnotes run: stdin closed\n" {
		t.Errorf("run - with a failing stdin: exit %d, stderr %q", code, errb2.String())
	}
}

func TestTextOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, nil, 0o600)
	var out, errb bytes.Buffer
	o := newTextOutput(&out, &errb, filepath.Join(dir, "images"))
	o.Stream("stdout", "progress: ")
	o.Display(engine.Display{Data: engine.MIMEBundle{"text/plain": "10%"}, DisplayID: "p"})
	o.Display(engine.Display{Data: engine.MIMEBundle{"text/plain": "20%"}, DisplayID: "p", Update: true})
	o.ClearOutput(true)
	o.Stream("stderr", "warning\n")
	o.Display(engine.Display{Data: engine.MIMEBundle{"image/svg+xml": "<svg/>", "text/plain": "a chart"}})
	o.Display(engine.Display{Data: engine.MIMEBundle{"image/png": "%%%", "text/plain": "<image 1x1>"}})
	o.Display(engine.Display{Data: engine.MIMEBundle{"application/json": map[string]any{}}})
	o.Stream("stdout", "no newline")
	o.finish()
	o.show(engine.Display{Data: engine.MIMEBundle{"text/plain": "value"}})
	svg := filepath.Join(dir, "images", "display-001.svg")
	want := "progress: \n10%\n  ↳ 20%\na chart\n[image/svg+xml saved to " + svg + "]\n" +
		"[image/png display; not saved: illegal base64 data at input byte 0]\n[application/json display]\nno newline\nvalue\n"
	if out.String() != want || errb.String() != "warning\n" {
		t.Errorf("stdout %q\nwant   %q\nstderr %q", out.String(), want, errb.String())
	}
	if b, err := os.ReadFile(svg); err != nil || string(b) != "<svg/>" {
		t.Errorf("saved svg %q, %v", b, err)
	}

	out.Reset()
	o = newTextOutput(&out, &errb, filepath.Join(file, "images"))
	o.Display(engine.Display{Data: engine.MIMEBundle{"image/png": "iVBORw0KGgo="}})
	if want := "[image/png display; not saved: mkdir " + file + ": not a directory]\n"; out.String() != want {
		t.Errorf("unsaveable image: %q, want %q", out.String(), want)
	}

	var w bytes.Buffer
	printError(&w, &engine.Error{Name: "Refused", Value: "no budget left"})
	if w.String() != "Refused: no budget left\n" {
		t.Errorf("printError without a traceback: %q", w.String())
	}
}

// childOf returns the pid of the child process of this one whose command
// line contains marker.
func childOf(t *testing.T, marker string) int {
	t.Helper()
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, _ := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "children"))
		for _, f := range strings.Fields(string(b)) {
			cmdline, _ := os.ReadFile("/proc/" + f + "/cmdline")
			if strings.Contains(string(cmdline), marker) {
				pid, _ := strconv.Atoi(f)
				return pid
			}
		}
	}
	return 0
}

// TestGuardReportsKilledChild: when the process running a script is
// killed (the OOM killer's SIGKILL) or terminated (SIGTERM to the parent,
// which passes it on), run ends with status 4 and says so, not with the
// signal's raw status. Each run loops for ever, so its end can only come
// from the signal; the waits are bounded by hang alone.
func TestGuardReportsKilledChild(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc")
	}
	withGuard(t)
	keep := make(chan os.Signal, 4)
	signal.Notify(keep, syscall.SIGTERM)
	defer signal.Stop(keep)
	dir := t.TempDir()
	for i, tt := range []struct {
		name   string
		signal func(child int)
		what   string
	}{
		{"SIGKILL", func(child int) { syscall.Kill(child, syscall.SIGKILL) }, "(by the system's out-of-memory killer, or kill -9)"},
		{"SIGTERM to the parent", func(int) { syscall.Kill(os.Getpid(), syscall.SIGTERM) }, "terminated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			script := filepath.Join(dir, fmt.Sprintf("loop%d.pn", i))
			os.WriteFile(script, []byte("fmt.Println(\"started\")\nfor {\n}\n"), 0o600)
			out := &lockedBuffer{}
			var errb bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- guarded("run", runScript, []string{"--state", dir, script}, nil, out, &errb)
			}()
			waitFor(t, "the script's output", out.String, "started\n")
			child := childOf(t, script)
			if child == 0 {
				t.Fatal("no child process runs the script")
			}
			tt.signal(child)
			select {
			case code := <-done:
				msg := errb.String()
				if code != exitCrashed || !strings.HasPrefix(msg, "privnotes run: the interpreter process was killed by ") ||
					!strings.Contains(msg, tt.what) || !strings.HasSuffix(msg, "; the script did not finish (the ledger keeps what it charged)\n") {
					t.Errorf("exit %d, stderr %q; want %d and a message naming %q", code, msg, exitCrashed, tt.what)
				}
			case <-time.After(hang):
				syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("run did not end within %v of the signal", hang)
			}
		})
	}
}
