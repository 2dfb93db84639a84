package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlags makes a command's flag set with the help format every command
// shares: "Usage: privnotes SYNOPSIS", what the command does, its flags.
// Help and flag errors go to stderr, like the flag package's.
func newFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("privnotes "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: privnotes %s\n", synopsis)
		if about != "" {
			fmt.Fprintf(stderr, "\n%s\n", about)
		}
		n := 0
		fs.VisitAll(func(f *flag.Flag) {
			if !withdrawn(f) {
				n++
			}
		})
		if n > 0 {
			fmt.Fprintln(stderr, "\nFlags:")
			printFlags(stderr, fs)
		}
	}
	return fs
}

// withdrawnPrefix starts the usage of a flag that is no longer offered: it
// is still parsed, so that using it gets an error saying what to do
// instead, but help does not list it.
const withdrawnPrefix = "no longer offered"

func withdrawn(f *flag.Flag) bool { return strings.HasPrefix(f.Usage, withdrawnPrefix) }

// printFlags is flag.PrintDefaults with the flags written as the
// documentation and the error messages write them, --name (the flag
// package accepts both), and without the withdrawn ones.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if withdrawn(f) {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(unsetFloat); ok && arg == "value" {
			arg = "float"
		}
		var b strings.Builder
		b.WriteString("  --" + f.Name)
		if arg != "" {
			b.WriteString(" " + arg)
		}
		b.WriteString("\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch def := f.DefValue; {
		case def == "" || def == "false" || def == "0":
		case fmt.Sprintf("%T", f.Value) == "*flag.stringValue":
			fmt.Fprintf(&b, " (default %q)", def)
		default:
			fmt.Fprintf(&b, " (default %v)", def)
		}
		fmt.Fprintln(w, b.String())
	})
}

// parseFlags parses args; when it returns false, the command ends with
// code: 0 after -h (help was printed), 2 after a bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}
