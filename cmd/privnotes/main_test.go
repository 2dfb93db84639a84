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
