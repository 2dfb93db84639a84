package stdlib

import (
	"context"
	"fmt"
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

// TestEveryAllowlistedPackageImports imports each package of the allowlist
// (and yaegi's generic cmp, maps and slices) in an interpreter, and uses a
// few of the pure-computation packages the way a cell would.
func TestEveryAllowlistedPackageImports(t *testing.T) {
	i := interp.New(interp.Options{SourcecodeFilesystem: fstest.MapFS{}})
	if err := i.Use(Symbols); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(append([]string(nil), Allowlist...), "cmp", "maps", "slices") {
		if _, err := i.EvalWithContext(context.Background(), `import "`+p+`"`); err != nil {
			t.Errorf("import %q: %v", p, err)
		}
	}
	for _, tc := range []struct{ code, want string }{
		{"r := csv.NewReader(strings.NewReader(\"a,b\\n1,\\\"2,3\\\"\\n\"))\nrecs, err := r.ReadAll()\nfmt.Sprint(recs, err)", `[[a b] [1 2,3]] <nil>`},
		{"mu, wg, n := &sync.Mutex{}, &sync.WaitGroup{}, &atomic.Int64{}\nfor k := 0; k < 4; k++ {\n\twg.Add(1)\n\tgo func() { defer wg.Done(); mu.Lock(); n.Add(1); mu.Unlock() }()\n}\nwg.Wait()\nn.Load()", `4`},
		// yaegi's generic slices and maps are partial (docs/dsl.md).
		{"s := []int{3, 1, 2}\nfmt.Sprint(slices.Index(s, 1), slices.Contains(s, 4), cmp.Compare(1, 2))", `1 false -1`},
		{`new(big.Int).Exp(big.NewInt(2), big.NewInt(100), nil).String()`, `1267650600228229401496703205376`},
		{"h := sha256.Sum256([]byte(\"abc\"))\nhex.EncodeToString(h[:4])", `ba7816bf`},
		{`base64.StdEncoding.EncodeToString([]byte("pn"))`, `cG4=`},
		{`crc32.ChecksumIEEE([]byte("abc"))`, `891568578`},
		{"f := fnv.New32a()\nf.Write([]byte(\"abc\"))\nf.Sum32()", `440920331`},
		{`ring.New(3).Len()`, `3`},
		{`string(utf16.Decode([]uint16{0x70, 0x6e}))`, `pn`},
	} {
		v, err := i.EvalWithContext(context.Background(), tc.code)
		if err != nil {
			t.Errorf("%s: %v", tc.code, err)
			continue
		}
		if got := fmt.Sprint(v.Interface()); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.code, got, tc.want)
		}
	}
}
