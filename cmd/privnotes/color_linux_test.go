package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
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
