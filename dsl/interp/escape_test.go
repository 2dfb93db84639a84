package interp

import (
	"context"
	"strings"
	"testing"
)

// TestForbiddenImports: packages outside the allowlist cannot be imported
// in any form, the error names the package and lists the allowed ones, and
// nothing of the cell runs.
func TestForbiddenImports(t *testing.T) {
	e := newEngine(t)
	for _, code := range []string{
		`import "os"`,
		`import "reflect"`,
		`import "unsafe"`,
		`import "os/exec"`,
		`import "syscall"`,
		`import "net/http"`,
		`import "io/ioutil"`,
		`import "runtime/debug"`,
		`import "path/filepath"`,
		`import "log"`,
		`import "github.com/privnotes/privnotes/mechanisms/noise"`,
		"import (\n\t\"fmt\"\n\t\"os\"\n)",
		`import o "os"`,
		`import . "os"`,
		`import _ "os"`,
		"fmt.Println(\"side effect\")\nimport \"os\"",
	} {
		out := &recOutput{}
		r := e.Execute(context.Background(), engineReq(code), out)
		if r.Error == nil || r.Error.Name != "ImportError" || !strings.Contains(r.Error.Value, "cannot be imported") ||
			!strings.Contains(r.Error.Value, "allowed: ") {
			t.Errorf("%q: want ImportError, got %+v", code, r.Error)
		}
		if len(out.items) != 0 {
			t.Errorf("%q: the refused cell produced output %q", code, out.items)
		}
	}
	// Allowed imports work, also twice and aliased.
	for _, code := range []string{`import "math"`, `import "math"`, "import (\n\t\"strings\"\n\tm \"math\"\n)\nm.Sqrt(4)", `import "slices"`, "slices.Contains([]int{1, 2}, 2)"} {
		run(t, e, code)
	}
	if got := value(t, e, "m.Sqrt(9)"); got != "3" {
		t.Errorf("aliased import: %s", got)
	}
	if got := value(t, e, "import . \"math\"\nSqrt(16)"); got != "4" {
		t.Errorf("dot import, same cell: %s", got)
	}
	if got := value(t, e, "Sqrt(25)"); got != "5" {
		t.Errorf("dot import, later cell: %s", got)
	}
	// Packages not imported are still reachable by name (ImportUsed), but
	// only those of the allowlist.
	if got := value(t, e, "strconv.Itoa(5)"); got != `"5"` {
		t.Errorf("strconv without import: %s", got)
	}
	r := e.Execute(context.Background(), engineReq("os.Getenv(\"HOME\")"), &recOutput{})
	if r.Error == nil || !strings.Contains(r.Error.Value, "undefined: os") {
		t.Errorf("os reachable without import: %+v", r.Error)
	}
}
