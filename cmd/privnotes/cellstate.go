package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// cellStateDir resolves the state directory of repl and run. A directory
// named by --state or $PRIVNOTES_STATE must exist: a mistyped name would
// otherwise become a new, empty state, and every dataset() of the session
// would fail with DatasetError far from the typo (the reading commands
// refuse it the same way, openStateErr). An existing directory, even an
// empty one, is taken as asked for (mkdir is how to ask for a new state),
// and the default directory is created on first use, as before: it cannot
// be mistyped. Analysts of remote data servers (--servers, which apply()
// has put into the environment by now) may have no local state at all.
func cellStateDir(flagValue string) (string, error) {
	named := flagValue != "" || os.Getenv(ledger.EnvState) != ""
	if !named || os.Getenv(envServers) != "" {
		return ledger.StateDir(flagValue)
	}
	dir, err := ledger.ResolveStateDir(flagValue)
	if err != nil {
		return "", err
	}
	from := "--state"
	if flagValue == "" {
		from = "$" + ledger.EnvState
	}
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no privnotes state in %s (from %s): the directory does not exist; check the name, register data there with `privnotes dataset add NAME --state %s ...`, or create it (mkdir -p %s) to start a session without datasets", dir, from, dir, dir)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named already
		}
		return "", fmt.Errorf("state directory %s (from %s): %w; give a directory that holds privnotes state, or one to create with mkdir -p", dir, from, err)
	case !fi.IsDir():
		return "", fmt.Errorf("state directory %s (from %s) is not a directory; give the directory that holds state.db", dir, from)
	}
	return dir, nil
}

// scriptCell is the ledger's "cell" of a script run by privnotes run: its
// absolute path and line 1, so that a charge names the script whatever
// directory it was run from (a path as typed, "a.pn", names none).
// Standard input ("-") stays "-:1".
func scriptCell(file string) string {
	if file != "-" {
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
	}
	return file + ":1"
}
