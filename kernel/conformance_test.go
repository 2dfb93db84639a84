package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
)

// conformanceSummary is the last line of testdata/conformance.py.
type conformanceSummary struct {
	Run                 int      `json:"run"`
	Passed              []string `json:"passed"`
	Failures            []string `json:"failures"`
	Errors              []string `json:"errors"`
	Skipped             []string `json:"skipped"`
	ExpectedFailures    []string `json:"expected_failures"`
	UnexpectedSuccesses []string `json:"unexpected_successes"`
	BaseTests           []string `json:"base_tests"`
	Version             string   `json:"jupyter_kernel_test"`
}

// parseConformance finds the summary line in the suite's output.
func parseConformance(out string) (*conformanceSummary, error) {
	const marker = "CONFORMANCE "
	i := strings.LastIndex(out, "\n"+marker)
	if i < 0 && strings.HasPrefix(out, marker) {
		i = -1
	} else if i < 0 {
		return nil, fmt.Errorf("no %q summary line", strings.TrimSpace(marker))
	}
	line, _, _ := strings.Cut(out[i+1+len(marker):], "\n")
	var s conformanceSummary
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		return nil, fmt.Errorf("summary line %q: %v", line, err)
	}
	return &s, nil
}

// problems lists what makes a run not a full pass: any failure, error,
// skip, expected failure or unexpected success, a test of KernelTests that
// did not pass (so none can silently go missing, e.g. when a newer
// jupyter_kernel_test adds one), and a count that does not add up.
func (s *conformanceSummary) problems() []string {
	var p []string
	for _, l := range []struct {
		what  string
		tests []string
	}{
		{"failed", s.Failures}, {"errored", s.Errors}, {"skipped", s.Skipped},
		{"failed as expected (none may)", s.ExpectedFailures}, {"passed unexpectedly", s.UnexpectedSuccesses},
	} {
		for _, t := range l.tests {
			p = append(p, t+" "+l.what)
		}
	}
	if len(s.BaseTests) == 0 {
		p = append(p, "the summary names no tests of jupyter_kernel_test.KernelTests")
	}
	for _, t := range s.BaseTests {
		if !slices.Contains(s.Passed, t) {
			p = append(p, "KernelTests."+t+" did not pass")
		}
	}
	if s.Run == 0 || len(s.Passed) != s.Run {
		p = append(p, fmt.Sprintf("%d tests run, %d passed", s.Run, len(s.Passed)))
	}
	return p
}

func TestParseConformance(t *testing.T) {
	good := `test_x ... ok
CONFORMANCE {"run": 2, "passed": ["test_kernel_info", "test_x"], "failures": [], "errors": [], "skipped": [], "expected_failures": [], "unexpected_successes": [], "base_tests": ["test_kernel_info"]}
`
	s, err := parseConformance(good)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.problems(); len(p) != 0 {
		t.Errorf("a full pass has problems: %v", p)
	}
	bad := map[string]string{
		"failure":         `{"run": 1, "passed": ["test_kernel_info"], "failures": ["m.C.test_pager"], "base_tests": ["test_kernel_info"]}`,
		"error":           `{"run": 1, "passed": ["test_kernel_info"], "errors": ["m.C.test_pager"], "base_tests": ["test_kernel_info"]}`,
		"skip":            `{"run": 1, "passed": ["test_kernel_info"], "skipped": ["m.C.test_history (hist_access_type='search')"], "base_tests": ["test_kernel_info"]}`,
		"base not passed": `{"run": 1, "passed": ["test_x"], "base_tests": ["test_kernel_info", "test_x"]}`,
		"no base tests":   `{"run": 1, "passed": ["test_x"], "base_tests": []}`,
		"count":           `{"run": 3, "passed": ["test_kernel_info"], "base_tests": ["test_kernel_info"]}`,
		"nothing ran":     `{"run": 0, "passed": [], "base_tests": ["test_kernel_info"]}`,
	}
	for name, line := range bad {
		s, err := parseConformance("...\nCONFORMANCE " + line + "\n")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(s.problems()) == 0 {
			t.Errorf("%s: no problem found in %s", name, line)
		}
	}
	for _, out := range []string{"", "OK\n", "CONFORMANCE {not json\n"} {
		if _, err := parseConformance(out); err == nil {
			t.Errorf("parsed %q", out)
		}
	}
}

// TestConformance runs the standard kernel conformance suite,
// jupyter_kernel_test (Debian python3-jupyter-kernel-test), against a
// freshly built kernel with an empty state directory: see
// testdata/conformance.py. Every test of its KernelTests must pass, none
// skipped.
func TestConformance(t *testing.T) {
	testtier.Integration(t)
	if out, err := exec.Command(python, "-c", "import jupyter_kernel_test").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import jupyter_kernel_test: %v\n%s\nrun: make deps (apt-get install python3-jupyter-kernel-test)", python, err, out)
	}
	env, _ := buildAndInstall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "conformance.py", "privnotes-test")
	cmd.Dir = "testdata"
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within 5 minutes\n%s", out.String())
	}
	s, err := parseConformance(out.String())
	if err != nil {
		t.Fatalf("conformance suite (exit: %v): %v\n%s", runErr, err, out.String())
	}
	if p := s.problems(); len(p) > 0 || runErr != nil {
		t.Fatalf("conformance suite (jupyter_kernel_test %s, exit: %v):\n  %s\n\n%s", s.Version, runErr, strings.Join(p, "\n  "), out.String())
	}
	t.Logf("jupyter_kernel_test %s: %d tests passed", s.Version, s.Run)
}
