package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpPrintsPlainly: the pager's help (NAME?, %help NAME), which the
// Jupyter kernel sends as a "page" payload, is printed as plain text on
// stdout by the REPL and by privnotes run, with nothing on stderr.
func TestHelpPrintsPlainly(t *testing.T) {
	const want = "private_pca(ds, k=1, eps=<float>"
	for _, code := range []string{"private_pca?", "%help private_pca", "?private_pca"} {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		if st := runScript([]string{"-", "--state", dir}, strings.NewReader(code+"\n"), &out, &errb); st != 0 || errb.Len() != 0 {
			t.Errorf("run %q: status %d, stderr %q", code, st, errb.String())
		}
		if !strings.HasPrefix(out.String(), want) || strings.Contains(out.String(), "\x1b[") {
			t.Errorf("run %q: stdout %q, want plain text starting %q", code, out.String(), want)
		}
		out.Reset()
		errb.Reset()
		if st := runRepl([]string{"--state", dir}, strings.NewReader(code+"\nx := 2\nx\n"), &out, &errb); st != 0 || errb.Len() != 0 {
			t.Errorf("repl %q: status %d, stderr %q", code, st, errb.String())
		}
		if !strings.HasPrefix(out.String(), want) || !strings.HasSuffix(out.String(), "\n2\n") {
			t.Errorf("repl %q: stdout %q", code, out.String())
		}
	}
}

// TestStateDirectoryInBannersOnly: the REPL's banner names the state
// directory (TestInteractiveReplOnATerminal runs it on a terminal);
// %datasets does not, since a cell may not learn the path (threat model,
// escape 1), and says where to find it instead.
func TestStateDirectoryInBannersOnly(t *testing.T) {
	if b := replBanner("/x/state"); !strings.Contains(b, "\nState directory: /x/state (") {
		t.Errorf("REPL banner %q", b)
	}
	empty := t.TempDir()
	registered, _ := registeredState(t)
	for dir, want := range map[string]string{
		empty:      "no datasets are registered in this state directory (its path is in the kernel's or the REPL's banner; ",
		registered: "NAME",
	} {
		var out, errb bytes.Buffer
		if st := runScript([]string{"-", "--state", dir}, strings.NewReader("%datasets\n"), &out, &errb); st != 0 {
			t.Errorf("%%datasets in %s: status %d, stderr %q", dir, st, errb.String())
		}
		if !strings.Contains(out.String(), want) || strings.Contains(out.String(), dir) {
			t.Errorf("%%datasets in %s:\n%s\nwant %q and not the path", dir, out.String(), want)
		}
	}
}
