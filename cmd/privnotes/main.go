// Command privnotes is a Jupyter kernel, an interactive REPL and a script
// runner for differentially private analysis.
//
// Usage:
//
//	privnotes <command> [flags] [arguments]
//
// Run "privnotes help" for the list of commands. Each command lives in its
// own file of this package and registers itself in init.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// A command is one subcommand of the privnotes binary.
type command struct {
	name    string
	summary string // one line for "privnotes help"
	// run executes the command with the arguments after its name and
	// returns the process exit status.
	run func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]*command{}

// register adds c to the command table; it panics on a duplicate name
// because that is a programming error caught by any test run.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("privnotes: duplicate command " + c.name)
	}
	commands[c.name] = c
}

func main() {
	code := dispatch(os.Args[1:], os.Stdout, os.Stderr)
	closeDataEngine() // its open readers and tables (dataset_snapshot.go)
	os.Exit(code)
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "privnotes: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "privnotes: differentially private analysis in Go notebooks\n\nUsage: privnotes <command> [flags] [arguments]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"privnotes <command> -h\" for the flags of a command.")
}
