package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
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
