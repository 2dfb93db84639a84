package interp

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// DSL types (Dataset, *PCAResult, DisplayHandle, …) are exported to cells
// bare, so their names in inspect, help and error texts carry no package
// path either: `Dataset`, not `runtime.Dataset`.

// modulePath prefixes the import paths of privnotes' own packages.
const modulePath = "github.com/privnotes/privnotes/"

// TypeName is t as a cell names it: privnotes' own types without their
// package, everything else as Go prints it (mat.Dense, []float64).
func TypeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	if t.Name() != "" {
		if strings.HasPrefix(t.PkgPath(), modulePath) {
			return t.Name()
		}
		return t.String()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + TypeName(t.Elem())
	case reflect.Slice:
		return "[]" + TypeName(t.Elem())
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + TypeName(t.Elem())
	case reflect.Map:
		return "map[" + TypeName(t.Key()) + "]" + TypeName(t.Elem())
	case reflect.Chan:
		switch t.ChanDir() {
		case reflect.RecvDir:
			return "<-chan " + TypeName(t.Elem())
		case reflect.SendDir:
			return "chan<- " + TypeName(t.Elem())
		}
		return "chan " + TypeName(t.Elem())
	}
	return t.String()
}

// qualified matches a privnotes package qualifier before an exported
// name, as reflect and yaegi print types: runtime.Dataset,
// *interp.DisplayHandle. Cells cannot import these packages (runtime,
// reflect, … are not allowlisted), so the qualifier in a message is ours.
var qualified = regexp.MustCompile(`\b(?:runtime|interp|release|engine)\.([A-Z])`)

// bareTypes strips privnotes package qualifiers from a message.
func bareTypes(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return qualified.ReplaceAllString(s, "$1")
}
