package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelpWritesDoubleDashFlags: every command's -h lists its flags as
// the documentation and the error messages write them, --name (before,
// the flag package's -name), and dataset add's help no longer lists the
// withdrawn --center and --mean, which are still refused with a message.
func TestHelpWritesDoubleDashFlags(t *testing.T) {
	singleDash := regexp.MustCompile(`(?m)^  -[a-z]`)
	for _, c := range [][]string{
		{"dataset", "add"}, {"dataset", "list"}, {"dataset", "rm"}, {"ledger", "show"}, {"ledger", "export"},
		{"run"}, {"repl"}, {"install"}, {"kernel"}, {"serve"}, {"notebook", "verify"},
	} {
		code, out, errs := runCLI(append(c, "-h")...)
		help := out + errs
		if code != 0 || !strings.Contains(help, "\n  --") || singleDash.MatchString(help) {
			t.Errorf("%v -h: status %d, flags not written --name:\n%s", c, code, help)
		}
	}
	_, out, errs := runCLI("dataset", "add", "-h")
	for _, gone := range []string{"--center", "--mean"} {
		if strings.Contains(out+errs, gone) {
			t.Errorf("dataset add -h lists the withdrawn %s:\n%s", gone, out+errs)
		}
	}
	if code, _, errs := runCLI("dataset", "add", "d", "--from", "x.csv", "--eps", "1", "--delta", "1e-6", "--center", "public-mean", "--state", t.TempDir()); code != 2 || !strings.Contains(errs, "no longer offered") {
		t.Errorf("--center: exit %d, %q; want it refused as no longer offered", code, errs)
	}
}
