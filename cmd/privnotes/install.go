package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/privnotes/privnotes/kernel/kernelspec"
)

func init() {
	register(&command{
		name:    "install",
		summary: "install the Jupyter kernel spec (no jupyter command needed)",
		run:     runInstall,
	})
}

func runInstall(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o kernelspec.Options
	fs.BoolVar(&o.User, "user", false, "install for the current user (the default): $JUPYTER_DATA_DIR or ~/.local/share/jupyter")
	fs.StringVar(&o.Prefix, "prefix", "", "install under `P`/share/jupyter (e.g. a virtualenv or /usr/local)")
	fs.BoolVar(&o.SysPrefix, "sys-prefix", false, "install under the sys.prefix of /usr/bin/python3")
	fs.StringVar(&o.Name, "name", "privnotes", "kernel spec `name` (directory under kernels/)")
	fs.StringVar(&o.DisplayName, "display-name", "Go (privnotes)", "name shown in the notebook's kernel menu")
	fs.StringVar(&o.StateDir, "state", "", "state `DIR` the kernel uses (sets PRIVNOTES_STATE in kernel.json)")
	binary := fs.String("binary", "", "privnotes binary the spec starts (default: this one)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "privnotes install: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	o.Binary = *binary
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "privnotes install: cannot find this binary (use --binary): %v\n", err)
			return 1
		}
		o.Binary = exe
	}
	abs, err := filepath.Abs(o.Binary)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes install: %v\n", err)
		return 1
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	o.Binary = abs
	dir, err := kernelspec.Install(o)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes install: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Installed kernel spec %q in %s\n", o.Name, dir)
	return 0
}
