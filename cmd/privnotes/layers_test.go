package main

// The layering of privnotes, checked like the standard library's
// go/build/deps_test.go: dependencies point down only (cmd → kernel → dsl →
// mechanisms), the mechanisms do no I/O, and the Jupyter protocol knows the
// interpreter only through the engine contract.

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/privnotes/privnotes"

// layerRule says what the non-test imports of the packages under a prefix
// may not be.
type layerRule struct {
	prefix string
	// denied reports why an import is not allowed, or "".
	denied func(imp string) string
}

func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

var layerRules = []layerRule{
	{module + "/mechanisms", func(imp string) string {
		switch {
		case imp == "C", imp == "os", imp == "os/exec", imp == "syscall", imp == "io/fs", imp == "plugin",
			under(imp, "net"), under(imp, "database/sql"), under(imp, "google.golang.org/grpc"):
			return "mechanisms do no I/O: they get rows and a noise source from their caller"
		case under(imp, module) && !under(imp, module+"/mechanisms"):
			return "mechanisms import nothing of privnotes above them"
		}
		return ""
	}},
	{module + "/kernel", func(imp string) string {
		if under(imp, module+"/dsl") && imp != module+"/dsl/engine" {
			return "the Jupyter protocol knows the interpreter only through dsl/engine"
		}
		if under(imp, module+"/cmd") {
			return "nothing imports a command"
		}
		return ""
	}},
	{module + "/dsl", func(imp string) string {
		if under(imp, module+"/kernel") || under(imp, module+"/cmd") {
			return "the language does not know its front ends"
		}
		if imp == module+"/dsl/snapshot" {
			return "the data engine (cgo) is linked in by the binary (release.RegisterSnapshots), not imported"
		}
		if imp == module+"/dsl/pgsource" {
			return "the PostgreSQL driver is linked in by the binary (release.RegisterEngine), not imported"
		}
		if imp == module+"/dsl/chsource" {
			return "the ClickHouse source is linked in by the binary (release.RegisterEngine), not imported"
		}
		return ""
	}},
	{module + "/dsl", func(imp string) string {
		if under(imp, "google.golang.org/grpc") || under(imp, "google.golang.org/protobuf") || under(imp, module+"/api") || under(imp, module+"/service") {
			return "the language has no transport: the binary registers the data service's client (runtime.RegisterRemotes)"
		}
		return ""
	}},
	{module + "/api", func(imp string) string {
		if under(imp, module) {
			return "the protobuf API imports nothing of privnotes"
		}
		return ""
	}},
	{module + "/service", func(imp string) string {
		for _, p := range []string{"/dsl/runtime", "/dsl/interp", "/dsl/snapshot", "/kernel", "/cmd"} {
			if under(imp, module+p) {
				return "the data service runs the execution core (dsl/release), not the interpreter or a front end"
			}
		}
		return ""
	}},
	{module + "/kernel", func(imp string) string {
		if under(imp, "google.golang.org/grpc") || under(imp, module+"/service") {
			return "the Jupyter protocol reaches data servers only through the runtime"
		}
		return ""
	}},
	{module + "/dsl/runtime", func(imp string) string {
		for _, m := range []string{"pca", "dppca", "federated", "fedrep", "jlclass", "tabular", "regression", "rows"} {
			if under(imp, module+"/mechanisms/"+m) {
				return "the runtime runs mechanisms only through the execution core (dsl/release)"
			}
		}
		return ""
	}},
	{module + "/dsl/release", func(imp string) string {
		// The execution core sits below the language: a remote executor
		// (the data service) must run it without an interpreter.
		if under(imp, module+"/dsl") && imp != module+"/dsl/ledger" && imp != module+"/dsl/catalog" && imp != module+"/dsl/sqlplan" {
			return "the execution core knows only the ledger, the catalog and the SQL planner of dsl/"
		}
		if under(imp, "google.golang.org/grpc") {
			return "the execution core has no transport"
		}
		return ""
	}},
	{module + "/internal/benchrun", func(imp string) string {
		for _, p := range []string{"/cmd", "/kernel", "/dsl/runtime", "/dsl/interp"} {
			if under(imp, module+p) {
				return "the benchmarks drive the execution core, the data engine and the data service, not the interpreter or a front end (cmd/privnotes wires them in)"
			}
		}
		return ""
	}},
	{module + "/dsl/catalog", func(imp string) string {
		// The execution core keys its planners by the catalog's entries:
		// the catalog must sit below it and everything else.
		if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			return "the catalog is a leaf: it imports only the standard library"
		}
		return ""
	}},
	{module + "/stdlib", func(imp string) string {
		if under(imp, module) {
			return "the sandbox's symbol tables hold no privnotes package"
		}
		return ""
	}},
}

// layerViolations checks a package's imports against the rules.
func layerViolations(pkg string, imports []string) []string {
	var out []string
	for _, r := range layerRules {
		if !under(pkg, r.prefix) {
			continue
		}
		for _, imp := range imports {
			if why := r.denied(imp); why != "" {
				out = append(out, pkg+" imports "+imp+": "+why)
			}
		}
	}
	return out
}

func TestLayerRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		bad      bool
	}{
		{module + "/mechanisms/pca", "os", true},
		{module + "/mechanisms/pca", "net/http", true},
		{module + "/mechanisms/pca", "database/sql", true},
		{module + "/mechanisms/pca", "google.golang.org/grpc/credentials", true},
		{module + "/mechanisms/pca", module + "/dsl/ledger", true},
		{module + "/mechanisms/pca", module + "/mechanisms/noise", false},
		{module + "/mechanisms/pca", "gonum.org/v1/gonum/mat", false},
		{module + "/kernel", module + "/dsl/interp", true},
		{module + "/kernel/worker", module + "/dsl/engine", false},
		{module + "/dsl/runtime", module + "/kernel/wire", true},
		{module + "/dsl/runtime", module + "/mechanisms/pca", true},
		{module + "/dsl/runtime", module + "/mechanisms/accounting", false},
		{module + "/stdlib", module + "/dsl/runtime", true},
		{module + "/dsl/release", module + "/dsl/runtime", true},
		{module + "/dsl/release", module + "/dsl/syntax", true},
		{module + "/dsl/release", module + "/dsl/ledger", false},
		{module + "/dsl/release", module + "/dsl/catalog", false},
		{module + "/dsl/catalog", module + "/dsl/ledger", true},
		{module + "/dsl/catalog", "gonum.org/v1/gonum/mat", true},
		{module + "/dsl/catalog", "sort", false},
		{module + "/dsl/runtime", module + "/dsl/release", false},
		{module + "/dsl/release", module + "/dsl/snapshot", true},
		{module + "/dsl/release", module + "/dsl/pgsource", true},
		{module + "/dsl/runtime", module + "/dsl/pgsource", true},
		{module + "/dsl/release", module + "/dsl/chsource", true},
		{module + "/dsl/runtime", module + "/dsl/chsource", true},
		{module + "/dsl/snapshot", module + "/dsl/ledger", false},
		{module + "/dsl/runtime", "google.golang.org/grpc", true},
		{module + "/dsl/release", "google.golang.org/protobuf/proto", true},
		{module + "/dsl/runtime", module + "/service/client", true},
		{module + "/mechanisms/noise", "net", true},
		{module + "/api/privnotes/v1", module + "/dsl/release", true},
		{module + "/api/privnotes/v1", "google.golang.org/grpc", false},
		{module + "/service", module + "/dsl/runtime", true},
		{module + "/service/client", module + "/dsl/release", false},
		{module + "/service/wire", module + "/dsl/syntax", false},
		{module + "/service/wire", module + "/dsl/catalog", false},
		{module + "/kernel/worker", "google.golang.org/grpc", true},
		{module + "/internal/benchrun", module + "/dsl/runtime", true},
		{module + "/internal/benchrun", module + "/cmd/privnotes", true},
		{module + "/internal/benchrun", module + "/dsl/snapshot", false},
		{module + "/internal/benchrun", module + "/service/client", false},
	} {
		if got := len(layerViolations(tc.pkg, []string{tc.imp})) > 0; got != tc.bad {
			t.Errorf("%s importing %s: violation %v, want %v", tc.pkg, tc.imp, got, tc.bad)
		}
	}
}

func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkgs++
		for _, v := range layerViolations(f[0], f[1:]) {
			t.Error(v)
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list found %d packages; the check saw too little", pkgs)
	}
}
