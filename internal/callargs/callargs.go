// Package callargs fills a private call's keywords from the DSL's function
// table (dsl/catalog) as the DSL runtime does, for the code that builds
// release.Calls without a notebook: the benchmarks (internal/benchrun) and
// the data service's tests.
package callargs

import (
	"strconv"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
)

// Defaults returns every keyword of fn's table at its default value,
// converted to the keyword's type; false if fn is not in the table.
func Defaults(fn string) (map[string]any, bool) {
	f, ok := catalog.Lookup(fn)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(f.Keywords))
	for _, p := range f.Keywords {
		var v any
		switch p.Type {
		case "int":
			v, _ = strconv.Atoi(p.Default)
		case "float":
			v, _ = strconv.ParseFloat(p.Default, 64)
		case "string":
			v, _ = strconv.Unquote(p.Default)
		case "bool":
			v = p.Default == "true"
		case "[]string":
			v = []string(nil)
		}
		out[p.Name] = v
	}
	return out, true
}

// Args returns fn's arguments with kw given and every other keyword at
// its default (release.NewArgs, Args.WithDefaults); false if fn is not in
// the table.
func Args(fn string, kw map[string]any) (*release.Args, bool) {
	d, ok := Defaults(fn)
	if !ok {
		return nil, false
	}
	return release.NewArgs(kw).WithDefaults(d), true
}
