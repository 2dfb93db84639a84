package main

import (
	"fmt"
	"io"
	"os"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/worker"
)

// newWorkerEngine creates the engine the worker serves; worker_interp.go
// sets it to the Go interpreter, worker_fake.go (build tag fakeengine, for
// tests of the kernel only) to a scripted fake.
var newWorkerEngine func(stateDir string) (engine.Engine, error)

func init() {
	register(&command{
		name:    "worker",
		summary: "run cells for a kernel (started by \"privnotes kernel\", not by hand)",
		run:     runWorker,
	})
}

func runWorker(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("worker", "worker [--state DIR]",
		`Runs cells for a kernel over file descriptors 3 and 4; "privnotes kernel"
starts it, not a person.`, stderr)
	state := fs.String("state", os.Getenv("PRIVNOTES_STATE"), "state `DIR` (datasets and ledger; default $PRIVNOTES_STATE, else ~/.local/share/privnotes)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if newWorkerEngine == nil {
		fmt.Fprintln(stderr, "privnotes worker: this binary has no language engine linked")
		return 1
	}
	return worker.Main(func() (engine.Engine, error) { return newWorkerEngine(*state) })
}
