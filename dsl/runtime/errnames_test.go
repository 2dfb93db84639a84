package runtime

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestTranslateErrorNames: a bad call or magic gets the error name
// docs/dsl.md gives it, whether the translator or the runtime finds it.
func TestTranslateErrorNames(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "tab", table(60, 4, 1, 1), accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("tab")`)
	cases := []struct{ cell, name string }{
		// found by the translator (literal values)
		{`r := private_pca(ds, eps="0.01", delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, k=2.5, eps=0.1, delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, method="pca", eps=0.1, delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, eps=-1, delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, eps=0.1, delta=2)`, NameArgumentError},
		{`r := private_pca(ds, kk=2, eps=0.1, delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, eps=0.1, eps=0.2, delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, delta=1e-6)`, NameArgumentError},
		{`r := private_pca(ds, ds, eps=0.1)`, NameArgumentError},
		{`r := private_count(eps=0.1, ds)`, NameArgumentError},
		{`r := private_count(ds, eps=)`, NameArgumentError},
		{`%nope`, NameMagicError},
		{`%help nothing_here`, NameMagicError},
		{`%datasets extra`, NameMagicError},
		{"%%nope eps=1\nx := 1", NameMagicError},
		// found at run time (non-literal values)
		{"m := \"pca\"\nr := private_pca(ds, method=m, eps=0.1, delta=1e-6)", NameArgumentError},
		{"k := 9\nr := private_pca(ds, k=k, eps=0.1, delta=1e-6)", NameArgumentError},
		{"e := -1.0\nr := private_count(ds, eps=e)", NameArgumentError},
		// syntax
		{`budget eps=x {`, NameSyntaxError},
		{`private_pca := 3`, NameSyntaxError},
		{`f(a=1)`, NameSyntaxError},
		// undefined names: a misspelling, not a syntax error
		{`r := private_coutn(ds, eps=0.1)`, NameNameError},
		{`budgt eps=1 {`, NameNameError},
		{`r := nope`, "NameError"},
	}
	for _, c := range cases {
		res, _ := s.run(c.cell)
		if res.Error == nil {
			t.Errorf("%q: no error, want %s", c.cell, c.name)
			continue
		}
		if res.Error.Name != c.name {
			t.Errorf("%q: %s: %s, want %s", c.cell, res.Error.Name, res.Error.Value, c.name)
		}
	}
	if st := status(t, dir, "tab"); st.Charges != 0 {
		t.Errorf("bad calls charged %d times", st.Charges)
	}
}

// TestPublicArgumentsCheckedBeforeRunning: a call whose keywords are
// literals is validated against the dataset's public schema before the
// cell runs, so the cell is refused whole; a run-time argument error names
// the call's line.
func TestPublicArgumentsCheckedBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "tab", table(60, 4, 1, 1), accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`bc := dataset("tab")`)
	for _, cell := range []string{
		"fmt.Println(\"one\")\nr := private_pca(bc, k=50, eps=1, delta=1e-6)",
		"fmt.Println(\"one\")\nr := private_pca(dataset(\"tab\"), k=2, eps=1, delta=1e-6, method=\"dppca\", pad=true)",
		"fmt.Println(\"one\")\nbudget eps=2, delta=1e-5 {\n\tr := private_pca(bc, k=1, eps=0.1, delta=1e-6, method=\"adaptive\")\n}",
		"fmt.Println(\"one\")\nfor i := 0; i < 2; i++ {\n\tr := private_fedrep(bc, k=1, eps=1, delta=1e-6)\n\t_ = r\n}",
	} {
		res, out := s.run(cell)
		if res.Error == nil || res.Error.Name != NameArgumentError {
			t.Errorf("%q: %+v, want ArgumentError", cell, res.Error)
			continue
		}
		if out.stdout() != "" {
			t.Errorf("%q: the refused cell printed %q", cell, out.stdout())
		}
		if !strings.HasPrefix(res.Error.Value, "line ") || !strings.Contains(res.Error.Value, "nothing ran") {
			t.Errorf("%q: %s, want the call's line and that nothing ran", cell, res.Error.Value)
		}
	}
	res, out := s.run("fmt.Println(\"one\")\nk := 50\nr := private_pca(bc, k=k, eps=1, delta=1e-6)")
	if res.Error == nil || res.Error.Name != NameArgumentError || !strings.HasPrefix(res.Error.Value, "line 3: private_pca") {
		t.Errorf("run-time k > d: %+v", res.Error)
	}
	if out.stdout() != "one\n" {
		t.Errorf("run-time refusal: stdout %q", out.stdout())
	}
	if st := status(t, dir, "tab"); st.Charges != 0 {
		t.Errorf("refused calls charged %d times", st.Charges)
	}
}

// TestRefusalNotes: a refusal explains an approximate event's cost under
// the zcdp accountant, and a refusal inside a loop says that the cell's
// earlier charges stand.
func TestRefusalNotes(t *testing.T) {
	dir := t.TempDir()
	registerPublicN(t, dir, "tab", table(60, 4, 1, 1), accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("tab")`)
	res, _ := s.fails(`r := private_pca(ds, k=1, eps=0.5, delta=1e-7, method="dppca", pad=true)`, NameBudgetExceeded)
	if !strings.Contains(res.Error.Value, "approximate (ε=0.5") || !strings.Contains(res.Error.Value, "docs/accounting.md") {
		t.Errorf("static dppca refusal under zcdp: %s", res.Error.Value)
	}
	res, _ = s.fails("e := 0.5\nr := private_pca(ds, k=1, eps=e, delta=1e-7, method=\"dppca\", pad=true)", NameBudgetExceeded)
	if !strings.Contains(res.Error.Value, "approximate (ε=0.5") || strings.Contains(res.Error.Value, "already made") {
		t.Errorf("run-time dppca refusal under zcdp: %s", res.Error.Value)
	}
	res, _ = s.fails("for i := 0; i < 100; i++ {\n\tc := private_count(ds, eps=0.3, delta=1e-7)\n\t_ = c\n}", NameBudgetExceeded)
	if !strings.Contains(res.Error.Value, "This cell already made") || strings.Contains(res.Error.Value, "approximate") {
		t.Errorf("refusal inside a loop: %s", res.Error.Value)
	}
}

// TestChoices: completion of keyword values comes from syntax.Funcs.
func TestChoices(t *testing.T) {
	rt, _ := New(Config{StateDir: t.TempDir()})
	if got := strings.Join(rt.Choices("private_pca", "method"), ","); !strings.Contains(got, "npm") || !strings.Contains(got, "dppca") {
		t.Errorf("method choices: %q", got)
	}
	if got := rt.Choices("private_pca", "neighbour"); len(got) != 2 {
		t.Errorf("neighbour choices (without the empty default): %q", got)
	}
	if rt.Choices("private_pca", "k") != nil || rt.Choices("nope", "method") != nil {
		t.Error("choices for a free keyword or an unknown function")
	}
}

// errorNameDefs finds the error names the code can give a user: the Name…
// constants of the DSL, the names the engine, the worker supervisor and
// the kernel put in their errors and replies. It reads the source, so a
// new name cannot be added without the table knowing.
var errorNameDefs = regexp.MustCompile(`(?:Name[A-Z]\w*|Err[A-Z]\w*) *= *"([A-Z]\w*)"|Name: *"([A-Z]\w*)"|name: *"([A-Z]\w*)"|name := "([A-Z]\w*)"|errorResult\("([A-Z]\w*)"|errorContent\("([A-Z]\w*)"`)

// TestErrorTableListsEveryName: every error name defined in the code
// has a row in docs/dsl.md's error table.
func TestErrorTableListsEveryName(t *testing.T) {
	names := map[string]string{}
	for _, dir := range []string{"../../dsl", "../../kernel", "../../cmd/privnotes"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "enginetest" { // a test fake's names
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range errorNameDefs.FindAllStringSubmatch(string(src), -1) {
				for _, g := range m[1:] {
					if g != "" {
						names[g] = path
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, must := range []string{NameBudgetExceeded, NameNameError, "CompileError", "RuntimeError", "ImportError", "UnsupportedError", "InternalError", "InterpreterRestarted"} {
		if names[must] == "" {
			t.Errorf("the scan of the source missed %s: the pattern is out of date", must)
		}
	}
	b, err := os.ReadFile(dslDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## Errors\n")
	j := strings.Index(doc[i+1:], "\n## ")
	if i < 0 || j < 0 {
		t.Fatal("docs/dsl.md has no Errors section")
	}
	table := doc[i : i+1+j]
	for name, where := range names {
		if !strings.Contains(table, "| `"+name+"`") && !strings.Contains(table, ", `"+name+"` |") {
			t.Errorf("error name %s (%s) has no row in docs/dsl.md's error table", name, where)
		}
	}
}
