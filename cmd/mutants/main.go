// Command mutants checks that the tests guard privnotes' privacy-critical
// code: it applies each mutation of a curated, versioned list (.ci/mutants.txt)
// to a scratch copy of the repository and runs the package tests that should
// catch it. A mutant must be killed (some test fails). The run fails when a
// mutant survives, when its snippet no longer occurs exactly once in its file
// (the list must not rot silently), when it does not compile (a mutant is a
// behaviour change, not a syntax error), or when its -run regex selects no
// test.
//
// Usage (from the repository root; `make mutants` runs it):
//
//	go run ./cmd/mutants [-list .ci/mutants.txt] [-only ID,ID] [-v] [-check] [-list-baseline]
//
// Before the mutants, a baseline runs each package's selected tests once
// on the unmutated copy (a kill means nothing if the test fails anyway)
// and finds regexes that select no test. With -list-baseline it only
// lists them (go test -list): CI uses it right after make test has run
// every test of the same tree, which saves the longest runs (dsl/runtime's
// take minutes).
//
// The working tree is never written: the tracked and untracked (not
// ignored) files are copied once into a temporary directory, each mutant is
// applied there, tested and reverted, and the copy is removed at the end.
// The go build cache stays the user's, so only the mutated package and what
// imports it are rebuilt per mutant.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config holds the command line.
type config struct {
	list    string
	only    string
	verbose bool
	check   bool
	keep    bool
	timeout time.Duration
	goCmd   string
	// listBaseline makes the baseline list the selected tests (go test
	// -list) instead of running them: for CI, where make test has just run
	// every test of the same tree.
	listBaseline bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("mutants", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.list, "list", ".ci/mutants.txt", "the mutant list")
	fs.StringVar(&c.only, "only", "", "run only these mutants (comma-separated ids)")
	fs.BoolVar(&c.verbose, "v", false, "show go's output for every run")
	fs.BoolVar(&c.check, "check", false, "only check that every snippet occurs exactly once (no tests)")
	fs.BoolVar(&c.keep, "keep", false, "keep the scratch copy and print its path")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "default go test -timeout of one mutant's run (a package's baseline gets 3×)")
	fs.StringVar(&c.goCmd, "go", "go", "the go command")
	fs.BoolVar(&c.listBaseline, "list-baseline", false, "baseline: list the selected tests instead of running them (when the same tree's tests have just passed, as in CI after make test)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mutants [-list FILE] [-only ID,ID] [-v] [-check] [-keep] [-timeout D] [-list-baseline]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	start := time.Now()
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	root, err := gitRoot(wd)
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	f, err := os.Open(cfg.list)
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	all, err := ParseList(f, cfg.list)
	f.Close()
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	ms, err := Select(all, cfg.only)
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	if cfg.check {
		return checkOnly(root, ms, stdout)
	}
	files, err := gitFiles(root)
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return 2
	}
	scratch, err := NewScratch(root, files)
	if err != nil {
		fmt.Fprintln(stderr, "mutants: copying the repository:", err)
		return 2
	}
	if cfg.keep {
		fmt.Fprintf(stdout, "scratch copy: %s\n", scratch.Dir)
	} else {
		defer scratch.Remove()
	}
	r := &Runner{Dir: scratch.Dir, Go: cfg.goCmd}
	if cfg.verbose {
		r.Log = stderr
	}
	results := runAll(ctx, scratch, r, ms, cfg, stdout)
	writeSummary(stdout, results, time.Since(start))
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "mutants: interrupted")
		return 130
	}
	for _, res := range results {
		if res.Status != StatusKilled {
			return 1
		}
	}
	return 0
}

// checkOnly verifies the snippets against the working tree.
func checkOnly(root string, ms []*Mutant, stdout io.Writer) int {
	bad := 0
	for _, m := range ms {
		content, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
		if err == nil {
			_, _, err = Mutate(content, m)
		}
		if err != nil {
			bad++
			fmt.Fprintln(stdout, err)
		}
	}
	fmt.Fprintf(stdout, "%d mutants checked, %d rotten\n", len(ms), bad)
	if bad > 0 {
		return 1
	}
	return 0
}

// Status is the verdict on one mutant. Only StatusKilled passes.
type Status string

const (
	StatusKilled   Status = "killed"
	StatusSurvived Status = "SURVIVED"
	StatusRotten   Status = "ROTTEN"   // the snippet does not occur exactly once
	StatusBroken   Status = "BROKEN"   // the mutant does not compile
	StatusNoTests  Status = "NO-TESTS" // a -run regex selects no test of its packages
	StatusBaseline Status = "UNJUDGED" // its tests fail without the mutant
	StatusError    Status = "ERROR"    // go test could not run
)

// Result is the verdict on one mutant with what decided it.
type Result struct {
	Mutant  *Mutant
	Status  Status
	Line    int    // where the snippet starts in its file
	By      string // the killing package and test(s), or the reason
	Seconds float64
}

// baselineFactor multiplies the timeout of a package's baseline run.
const baselineFactor = 3

// runAll checks every mutant's snippet, runs the baseline, then the
// mutants one by one.
func runAll(ctx context.Context, s *Scratch, r *Runner, ms []*Mutant, cfg *config, out io.Writer) []*Result {
	results := make([]*Result, len(ms))
	var live []int
	for i, m := range ms {
		results[i] = &Result{Mutant: m}
		if err := s.Check(m); err != nil {
			results[i].Status, results[i].By = StatusRotten, err.Error()
			continue
		}
		live = append(live, i)
	}
	mod, err := modulePath(s.Dir)
	if err != nil {
		for _, i := range live {
			results[i].Status, results[i].By = StatusError, err.Error()
		}
		return results
	}
	short := func(importPath string) string { return strings.TrimPrefix(importPath, mod+"/") }

	// Baseline: every package pattern once, with the union of its
	// mutants' regexes, on the unmutated copy. It proves the tests pass
	// without the mutants (otherwise a "kill" means nothing), finds
	// regexes that select no test, and warms the build cache.
	union := map[string][]string{} // package pattern → regexes
	var order []string
	for _, i := range live {
		for _, spec := range ms[i].Tests {
			for _, p := range spec.Pkgs {
				if _, ok := union[p]; !ok {
					order = append(order, p)
				}
				if !containsString(union[p], spec.Run) {
					union[p] = append(union[p], spec.Run)
				}
			}
		}
	}
	ran := map[string][]string{}  // package pattern → tests run at baseline ("importpath Test")
	broken := map[string]string{} // package pattern → why its baseline failed
	for _, p := range order {
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		// A baseline runs the union of every mutant's tests of the package
		// at once (dsl/runtime's take minutes), so it gets a multiple of
		// one mutant's timeout: a slow machine must not read as a broken
		// baseline.
		var o Outcome
		if cfg.listBaseline {
			o = r.List(ctx, []string{p}, strings.Join(union[p], "|"))
		} else {
			o = r.Test(ctx, []string{p}, strings.Join(union[p], "|"), baselineFactor*cfg.timeout)
		}
		switch {
		case o.Err != nil:
			broken[p] = o.Err.Error()
		case o.BuildFailed:
			broken[p] = "does not build: " + lastLines(o.Output, 10)
		case len(o.Failed) > 0:
			broken[p] = "fails without any mutant: " + strings.Join(o.Failed, ", ")
		}
		ran[p] = o.Ran
		verdict := "ok"
		if cfg.listBaseline {
			verdict = "listed (not run: -list-baseline)"
		}
		if why, bad := broken[p]; bad {
			verdict = "FAILED: " + why
		}
		fmt.Fprintf(out, "baseline %-32s %5.1fs  %d tests  %s\n", p, time.Since(t0).Seconds(), len(o.Ran), verdict)
	}

	for n, i := range live {
		if ctx.Err() != nil {
			results[i].Status, results[i].By = StatusError, "interrupted"
			continue
		}
		res := results[i]
		m := ms[i]
		if why := judgeable(m, ran, broken); why != nil {
			res.Status, res.By = why.status, why.msg
		} else {
			t0 := time.Now()
			runMutant(ctx, s, r, m, res, cfg, short)
			res.Seconds = time.Since(t0).Seconds()
		}
		fmt.Fprintf(out, "[%2d/%d] %-8s %-40s %5.1fs  %s\n", n+1, len(live), res.Status, m.ID, res.Seconds, res.By)
	}
	return results
}

// verdict is a reason a mutant cannot be judged.
type verdict struct {
	status Status
	msg    string
}

// judgeable reports why m's tests cannot judge it (nil if they can): a
// package whose baseline failed, or a regex that selected no test.
func judgeable(m *Mutant, ran map[string][]string, broken map[string]string) *verdict {
	for _, spec := range m.Tests {
		pat, err := compileRun(spec.Run)
		if err != nil {
			return &verdict{StatusError, err.Error()}
		}
		for _, p := range spec.Pkgs {
			if why, bad := broken[p]; bad {
				return &verdict{StatusBaseline, p + " " + why}
			}
			found := false
			for _, name := range ran[p] {
				_, test, _ := strings.Cut(name, " ")
				if pat.selects(test) {
					found = true
					break
				}
			}
			if !found {
				return &verdict{StatusNoTests, fmt.Sprintf("-run %s selects no test in %s", spec.Run, p)}
			}
		}
	}
	return nil
}

// runMutant applies m, checks that it compiles, runs its tests in order
// until one kills it, and restores the file.
func runMutant(ctx context.Context, s *Scratch, r *Runner, m *Mutant, res *Result, cfg *config, short func(string) string) {
	line, restore, err := s.Apply(m)
	if err != nil {
		var rot *RottenError
		if errors.As(err, &rot) {
			res.Status, res.By = StatusRotten, err.Error()
		} else {
			res.Status, res.By = StatusError, err.Error()
		}
		return
	}
	res.Line = line
	defer func() {
		if err := restore(); err != nil {
			// The copy is now unusable for the next mutants; say so loudly.
			res.Status, res.By = StatusError, err.Error()
		}
	}()
	if msg, ok := r.Build(ctx, "./"+path.Dir(m.File)); !ok {
		res.Status, res.By = StatusBroken, "does not compile: "+firstLine(msg)
		return
	}
	timeout := cfg.timeout
	if m.Timeout > 0 {
		timeout = m.Timeout
	}
	for _, spec := range m.Tests {
		o := r.Test(ctx, spec.Pkgs, spec.Run, timeout)
		switch {
		case o.BuildFailed:
			res.Status, res.By = StatusBroken, "test build failed: "+firstLine(o.Output)
			return
		case len(o.Failed) > 0:
			res.Status, res.By = StatusKilled, killers(o, short)
			if o.TimedOut {
				res.By += " (timeout)"
			}
			return
		case o.Err != nil:
			res.Status, res.By = StatusError, o.Err.Error()
			return
		}
	}
	res.Status, res.By = StatusSurvived, "every selected test passed: "+m.Why
}

// killers names the failing package and its failing tests, shortly.
func killers(o Outcome, short func(string) string) string {
	pkg := o.FailedPkgs[0]
	var tests []string
	for _, f := range o.Failed {
		if p, test, ok := strings.Cut(f, " "); ok && p == pkg && !strings.Contains(test, "/") {
			tests = append(tests, test)
		}
	}
	s := short(pkg)
	if len(tests) > 0 {
		s += " " + strings.Join(tests, ",")
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// modulePath reads the module path from dir/go.mod.
func modulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod has no module line", dir)
}
