package ledger

// The state directory: where state.db lives, resolved from --state,
// $PRIVNOTES_STATE or the XDG data directory.

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvState is the environment variable naming the state directory.
const EnvState = "PRIVNOTES_STATE"

// ResolveStateDir resolves the state directory without creating it:
// flagValue (from --state) if set, else $PRIVNOTES_STATE, else
// $XDG_DATA_HOME/privnotes, else ~/.local/share/privnotes. It returns an
// absolute path. Read-only commands use it with OpenExisting, so that a
// mistyped directory is reported instead of audited as an empty ledger.
func ResolveStateDir(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = os.Getenv(EnvState)
	}
	if dir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state directory %q: %w", dir, err)
	}
	return abs, nil
}

// DefaultStateDir is the state directory used when neither --state nor
// $PRIVNOTES_STATE names one: $XDG_DATA_HOME/privnotes, else
// ~/.local/share/privnotes.
func DefaultStateDir() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "privnotes"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: give --state DIR or set %s (%v)", EnvState, err)
	}
	return filepath.Join(home, ".local", "share", "privnotes"), nil
}

// StateDir resolves the state directory like ResolveStateDir and creates
// it (mode 0700) if needed; it is for the commands that may create state
// (registering data, running cells).
func StateDir(flagValue string) (string, error) {
	abs, err := ResolveStateDir(flagValue)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("creating state directory: %w", err)
	}
	return abs, nil
}
