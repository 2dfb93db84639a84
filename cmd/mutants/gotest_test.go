package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseEvents(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream string
		check  func(Outcome) bool
	}{
		{"pass", `{"Action":"start","Package":"m/p"}
{"Action":"run","Package":"m/p","Test":"TestA"}
{"Action":"output","Package":"m/p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"m/p","Test":"TestA"}
{"Action":"pass","Package":"m/p"}`, func(o Outcome) bool {
			return len(o.Failed) == 0 && !o.BuildFailed && len(o.Ran) == 1 && o.Ran[0] == "m/p TestA" && strings.Contains(o.Output, "=== RUN")
		}},
		{"test fails", `{"Action":"run","Package":"m/p","Test":"TestA"}
{"Action":"run","Package":"m/p","Test":"TestA/sub"}
{"Action":"fail","Package":"m/p","Test":"TestA/sub"}
{"Action":"fail","Package":"m/p","Test":"TestA"}
{"Action":"fail","Package":"m/p"}`, func(o Outcome) bool {
			return len(o.Failed) == 2 && o.Failed[1] == "m/p TestA" && len(o.FailedPkgs) == 1 && o.FailedPkgs[0] == "m/p"
		}},
		{"package fails outside a test", `{"Action":"output","Package":"m/p","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"m/p"}`, func(o Outcome) bool {
			return len(o.Failed) == 1 && o.Failed[0] == "m/p" && o.TimedOut
		}},
		{"build fails", `{"ImportPath":"m/p","Action":"build-output","Output":"p/a.go:3:1: syntax error\n"}
{"ImportPath":"m/p","Action":"build-fail"}
{"Action":"start","Package":"m/p"}
{"Action":"fail","Package":"m/p","FailedBuild":"m/p"}`, func(o Outcome) bool {
			return o.BuildFailed && len(o.Failed) == 0 && strings.Contains(o.Output, "syntax error")
		}},
		{"plain text", "# m/p\nsomething the go command printed\n", func(o Outcome) bool {
			return strings.Contains(o.Output, "something the go command printed") && len(o.Failed) == 0
		}},
	} {
		if o := parseEvents(strings.NewReader(c.stream), nil); !c.check(o) {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
}

func TestRunPatternSelects(t *testing.T) {
	for _, c := range []struct {
		expr string
		yes  []string
		no   []string
	}{
		{"^TestA$", []string{"TestA", "TestA/x"}, []string{"TestAB", "TestB"}},
		{"^(TestA|TestB)$", []string{"TestA", "TestB/y"}, []string{"TestC"}},
		{"TestA|TestB", []string{"TestA", "TestB", "TestBx"}, []string{"TestC"}},
		{"^TestA$/^npm$", []string{"TestA/npm"}, []string{"TestA", "TestA/gauss", "TestB/npm"}},
		{"^TestA$/npm|^TestC$", []string{"TestA/npm_2", "TestC"}, []string{"TestA"}},
	} {
		p, err := compileRun(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		for _, n := range c.yes {
			if !p.selects(n) {
				t.Errorf("-run %s should select %s", c.expr, n)
			}
		}
		for _, n := range c.no {
			if p.selects(n) {
				t.Errorf("-run %s should not select %s", c.expr, n)
			}
		}
	}
}

func TestSplitTopLevel(t *testing.T) {
	for _, c := range []struct {
		s    string
		sep  byte
		want string
	}{
		{"a/b/c", '/', "a,b,c"},
		{"a[/|]b/c", '/', "a[/|]b,c"},
		{`a\/b/c`, '/', `a\/b,c`},
		{"(a|b)|c", '|', "(a|b),c"},
		{"a]|b", '|', "a],b"},
	} {
		if got := strings.Join(splitTopLevel(c.s, c.sep), ","); got != c.want {
			t.Errorf("splitTopLevel(%q, %q) = %q, want %q", c.s, c.sep, got, c.want)
		}
	}
}

// End to end on a small module: the real go command judges a killed, a
// surviving, a rotten, a broken and an unselected mutant, and a test
// whose package fails without any mutant leaves its mutant unjudged.
func TestRunAllEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.21\n",
		"calc/calc.go":      "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n\n// Double is untested.\nfunc Double(a int) int { return 2 * a }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
		"bad/bad.go":        "package bad\n\nfunc One() int { return 1 }\n",
		"bad/bad_test.go":   "package bad\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) { t.Fatal(\"broken without any mutant\") }\n",
	}
	var names []string
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	list := `
mutant: killed
file: calc/calc.go
why: w
test: ./calc ^TestAdd$
--- original
return a + b
--- mutant
return a - b
--- end

mutant: survives
file: calc/calc.go
why: nothing tests Double
test: ./calc ^TestAdd$
--- original
return 2 * a
--- mutant
return 3 * a
--- end

mutant: rotten
file: calc/calc.go
why: w
test: ./calc ^TestAdd$
--- original
return a * b
--- mutant
return a / b
--- end

mutant: broken
file: calc/calc.go
why: w
test: ./calc ^TestAdd$
--- original
return a + b
--- mutant
return a +
--- end

mutant: no-tests
file: calc/calc.go
why: w
test: ./calc ^TestMissing$
--- original
return a + b
--- mutant
return b + a + 1
--- end

mutant: unjudged
file: bad/bad.go
why: w
test: ./bad ^TestOne$
--- original
return 1
--- mutant
return 2
--- end
`
	ms, err := ParseList(strings.NewReader(list), "list")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScratch(root, names)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	var out strings.Builder
	r := &Runner{Dir: s.Dir, Go: goCmd}
	results := runAll(context.Background(), s, r, ms, &config{timeout: time.Minute}, &out)
	want := map[string]Status{"killed": StatusKilled, "survives": StatusSurvived, "rotten": StatusRotten,
		"broken": StatusBroken, "no-tests": StatusNoTests, "unjudged": StatusBaseline}
	for _, res := range results {
		if res.Status != want[res.Mutant.ID] {
			t.Errorf("%s: %s (%s), want %s", res.Mutant.ID, res.Status, res.By, want[res.Mutant.ID])
		}
	}
	if by := results[0].By; by != "calc TestAdd" {
		t.Errorf("killed by %q, want %q", by, "calc TestAdd")
	}
	// Every mutant was reverted: the copy equals the module again.
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(s.Dir, filepath.FromSlash(name))); err != nil || string(b) != body {
			t.Errorf("%s after the run: %q, %v", name, b, err)
		}
	}
	// A listing baseline finds the same unselected regex without running
	// a test; it trusts an earlier run to have shown the tests pass, so
	// the package that fails without mutants is no longer caught here
	// (make test catches it first in CI).
	var listOut strings.Builder
	listed := runAll(context.Background(), s, r, ms, &config{timeout: time.Minute, listBaseline: true}, &listOut)
	want["unjudged"] = StatusKilled
	for _, res := range listed {
		if res.Status != want[res.Mutant.ID] {
			t.Errorf("list baseline: %s: %s (%s), want %s", res.Mutant.ID, res.Status, res.By, want[res.Mutant.ID])
		}
	}
	if !strings.Contains(listOut.String(), "listed") {
		t.Errorf("the list baseline does not say it listed:\n%s", listOut.String())
	}
	var sum strings.Builder
	writeSummary(&sum, results, 3*time.Second)
	for _, w := range []string{"ID  ", "calc/calc.go:4", "killed    calc TestAdd", "SURVIVED survives", "a test of this property is missing",
		"6 mutants: 1 killed, 1 survived, 1 rotten, 1 broken, 1 no-tests, 1 unjudged; total time 3s"} {
		if !strings.Contains(sum.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, sum.String())
		}
	}
}
