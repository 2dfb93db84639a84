package main

// Crash containment for "privnotes repl" and "privnotes run".
//
// Some failures cannot be recovered inside a Go process: a stack overflow
// (runaway recursion in a cell), running out of memory, a panic in a
// goroutine a cell or a mechanism started. The Go runtime then writes a
// crash report to file descriptor 2 and exits with status 2. Such a report
// holds the stacks of all goroutines with the raw words of their
// arguments, so a mechanism's goroutine could print bits of private data;
// and status 2 is also the status of a usage error.
//
// So repl and run execute in a child process of the same binary, the way
// the kernel runs cells in a worker. The child's ordinary error output goes
// straight to the terminal through an extra descriptor (fd 3), while its
// fd 2, where only the Go runtime (and stray writers) still write, is a
// pipe to the parent. The parent passes ordinary lines on, but once a crash
// report starts it shows none of it: it names the kind of crash from fixed
// markers, says the report was withheld, and exits with exitCrashed.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/privnotes/privnotes/kernel/worker"
)

// cellChildEnv marks the child process that runs a repl or run session.
const cellChildEnv = "PRIVNOTES_CELL_PROCESS"

// lifelineEnv names the child's descriptor of its lifeline (fd 4): the
// child exits when the parent's end closes (worker/lifeline.go). Only
// superviseChild sets it, so a process that merely inherited cellChildEnv
// never mistakes another descriptor for a lifeline.
const lifelineEnv = "PRIVNOTES_LIFELINE_FD"

// watchParent makes the child of a guarded session exit once its parent
// is gone: a script whose "privnotes run" was killed must not go on
// charging the budget.
func watchParent() {
	if os.Getenv(lifelineEnv) != "4" {
		return
	}
	f := os.NewFile(4, "lifeline")
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	worker.WatchLifeline(f, func() { os.Exit(worker.ExitOrphaned) })
}

// exitCrashed is the exit status of repl and run when the process running
// the cells died: stack overflow, out of memory, a Go runtime fatal error
// or a signal other than SIGINT.
const exitCrashed = 4

// guardCrashes runs repl and run in a child process; the package's tests
// turn it off to call the commands in-process.
var guardCrashes = true

// cellMain is the in-process body of repl or run.
type cellMain func(args []string, stdin io.Reader, stdout, stderr io.Writer) int

// guarded runs the command name (repl or run) in a child process of this
// binary and reports how it ended; in that child, it runs body.
func guarded(name string, body cellMain, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if os.Getenv(cellChildEnv) != "" {
		// The child: the worker's stack limit makes runaway recursion fail
		// in a fraction of a second instead of growing a 1 GB stack.
		debug.SetMaxStack(worker.MaxStack)
		if errOut := os.NewFile(3, "stderr"); errOut != nil {
			if _, err := errOut.Stat(); err == nil {
				os.Stderr = errOut
				stderr = errOut
			}
		}
		watchParent()
		return body(args, stdin, stdout, stderr)
	}
	if !guardCrashes {
		return body(args, stdin, stdout, stderr)
	}
	code, err := superviseChild(name, args, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes %s: %v\n", name, err)
		return exitError
	}
	return code
}

// superviseChild starts "privnotes NAME ARGS..." as a child and returns the
// exit status for it.
func superviseChild(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("cannot find this binary to run the session: %w", err)
	}
	cmd := exec.Command(exe, append([]string{name}, args...)...)
	// GOTRACEBACK=none shortens the reports of panics; a stack overflow's
	// report is printed in full regardless, hence the filter.
	cmd.Env = append(os.Environ(), cellChildEnv+"=1", lifelineEnv+"=4", "GOTRACEBACK=none")
	// The child must not outlive this process (kill -9 included): SIGKILL
	// from the operating system where it can, a lifeline everywhere.
	cmd.SysProcAttr = worker.DieWithParent(nil)
	lifeline, keep, err := worker.NewLifeline()
	if err != nil {
		return 0, err
	}
	defer keep.Close()
	cmd.Stdin, cmd.Stdout = stdin, stdout
	filter := &crashFilter{out: stderr}
	cmd.Stderr = filter

	// fd 3: the child's ordinary error output, the caller's stderr.
	errFile, copyDone, err := fileFor(stderr)
	if err != nil {
		return 0, err
	}
	cmd.ExtraFiles = []*os.File{errFile, lifeline} // fd 3 and fd 4

	// Ctrl-C reaches the child from the terminal (same process group) and
	// interrupts its cell; the parent must survive it. SIGTERM and SIGHUP
	// are passed on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	err = cmd.Start()
	lifeline.Close() // the child holds its own copy
	if err != nil {
		if copyDone != nil {
			errFile.Close()
			<-copyDone
		}
		return 0, err
	}
	if copyDone != nil {
		errFile.Close() // the child holds its own copy
	}
	stopForward := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != os.Interrupt {
					_ = cmd.Process.Signal(s)
				}
			case <-stopForward:
				return
			}
		}
	}()
	waitErr := cmd.Wait()
	close(stopForward)
	if copyDone != nil {
		<-copyDone
	}
	filter.flush()

	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		return 0, nil
	case !errors.As(waitErr, &ee):
		return 0, waitErr
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		if sig == syscall.SIGINT {
			return exitInterrupted, nil
		}
		what := "killed by " + sig.String()
		if sig == syscall.SIGKILL {
			what += " (by the system's out-of-memory killer, or kill -9)"
		}
		fmt.Fprintf(stderr, "privnotes %s: the interpreter process was %s; %s\n", name, what, lostState(name))
		return exitCrashed, nil
	}
	if kind := filter.crash(); kind != "" {
		fmt.Fprintf(stderr, "privnotes %s: the interpreter process crashed: %s; its crash report is withheld because it may show private data; %s\n", name, kind, lostState(name))
		return exitCrashed, nil
	}
	return ee.ExitCode(), nil
}

func lostState(name string) string {
	if name == "repl" {
		return "the session's variables are lost (the ledger is unaffected; start a new session)"
	}
	return "the script did not finish (the ledger keeps what it charged)"
}

// fileFor returns an *os.File writing to w: w itself when it is a file,
// else the write end of a pipe copied to w until copyDone is closed.
func fileFor(w io.Writer) (f *os.File, copyDone chan struct{}, err error) {
	if f, ok := w.(*os.File); ok {
		return f, nil, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	copyDone = make(chan struct{})
	go func() {
		defer close(copyDone)
		defer r.Close()
		_, _ = io.Copy(w, r)
	}()
	return pw, copyDone, nil
}

// crashFilter receives the child's fd 2. Lines before a crash report are
// passed on; from the first line of a report on, nothing is, and only
// fixed markers are noted to name the kind of crash. The guard is
// stricter than the kernel, which shows a report whose trace passes
// through no private frame: it withholds every report, because the child
// runs with GOTRACEBACK=none, so most reports have no trace to judge by
// (the kernel withholds those too). Both find where a report starts with
// worker.ReportSplitter.
type crashFilter struct {
	out io.Writer

	mu       sync.Mutex
	lines    worker.ReportSplitter
	overflow bool
	oom      bool
	panicked bool
}

func (f *crashFilter) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines.Feed(b, f.take)
	return len(b), nil
}

func (f *crashFilter) take(line []byte, inReport bool) {
	if !inReport {
		_, _ = f.out.Write(line)
		return
	}
	switch {
	case bytes.HasPrefix(line, []byte("fatal error: stack overflow")):
		f.overflow = true
	case bytes.Contains(line, []byte("out of memory")):
		f.oom = true
	case bytes.HasPrefix(line, []byte("panic: ")):
		f.panicked = true
	}
}

// flush takes the last partial line once the child has exited.
func (f *crashFilter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines.Flush(f.take)
}

// crash names the crash the report showed, in fixed words, or "" if there
// was no report.
func (f *crashFilter) crash() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.lines.InReport():
		return ""
	case f.overflow:
		return fmt.Sprintf("stack overflow (a recursion deeper than the %d MiB stack limit)", worker.MaxStack>>20)
	case f.oom:
		return "out of memory"
	case f.panicked:
		return "a panic outside the cell's own code (in a goroutine)"
	}
	return "a fatal error of the Go runtime"
}
