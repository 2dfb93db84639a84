package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the version, the VCS revision and the Go version of this binary",
		run: func(args []string, stdout, stderr io.Writer) int {
			fs := newFlags("version", "version", "Prints the version, the VCS revision and the Go version of this binary (also: privnotes --version).", stderr)
			if err := fs.Parse(args); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return 0
				}
				return 2
			}
			if fs.NArg() > 0 {
				fmt.Fprintf(stderr, "privnotes version: unexpected arguments: %v\n", fs.Args())
				return 2
			}
			fmt.Fprintln(stdout, versionLine())
			return 0
		},
	})
}

// versionLine is the module version (or the build's version variable), the
// VCS revision and time the binary was built from, and the Go version,
// from the build information the Go toolchain embeds.
func versionLine() string {
	v, rev, when, dirty, goVersion := version, "", "", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v = mv
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "privnotes " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " (" + rev
		if dirty {
			line += ", modified"
		}
		if when != "" {
			line += ", " + when
		}
		line += ")"
	}
	if goVersion != "" {
		line += " " + goVersion
	}
	return line
}
