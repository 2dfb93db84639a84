package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/internal/testtier"
)

// openPty opens a pseudo-terminal pair: what is written to the returned
// terminal can be read from master.
func openPty(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("the terminal tests need a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pseudo-terminal number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// onTerminal runs f with a terminal as its stderr and returns what f
// wrote there.
func onTerminal(t *testing.T, f func(stderr *os.File)) string {
	t.Helper()
	master, term := openPty(t)
	got := make(chan string)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			// the terminal's end of file: its other side was closed
			if err != nil || bytes.Contains(b.Bytes(), []byte("\x04end")) {
				break
			}
		}
		got <- b.String()
	}()
	f(term)
	io.WriteString(term, "\x04end")
	return <-got
}

// TestTracebackColours: the REPL colours a traceback when its stderr is a
// terminal, and not when it is redirected or NO_COLOR is set; privnotes run
// never colours, not even on a terminal.
func TestTracebackColours(t *testing.T) {
	const cell = "var xs []int\n_ = xs[3]\n"
	const red = "\x1b[1;31mRuntimeError\x1b[0m"
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")

	tty := onTerminal(t, func(stderr *os.File) {
		runRepl([]string{"--state", t.TempDir()}, strings.NewReader(cell), io.Discard, stderr)
	})
	if !strings.Contains(tty, red+": panic: ") || !strings.Contains(tty, "\x1b[0;32mcell line 1:5\x1b[0m") {
		t.Errorf("repl on a terminal: no coloured traceback in %q", tty)
	}
	var errb bytes.Buffer
	runRepl([]string{"--state", t.TempDir()}, strings.NewReader(cell), io.Discard, &errb)
	if !strings.Contains(errb.String(), "RuntimeError: panic: ") || strings.Contains(errb.String(), "\x1b") {
		t.Errorf("repl redirected: %q, want the plain traceback", errb.String())
	}
	t.Setenv("NO_COLOR", "1")
	tty = onTerminal(t, func(stderr *os.File) {
		runRepl([]string{"--state", t.TempDir()}, strings.NewReader(cell), io.Discard, stderr)
	})
	if !strings.Contains(tty, "RuntimeError: panic: ") || strings.Contains(tty, "\x1b") {
		t.Errorf("repl with NO_COLOR: %q, want the plain traceback", tty)
	}
	t.Setenv("NO_COLOR", "")
	tty = onTerminal(t, func(stderr *os.File) {
		runScript([]string{"-", "--state", t.TempDir()}, strings.NewReader(cell), io.Discard, stderr)
	})
	if !strings.Contains(tty, "RuntimeError: panic: ") || strings.Contains(tty, "\x1b") {
		t.Errorf("run on a terminal: %q, want the plain traceback", tty)
	}
}

// ptyRepl is "privnotes repl" (this test binary as the cell process)
// running on a pseudo-terminal of 100 columns, typed at as a user does.
type ptyRepl struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	seen   int // output up to here has been matched by expect
	read   chan struct{}
}

// startPtyRepl starts the REPL on a new pseudo-terminal with state
// directory state.
func startPtyRepl(t *testing.T, state string) *ptyRepl {
	t.Helper()
	master, term := openPty(t)
	// A real terminal has a size; the line editor lays out completions
	// by it (and with 0 columns it divides by zero).
	ws := [4]uint16{24, 100, 0, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, term.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		t.Fatalf("set the terminal's size: %v", e)
	}
	cmd := exec.Command(os.Args[0], "repl", "--state", state, "--history", "off")
	cmd.Env = append(os.Environ(), cellChildEnv+"=1", "TERM=xterm", "NO_COLOR=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	cmd.ExtraFiles = []*os.File{term} // the cell process's error output (see guarded)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close() // the child holds it; reads of master end when it exits
	p := &ptyRepl{t: t, cmd: cmd, master: master, read: make(chan struct{})}
	go func() {
		defer close(p.read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return p
}

func (p *ptyRepl) written() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// expect waits until s appears in the output after what earlier expects
// matched. Type only after a prompt was expected, as a user does: the
// line editor reads in raw mode only then (a Ctrl-D typed earlier is
// eaten by the cooked mode).
func (p *ptyRepl) expect(s string) {
	p.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		out := p.written()
		if i := strings.Index(out[p.seen:], s); i >= 0 {
			p.seen += i + len(s)
			return
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Kill()
			p.t.Fatalf("no %q within a minute; the REPL wrote %q", s, out[p.seen:])
		}
	}
}

func (p *ptyRepl) typeText(s string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the REPL to exit and returns its error (nil: status 0).
func (p *ptyRepl) wait() error {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		<-p.read
		return err
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		p.t.Fatalf("the REPL did not end within a minute; it wrote %q", p.written()[p.seen:])
		return nil
	}
}

// TestInteractiveReplOnATerminal runs "privnotes repl" on a
// pseudo-terminal, as a user does: the banner names the state directory,
// and a failing cell's traceback is coloured.
func TestInteractiveReplOnATerminal(t *testing.T) {
	testtier.Integration(t)
	state := t.TempDir() // it must exist: repl refuses a missing state directory
	p := startPtyRepl(t, state)
	p.expect("[1]> ")
	p.typeText("var xs []int; _ = xs[3]\r")
	p.expect("[2]> ")
	p.typeText("\x04")
	if err := p.wait(); err != nil {
		t.Errorf("repl: %v", err)
	}
	got := p.written()
	if !strings.Contains(got, "State directory: "+state+" (") {
		t.Errorf("the banner does not name the state directory %s: %q", state, got)
	}
	if !strings.Contains(got, "\x1b[1;31mRuntimeError\x1b[0m: panic: runtime error: index out of range [3] with length 0") {
		t.Errorf("no coloured traceback: %q", got)
	}
}

// TestReplForAPythonUser types what a Python user types at the REPL on
// a terminal: Tab completes a dataset's name in dataset("…, a keyword
// inside a DSL call (only the keywords, so one Tab completes "col" to
// "col=", where "co" is also consistent=), and a column name in col="…; help and ? show the help (and how
// to leave), and exit leaves, with status 0.
func TestReplForAPythonUser(t *testing.T) {
	testtier.Integration(t)
	state, _ := registeredState(t) // dataset "d", columns a and b
	p := startPtyRepl(t, state)
	p.expect("[1]> ")
	p.typeText(`d := dataset("` + "\t")
	p.expect(`d := dataset("d`)
	p.typeText("\")\r")
	p.expect("[2]> ")
	p.typeText("private_sum(d, col\t")
	p.expect("private_sum(d, col=")
	p.typeText(`"` + "\t\t")
	p.expect("a b")
	p.typeText("\x03") // Ctrl-C: discard the line
	p.expect("[2]> ")
	p.typeText("help\r")
	p.expect("privnotes DSL functions")
	p.expect("exit, quit() or Ctrl-D leaves the REPL")
	p.expect("[3]> ")
	p.typeText("?\r")
	p.expect("privnotes DSL functions")
	p.expect("[4]> ")
	p.typeText("exit\r")
	if err := p.wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	for _, bad := range []string{"Error", "undefined"} {
		if strings.Contains(p.written(), bad) {
			t.Errorf("the session shows %q: %q", bad, p.written())
		}
	}
}

// TestProgressLine: a computation's progress goes to stderr, not stdout:
// redrawn in place on a terminal (ended by a newline, also before other
// output), one line per tenth of the steps when stderr is a file or pipe.
func TestProgressLine(t *testing.T) {
	steps := func(o *textOutput, total int) {
		for i := 1; i <= total; i++ {
			o.Display(engine.ProgressDisplay("p", engine.Progress{Label: "private_pca (npm)", Done: i, Total: total}, i > 1))
		}
	}
	var out, errb bytes.Buffer
	o := newTextOutput(&out, &errb, "")
	steps(o, 100)
	o.finish()
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if out.Len() != 0 || len(lines) != 11 || lines[0] != "private_pca (npm): step 1 of 100" || lines[10] != "private_pca (npm): step 100 of 100" {
		t.Errorf("redirected: stdout %q, stderr lines %q", out.String(), lines)
	}

	tty := onTerminal(t, func(stderr *os.File) {
		o := newTextOutput(io.Discard, stderr, "")
		steps(o, 2)
		o.Display(engine.ProgressDisplay("q", engine.Progress{Label: "oja", Done: 1, Total: 5}, false))
		o.Stream("stderr", "warning\n")
		o.finish()
	})
	want := "\r\x1b[Kprivate_pca (npm): step 1 of 2\r\x1b[Kprivate_pca (npm): step 2 of 2\r\n\r\x1b[Koja: step 1 of 5\r\nwarning\r\n"
	if !strings.HasPrefix(tty, want) {
		t.Errorf("terminal:\n got %q\nwant %q", tty, want)
	}
}
