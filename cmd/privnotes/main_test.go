package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDispatchUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"no-such-command"}, &out, &errb); code != 2 {
		t.Fatalf("exit status %d, want 2", code)
	}
	if !strings.Contains(errb.String(), `unknown command "no-such-command"`) {
		t.Fatalf("stderr does not name the unknown command: %q", errb.String())
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"help"}, &out, &errb); code != 0 {
		t.Fatalf("help exit status %d", code)
	}
	for name := range commands {
		if !strings.Contains(out.String(), name) {
			t.Errorf("help does not list %q", name)
		}
	}
}

// TestHelpFormat: every command answers -h alike: status 0 and "Usage:
// privnotes COMMAND", never the flag package's "Usage of NAME:".
func TestHelpFormat(t *testing.T) {
	var cmds [][]string
	for name := range commands {
		switch name {
		case "dataset":
			cmds = append(cmds, []string{"dataset", "add"}, []string{"dataset", "list"}, []string{"dataset", "show"})
		case "ledger":
			cmds = append(cmds, []string{"ledger", "show"}, []string{"ledger", "export"}, []string{"ledger", "verify"})
		case "notebook":
			cmds = append(cmds, []string{"notebook"}, []string{"notebook", "verify"}, []string{"notebook", "receipts"})
		default:
			cmds = append(cmds, []string{name})
		}
	}
	for _, c := range cmds {
		var out, errb bytes.Buffer
		code := dispatch(append(c, "-h"), &out, &errb)
		help := out.String() + errb.String()
		want := "Usage: privnotes " + strings.Join(c, " ")
		if code != 0 || !strings.HasPrefix(help, want) || strings.Contains(help, "Usage of") {
			t.Errorf("%v -h: status %d, help %.80q…; want status 0 and %q", c, code, help, want)
		}
	}
	var out, errb bytes.Buffer
	dispatch([]string{"install", "-h"}, &out, &errb)
	if !strings.Contains(errb.String(), "PRIVNOTES_STATE") {
		t.Errorf("install -h does not say which state directory the kernel uses:\n%s", errb.String())
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runCLI(args...)
		if code != 0 || !strings.HasPrefix(out, "privnotes ") || !strings.Contains(out, "go1.") {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	if code, _, _ := runCLI("version", "extra"); code != 2 {
		t.Errorf("version with arguments: exit %d, want 2", code)
	}
}
