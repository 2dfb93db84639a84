package stdlib

import (
	"context"
	"path"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/traefik/yaegi/interp"
)

// TestSymbolsAreTheAllowlist fails when a package is added to (or missing
// from) the tables without being added to the allowlist: the tables are
// the sandbox.
func TestSymbolsAreTheAllowlist(t *testing.T) {
	var got []string
	for key := range Symbols {
		got = append(got, path.Dir(key))
		if path.Base(key) != path.Base(path.Dir(key)) {
			t.Errorf("symbol table key %q: package name differs from the last path element", key)
		}
	}
	sort.Strings(got)
	if !sort.StringsAreSorted(Allowlist) {
		t.Errorf("Allowlist is not sorted")
	}
	if strings.Join(got, "\n") != strings.Join(Allowlist, "\n") {
		t.Fatalf("symbol tables hold\n%v\nwant the allowlist\n%v", got, Allowlist)
	}
	for _, p := range []string{"os", "io", "io/fs", "io/ioutil", "net", "net/http", "os/exec", "syscall",
		"unsafe", "reflect", "runtime", "runtime/debug", "plugin", "path/filepath", "log", "embed", "debug/elf"} {
		for _, a := range Allowlist {
			if a == p {
				t.Errorf("forbidden package %q is in the allowlist", p)
			}
		}
	}
}

// TestForbiddenImportsFail checks the tables themselves (without the
// engine's clearer pre-check): yaegi cannot find forbidden packages.
func TestForbiddenImportsFail(t *testing.T) {
	i := interp.New(interp.Options{SourcecodeFilesystem: fstest.MapFS{}})
	if err := i.Use(Symbols); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"os", "reflect", "unsafe", "os/exec", "syscall", "net/http", "io/ioutil", "runtime"} {
		_, err := i.EvalWithContext(context.Background(), `import "`+p+`"`)
		if err == nil || !strings.Contains(err.Error(), "unable to find source") {
			t.Errorf("import %q: want an error, got %v", p, err)
		}
	}
	if _, err := i.EvalWithContext(context.Background(), `import "math"`); err != nil {
		t.Errorf("import math: %v", err)
	}
}

// TestWithheldSymbolsAbsent checks that a cell cannot name a withheld
// symbol: it is gone from the table, and the interpreter says so.
func TestWithheldSymbolsAbsent(t *testing.T) {
	for key, names := range Withheld {
		if Symbols[key] == nil {
			t.Fatalf("withheld symbols of %q, which has no table", key)
		}
		for _, n := range names {
			if _, ok := Symbols[key][n]; ok {
				t.Errorf("%s.%s is still in the symbol table", key, n)
			}
		}
	}
	if _, ok := Symbols["time/time"]["FixedZone"]; !ok {
		t.Errorf("time.FixedZone was removed with the withheld symbols")
	}
	i := interp.New(interp.Options{SourcecodeFilesystem: fstest.MapFS{}})
	if err := i.Use(Symbols); err != nil {
		t.Fatal(err)
	}
	if _, err := i.EvalWithContext(context.Background(), `import "time"`); err != nil {
		t.Fatal(err)
	}
	_, err := i.EvalWithContext(context.Background(), `time.LoadLocation("Europe/Paris")`)
	if err == nil || !strings.Contains(err.Error(), "LoadLocation") {
		t.Errorf("time.LoadLocation in a cell: want an undefined-symbol error, got %v", err)
	}
	if _, err := i.EvalWithContext(context.Background(), `time.FixedZone("X", 3600).String()`); err != nil {
		t.Errorf("time.FixedZone: %v", err)
	}
}
