package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Runner runs the go tool in the scratch copy.
type Runner struct {
	Dir string
	Go  string // the go command
	// Log receives go test's output as it comes when non-nil (-v).
	Log io.Writer
}

func (r *Runner) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.Go, args...)
	cmd.Dir = r.Dir
	// The copy has no .git: no VCS stamping, and no go.work from above it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"))
	ownGroup(cmd)
	return cmd
}

// Build compiles the package directories of pkgs (no tests): a mutant that
// does not compile is a broken entry, not a kill. It returns the compiler's
// messages on failure.
func (r *Runner) Build(ctx context.Context, pkgs ...string) (string, bool) {
	cmd := r.command(ctx, append([]string{"build", "-o", os.DevNull}, pkgs...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// Outcome is what one `go test -json` run found.
type Outcome struct {
	// Failed lists "pkg TestName" for each failing test, or "pkg" when
	// the package failed outside any test (a panic, a timeout, TestMain).
	Failed []string
	// FailedPkgs lists the packages with a failure, in order.
	FailedPkgs []string
	// BuildFailed is set when a package or its test did not compile.
	BuildFailed bool
	// Ran lists "pkg TestName" for every test (and subtest) started.
	Ran []string
	// TimedOut is set when a test binary hit its -timeout.
	TimedOut bool
	// Output holds go test's text output (for diagnostics).
	Output string
	// Err is set when go test could not run at all (a bad package path,
	// the go command missing): neither a kill nor a pass.
	Err error
}

// testEvent is one line of `go test -json` (cmd/test2json's format;
// build-output and build-fail carry ImportPath instead of Package).
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

// Test runs `go test -count=1 -vet=off -failfast -json -run run pkgs`.
// vet is off because a vet finding is not a test failure, and the runs are
// shorter without it.
func (r *Runner) Test(ctx context.Context, pkgs []string, run string, timeout time.Duration) Outcome {
	args := []string{"test", "-count=1", "-vet=off", "-failfast", "-json", "-timeout", timeout.String(), "-run", run}
	args = append(args, pkgs...)
	// The go command's own deadline is the test timeout per package plus
	// slack for compiling; a hang past it is reported, not waited for.
	ctx, cancel := context.WithTimeout(ctx, timeout*time.Duration(len(pkgs))+5*time.Minute)
	defer cancel()
	cmd := r.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Outcome{Err: err}
	}
	if err := cmd.Start(); err != nil {
		return Outcome{Err: err}
	}
	o := parseEvents(stdout, r.Log)
	werr := cmd.Wait()
	if s := strings.TrimSpace(stderr.String()); s != "" {
		o.Output += s + "\n"
		if r.Log != nil {
			fmt.Fprintln(r.Log, s)
		}
	}
	if ctx.Err() != nil {
		o.Err = fmt.Errorf("go test did not finish: %v", ctx.Err())
		return o
	}
	// go test exits non-zero on a failing test; that is an outcome. It is
	// an error only when nothing explains it (no package result at all).
	if werr != nil && len(o.Failed) == 0 && !o.BuildFailed {
		o.Err = fmt.Errorf("go test %s: %v: %s", strings.Join(args[1:], " "), werr, lastLines(o.Output, 15))
	}
	return o
}

// List runs `go test -list run pkgs`: it compiles the tests and reports, in
// Ran, the top-level tests run selects ("pkg TestName"), without running
// any. A baseline that lists instead of running trusts an earlier run of
// the same tree (CI's make test) to have shown that the tests pass.
func (r *Runner) List(ctx context.Context, pkgs []string, run string) Outcome {
	args := append([]string{"test", "-vet=off", "-json", "-list", run}, pkgs...)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(pkgs))*10*time.Minute)
	defer cancel()
	cmd := r.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	o := parseEvents(bytes.NewReader(out), r.Log)
	o.Ran = listed(out)
	if s := strings.TrimSpace(stderr.String()); s != "" {
		o.Output += s + "\n"
	}
	switch {
	case ctx.Err() != nil:
		o.Err = fmt.Errorf("go test -list did not finish: %v", ctx.Err())
	case err != nil && len(o.Failed) == 0 && !o.BuildFailed:
		o.Err = fmt.Errorf("go test %s: %v: %s", strings.Join(args[1:], " "), err, lastLines(o.Output, 15))
	}
	return o
}

// listed reads the test names a `go test -json -list` stream prints: one
// output line per test, besides the package's "ok" line.
func listed(stream []byte) []string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Action != "output" || ev.Test != "" {
			continue
		}
		name := strings.TrimSpace(ev.Output)
		if isTestName(name) {
			names = append(names, ev.Package+" "+name)
		}
	}
	return names
}

// isTestName reports whether s is a test, benchmark, fuzz test or example
// name as go test -list prints it (one identifier, no spaces).
func isTestName(s string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if strings.HasPrefix(s, p) && !strings.ContainsAny(s, " \t") {
			return true
		}
	}
	return false
}

// parseEvents reads a go test -json stream.
func parseEvents(rd io.Reader, log io.Writer) Outcome {
	var o Outcome
	var text strings.Builder
	seenFail := map[string]bool{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev testEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			// Not an event: go prints some build errors as plain text.
			text.Write(line)
			text.WriteByte('\n')
			if log != nil {
				fmt.Fprintf(log, "%s\n", line)
			}
			continue
		}
		if ev.Output != "" {
			text.WriteString(ev.Output)
			if log != nil {
				io.WriteString(log, ev.Output)
			}
			if strings.HasPrefix(ev.Output, "panic: test timed out after ") {
				o.TimedOut = true
			}
		}
		pkg := ev.Package
		if pkg == "" {
			pkg = ev.ImportPath
		}
		switch ev.Action {
		case "run":
			o.Ran = append(o.Ran, pkg+" "+ev.Test)
		case "build-fail":
			o.BuildFailed = true
		case "fail":
			if ev.FailedBuild != "" {
				o.BuildFailed = true
				continue
			}
			name := pkg
			if ev.Test != "" {
				name += " " + ev.Test
			} else if hasPrefixIn(o.Failed, pkg+" ") {
				// The package's fail event after its tests' ones.
				addOnce(&o.FailedPkgs, seenFail, pkg)
				continue
			}
			o.Failed = append(o.Failed, name)
			addOnce(&o.FailedPkgs, seenFail, pkg)
		}
	}
	o.Output = text.String()
	return o
}

func addOnce(list *[]string, seen map[string]bool, s string) {
	if !seen[s] {
		seen[s] = true
		*list = append(*list, s)
	}
}

func hasPrefixIn(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// lastLines returns the last n lines of s, for short error messages.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runPattern is a -run regex as go test reads it: alternatives split at
// top-level '|', each a list of per-level patterns split at top-level '/'
// (the first level matches top-level test names, the next their subtests).
// Brackets and parentheses protect both separators.
type runPattern [][]*regexp.Regexp

func compileRun(expr string) (runPattern, error) {
	var p runPattern
	for _, alt := range splitTopLevel(expr, '|') {
		var levels []*regexp.Regexp
		for _, lv := range splitTopLevel(alt, '/') {
			re, err := regexp.Compile(lv)
			if err != nil {
				return nil, err
			}
			levels = append(levels, re)
		}
		p = append(p, levels)
	}
	return p, nil
}

// splitTopLevel splits s at sep where sep is outside brackets and
// parentheses and not escaped.
func splitTopLevel(s string, sep byte) []string {
	var parts []string
	brackets, parens, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '[':
			brackets++
		case c == ']' && brackets > 0:
			brackets--
		case c == '(' && brackets == 0:
			parens++
		case c == ')' && brackets == 0 && parens > 0:
			parens--
		case c == sep && brackets == 0 && parens == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// selects reports whether the pattern selects the test named name
// ("TestA" or "TestA/sub"): some alternative has at most as many levels as
// the name and matches each of them. A pattern with a subtest level does
// not select a bare top-level name, so a list entry whose subtest no
// longer exists is noticed.
func (p runPattern) selects(name string) bool {
	parts := strings.Split(name, "/")
	for _, levels := range p {
		if len(levels) > len(parts) {
			continue
		}
		ok := true
		for i, re := range levels {
			if !re.MatchString(parts[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
