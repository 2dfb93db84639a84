package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
)

// The shell steps of make demo (scripts/demo.sh), tested one by one with
// this test binary as privnotes: the whole demo takes minutes.

// privnotesScript writes an executable that runs this test binary as the
// privnotes binary (TestMain dispatches its arguments) and returns its path.
func privnotesScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "privnotes")
	script := "#!/bin/sh\n" + cellChildEnv + "=1 exec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// shell runs a script of the repository with sh and returns its status,
// stdout and stderr.
func shell(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("sh", args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

const demoState = "../../scripts/demo_state.sh"

// TestDemoStateStep: a rerun of make demo deletes the state directory only
// when it holds exactly what the previous demo run left (before, it always
// did, with the user's registrations and the ledger of every budget they
// spent). Anything else, a registration, a charge, a cell run in the demo
// kernel, a file of the user's, or a state the demo did not make, keeps the
// directory and its ledger as they are.
func TestDemoStateStep(t *testing.T) {
	testtier.Long(t)
	bin := privnotesScript(t)
	tests := []struct {
		name   string
		change func(t *testing.T, state string) // after the demo's run
		want   string
		why    string // on stderr
	}{
		{"missing", nil, "fresh", "does not exist"},
		{"only the demo's", func(*testing.T, string) {}, "reset", "held only the previous demo run's datasets and ledger"},
		{"a dataset of the user's", func(t *testing.T, state string) {
			csv := writeCSV(t, t.TempDir(), "mine.csv", "a,b\n1,2\n3,4\n")
			if code, _, errs := runCLI("dataset", "add", "mine", "--from", csv, "--eps", "1", "--delta", "1e-6", "--state", state); code != 0 {
				t.Fatal(errs)
			}
		}, "kept", "its ledger records registrations or charges the demo did not make"},
		{"a charge of the user's", func(t *testing.T, state string) {
			script := filepath.Join(t.TempDir(), "count.pn")
			os.WriteFile(script, []byte(`c := private_count(dataset("d"), eps=0.1, delta=1e-6)`+"\n_ = c\n"), 0o600)
			if code, _, errs := runCLI("run", "--state", state, script); code != 0 {
				t.Fatal(errs)
			}
		}, "kept", "its ledger records registrations or charges the demo did not make"},
		{"a cell in the demo kernel", func(t *testing.T, state string) {
			appendFile(t, filepath.Join(state, "kernel-history.jsonl"), `{"code":"1 + 1"}`+"\n")
		}, "kept", "cells ran in the demo kernel since"},
		{"a file of the user's", func(t *testing.T, state string) {
			appendFile(t, filepath.Join(state, "notes.txt"), "mine\n")
		}, "kept", "notes.txt, which the demo did not write"},
		{"not made by the demo", func(t *testing.T, state string) {
			os.Remove(filepath.Join(state, ".privnotes-demo"))
		}, "kept", "it was not made by this demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "demo-state")
			var before string
			if tt.change != nil {
				// The demo's run: its registration, a charge of its
				// notebook and the kernel's history, then record.
				registered, _ := registeredState(t)
				if err := os.Rename(registered, state); err != nil {
					t.Fatal(err)
				}
				script := filepath.Join(t.TempDir(), "nb.pn")
				os.WriteFile(script, []byte(`n := private_count(dataset("d"), eps=0.1, delta=1e-6, name="n")`+"\n_ = n\n"), 0o600)
				if code, _, errs := runCLI("run", "--state", state, script); code != 0 {
					t.Fatal(errs)
				}
				appendFile(t, filepath.Join(state, "kernel-history.jsonl"), `{"code":"%datasets"}`+"\n")
				if code, _, errs := shell(t, nil, demoState, "record", bin, state); code != 0 {
					t.Fatalf("record: exit %d: %s", code, errs)
				}
				tt.change(t, state)
				_, before, _ = runCLI("ledger", "export", "--json", "--state", state)
			}
			code, out, errs := shell(t, nil, demoState, "prepare", bin, state)
			if code != 0 || out != tt.want+"\n" || !strings.Contains(errs, tt.why) {
				t.Fatalf("prepare: exit %d, stdout %q, stderr %q; want %q and %q", code, out, errs, tt.want, tt.why)
			}
			_, err := os.Stat(state)
			switch {
			case tt.want != "kept" && err == nil:
				t.Errorf("%s left %s", tt.want, state)
			case tt.want == "kept":
				if _, after, _ := runCLI("ledger", "export", "--json", "--state", state); err != nil || after != before {
					t.Errorf("the kept state's ledger changed (stat %v)", err)
				}
				if !strings.Contains(errs, "mv "+state+" "+state+"-") {
					t.Errorf("the note does not say how to start afresh: %s", errs)
				}
			}
		})
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestRegisterDatasetsAgain: the demo's registration step registers only
// the datasets a kept state lacks (before, a second run failed on "already
// registered"), and every registration records a source that exists
// (before, spiked_matrix recorded a temporary file deleted at once).
func TestRegisterDatasetsAgain(t *testing.T) {
	testtier.Long(t) // registers the three demo datasets
	bin := privnotesScript(t)
	dir := t.TempDir()
	state, sources := filepath.Join(dir, "state"), filepath.Join(dir, "sources")
	for run, want := range []string{"", "already registered"} {
		code, out, errs := shell(t, nil, "../../notebooks/scripts/register_datasets.sh", bin, state, sources)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("run %d: exit %d\n%s%s", run+1, code, out, errs)
		}
	}
	for _, name := range []string{"breast_cancer", "wine", "spiked_matrix"} {
		_, out, _ := runCLI("dataset", "show", name, "--owner", "--state", state) // the source is an owner-only fact
		m := regexp.MustCompile(`(?m)^\s*source\s+(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("dataset show %s names no source:\n%s", name, out)
		}
		if _, err := os.Stat(m[1]); err != nil || !filepath.IsAbs(m[1]) {
			t.Errorf("%s: recorded source %s: %v (want an absolute path that exists)", name, m[1], err)
		}
	}
}

// TestDemoChecksCompiler: make demo stops at once, naming the package to
// install, when Go has no C compiler for cgo (DuckDB), instead of after
// minutes of building. The fake go answers go env only; a fake apt-get
// fails, so that nothing is installed whatever the script tries.
func TestDemoChecksCompiler(t *testing.T) {
	stubs := t.TempDir()
	built := filepath.Join(stubs, "built")
	goStub := "#!/bin/sh\ncase \"$1 $2\" in\n\"env CC\") echo no-such-cc ;;\n\"env CGO_ENABLED\") echo 1 ;;\nversion) echo go version stub ;;\nbuild*) touch '" + built + "' ;;\nesac\n"
	os.WriteFile(filepath.Join(stubs, "go"), []byte(goStub), 0o700)
	os.WriteFile(filepath.Join(stubs, "apt-get"), []byte("#!/bin/sh\nexit 1\n"), 0o700)
	code, out, errs := shell(t, []string{"GO=" + filepath.Join(stubs, "go"), "PY=" + filepath.Join(stubs, "no-python"), "PATH=" + stubs + ":" + os.Getenv("PATH")},
		"../../scripts/demo.sh")
	if code != 1 || !strings.Contains(errs, "building privnotes needs cgo and a C compiler (no-such-cc, for DuckDB)") || !strings.Contains(errs, "apt-get install gcc") {
		t.Errorf("exit %d\nstdout %s\nstderr %s\nwant exit 1 and the compiler named", code, out, errs)
	}
	if _, err := os.Stat(built); err == nil {
		t.Error("the demo built privnotes without a C compiler")
	}
}
