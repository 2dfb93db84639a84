package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// TestCellCommandsRefuseMissingState: repl and run given a state
// directory that does not exist (a typo in --state or $PRIVNOTES_STATE)
// refuse it with status 1, name the directory and what to do, and create
// nothing; before, they made an empty state and the script failed later
// with DatasetError. An existing directory, even empty, is accepted (mkdir
// is how to ask for a new state), and so is a registered one.
func TestCellCommandsRefuseMissingState(t *testing.T) {
	// A test that gave --servers may have left them in the environment
	// (apply sets it), where they would exempt the local state.
	t.Setenv(envServers, "")
	registered, _ := registeredState(t)
	empty := t.TempDir()
	typo := filepath.Join(t.TempDir(), "stat")
	script := filepath.Join(t.TempDir(), "a.pn")
	if err := os.WriteFile(script, []byte("fmt.Println(\"ran\")\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type command func([]string, *bytes.Buffer, *bytes.Buffer) int
	commands := map[string]command{
		"run": func(args []string, out, errb *bytes.Buffer) int {
			return runScript(append([]string{script}, args...), nil, out, errb)
		},
		"repl": func(args []string, out, errb *bytes.Buffer) int {
			return runRepl(append([]string{"--history", "off"}, args...), strings.NewReader("fmt.Println(\"ran\")\n"), out, errb)
		},
	}
	tests := []struct {
		name string
		flag string // --state
		env  string // $PRIVNOTES_STATE
		code int
		want string // on stderr (refused) or stdout (ran)
	}{
		{"typo in --state", typo, "", 1, "no privnotes state in " + typo + " (from --state): the directory does not exist; check the name, register data there with `privnotes dataset add NAME --state " + typo + " ...`, or create it (mkdir -p " + typo + ")"},
		{"typo in $PRIVNOTES_STATE", "", typo, 1, "no privnotes state in " + typo + " (from $PRIVNOTES_STATE)"},
		{"registered", registered, "", 0, "ran\n"},
		{"empty directory asked for", empty, "", 0, "ran\n"},
		{"registered from the environment", "", registered, 0, "ran\n"},
	}
	for cmd, run := range commands {
		for _, tt := range tests {
			t.Run(cmd+"/"+tt.name, func(t *testing.T) {
				t.Setenv(ledger.EnvState, tt.env)
				var args []string
				if tt.flag != "" {
					args = []string{"--state", tt.flag}
				}
				var out, errb bytes.Buffer
				code := run(args, &out, &errb)
				got := out.String()
				if tt.code != 0 {
					got = errb.String()
				}
				if code != tt.code || !strings.Contains(got, tt.want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out.String(), errb.String(), tt.code, tt.want)
				}
				if _, err := os.Stat(typo); err == nil {
					t.Fatalf("%s created the mistyped state directory %s", cmd, typo)
				}
			})
		}
	}
}

// TestScriptCellIsAbsolute: the ledger's "cell" of a script's charge is
// the script's absolute path, not the relative one typed (which names no
// file once the ledger is read from elsewhere).
func TestScriptCellIsAbsolute(t *testing.T) {
	state, _ := registeredState(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "count.pn"), []byte(`c := private_count(dataset("d"), eps=0.1, delta=1e-6)`+"\n_ = c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if code, _, errs := runCLI("run", "--state", state, "count.pn"); code != 0 {
		t.Fatal(errs)
	}
	_, out, _ := runCLI("ledger", "export", "--csv", "--state", state)
	if want := "," + filepath.Join(dir, "count.pn") + ":1"; !strings.Contains(out, want) {
		t.Errorf("ledger export:\n%s\nwant the cell %q", out, want)
	}
}
