package syntax

import "github.com/privnotes/privnotes/dsl/catalog"

// The DSL's functions are declared in dsl/catalog; these aliases keep the
// translator's callers compiling against the names they always used.

// Param is one parameter of a DSL function (catalog.Param).
type Param = catalog.Param

// Func describes one function callable bare from a cell (catalog.Func).
type Func = catalog.Func

// Funcs lists the DSL functions, sorted by name (catalog.Funcs).
var Funcs = catalog.Funcs

// Lookup returns the DSL function called name.
func Lookup(name string) (*Func, bool) { return catalog.Lookup(name) }

// Names returns the DSL function names in order.
func Names() []string { return catalog.Names() }

// BlockDelta reports whether a call of f that gives no delta takes its
// budget block's δ (catalog.BlockDelta).
func BlockDelta(f *Func, given func(keyword string) bool) bool {
	return catalog.BlockDelta(f, given)
}
