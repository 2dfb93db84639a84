package worker

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/privnotes/privnotes/dsl/engine"
)

// MaxStack is the stack limit of the worker's goroutines. Runaway
// recursion then dies in about 0.3 s instead of growing to 1 GB over
// several seconds (measured in the yaegi probe); a depth of 10⁵
// interpreted calls still fits.
const MaxStack = 64 << 20

// Main is the body of "privnotes worker": it checks that it was started by
// a Supervisor (fd 3 and 4 are pipes), creates the engine and serves it.
// It returns the process exit status.
func Main(newEngine func() (engine.Engine, error)) int {
	in, out := os.NewFile(3, "from-kernel"), os.NewFile(4, "to-kernel")
	if in == nil || out == nil || !isPipe(in) || !isPipe(out) {
		fmt.Fprintln(os.Stderr, "privnotes worker: file descriptors 3 and 4 are not pipes; the worker is started by \"privnotes kernel\", not by hand")
		return 2
	}
	debug.SetMaxStack(MaxStack)
	// The kernel turns Ctrl-C into an interrupt message; a stray SIGINT must
	// not kill the variables.
	signal.Ignore(syscall.SIGINT)
	eng, err := newEngine()
	if err != nil {
		ServeFatal(out, err)
		return 1
	}
	if err := Serve(context.Background(), in, out, eng); err != nil {
		fmt.Fprintf(os.Stderr, "privnotes worker: %v\n", err)
		return 1
	}
	return 0
}

func isPipe(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}
