package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/privnotes/privnotes/dsl/ledger"
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
	fs := newFlags("install", "install [--user | --prefix P | --sys-prefix] [--state DIR] [flags]", installAbout, stderr)
	var o kernelspec.Options
	fs.BoolVar(&o.User, "user", false, "install for the current user (the default): $JUPYTER_DATA_DIR or ~/.local/share/jupyter")
	fs.StringVar(&o.Prefix, "prefix", "", "install under `P`/share/jupyter (e.g. a virtualenv or /usr/local)")
	fs.BoolVar(&o.SysPrefix, "sys-prefix", false, "install under the sys.prefix of /usr/bin/python3")
	fs.StringVar(&o.Name, "name", "privnotes", "kernel spec `name` (directory under kernels/)")
	fs.StringVar(&o.DisplayName, "display-name", "Go (privnotes)", "name shown in the notebook's kernel menu")
	fs.StringVar(&o.StateDir, "state", "", "state `DIR` the kernel uses (sets PRIVNOTES_STATE in kernel.json)")
	binary := fs.String("binary", "", "privnotes binary the spec starts (default: this one)")
	var sf serverFlags
	sf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	env, err := sf.apply()
	if err != nil {
		fmt.Fprintf(stderr, "privnotes install: %v\n", err)
		return 2
	}
	o.Env = env
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
	if o.StateDir != "" {
		abs, _ := filepath.Abs(o.StateDir)
		fmt.Fprintf(stdout, "The kernel uses the state directory %s (PRIVNOTES_STATE in kernel.json).\n", abs)
		if _, err := os.Stat(filepath.Join(abs, ledger.DBName)); err != nil {
			fmt.Fprintf(stdout, "No data is registered there yet: privnotes dataset add NAME --state %s ...\n", abs)
		}
	} else {
		fmt.Fprintf(stdout, "The kernel uses $%s from the environment Jupyter starts it in, else %s\n(give --state DIR to fix one).\n", ledger.EnvState, defaultStateDir())
	}
	return 0
}

const installAbout = `Writes the Jupyter kernel spec (kernel.json) that starts "privnotes kernel";
no jupyter command is needed. The kernel reads datasets and the ledger from
the state directory --state DIR when given (written into kernel.json as
PRIVNOTES_STATE); otherwise from $PRIVNOTES_STATE in the environment Jupyter
starts the kernel in, else $XDG_DATA_HOME/privnotes, else
~/.local/share/privnotes, decided when the kernel starts.`

// defaultStateDir is the state directory a kernel started without
// PRIVNOTES_STATE would use, for messages.
func defaultStateDir() string {
	dir, err := ledger.DefaultStateDir()
	if err != nil {
		return "~/.local/share/privnotes"
	}
	return dir
}
