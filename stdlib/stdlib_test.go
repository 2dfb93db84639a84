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
