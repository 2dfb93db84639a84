package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/privnotes/privnotes/dsl/engine"
)

func init() {
	register(&command{
		name:    "run",
		summary: "run a privnotes script (Go plus the privacy DSL)",
		run: func(args []string, stdout, stderr io.Writer) int {
			return guarded("run", runScript, args, os.Stdin, stdout, stderr)
		},
	})
}

// Exit statuses of "privnotes run".
const (
	exitError   = 1 // a compile or run-time error, or a bad script file
	exitUsage   = 2 // bad flags or arguments
	exitRefused = 3 // the budget tracker refused the script before it ran
	// exitCrashed (4, crashguard.go): the interpreter process died
	exitInterrupted = 130 // Ctrl-C
)

// runScript runs FILE as ONE cell: the budget tracker's pre-check sees the
// whole script, so a script that would overspend is refused before any of
// its statements run, and error positions are the file's lines. "-" reads
// the script from stdin. Unlike a cell, a script shows the value of every
// top-level bare expression, in order (engine.ExecuteRequest.Transcript):
// a private call on a middle line was charged, so its result must not be
// dropped.
func runScript(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("run", "run FILE [--state DIR] [--images DIR] [--out DIR]", `Runs FILE (Go plus the privacy DSL; - for stdin) as one cell: a script whose
static budget check fails is refused before anything runs. The value of every
top-level bare expression is shown, in order (a notebook cell shows only its
last); download(res, NAME) writes NAME into --out DIR.
Exit status: 0 ok, 1 error (also a download that could not be written),
2 usage, 3 refused by the budget tracker, 4 crashed (stack overflow, out of
memory: the crash report is withheld), 130 interrupted.`, stderr)
	var cf cellFlags
	cf.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "privnotes run: give exactly one script FILE (or - for stdin)")
		return exitUsage
	}
	file := pos[0]
	var src []byte
	if file == "-" {
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "privnotes run: %v\n", err)
		return exitError
	}
	if _, err := cf.servers.apply(); err != nil {
		fmt.Fprintf(stderr, "privnotes run: %v\n", err)
		return exitUsage
	}
	dir, err := cellStateDir(cf.state)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes run: %v\n", err)
		return exitError
	}
	eng, err := newCellEngine(dir)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes run: %v\n", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := cf.textOutput(stdout, stderr)
	res := eng.Execute(ctx, engine.ExecuteRequest{Code: string(src), StoreHistory: true, CellID: scriptCell(file), ExecutionCount: 1, Transcript: true}, out)
	out.finish()
	if res.Value != nil {
		out.show(*res.Value)
	}
	if res.Error == nil {
		if out.unwrittenFiles() > 0 {
			// Said on stderr as it happened; the status lets a caller
			// (a Makefile, CI) see that a result is missing.
			return exitError
		}
		return 0
	}
	fmt.Fprintf(stderr, "%s: ", file)
	switch res.Error.Name {
	case "BudgetExceeded", "Refused":
		printError(stderr, res.Error)
		return exitRefused
	case "Interrupted":
		// The engine's message speaks of a session's variables, which a
		// script does not have.
		fmt.Fprintln(stderr, "Interrupted: the script was stopped; what it charged before the interrupt stays in the ledger")
		return exitInterrupted
	}
	printError(stderr, res.Error)
	return exitError
}
