package stdlib

// Withheld lists symbols of allowlisted packages that cells may not use,
// by table key and name. The generated tables hold whole packages; these
// few symbols reach the host beyond computing:
//
//   - time.LoadLocation opens files named by its argument under the host's
//     zoneinfo directories (and $ZONEINFO), so a cell could probe which
//     files exist there. Cells get fixed zones only: time.UTC,
//     time.FixedZone, and time.LoadLocationFromTZData on bytes they hold.
//   - sync/atomic's *Pointer functions take and return unsafe.Pointer, the
//     one way past Go's memory safety; cells have no unsafe package, and
//     these would hand them its type. atomic.Value and the typed atomics
//     (atomic.Int64, …) remain.
//   - encoding/json's error types that carry a reflect.Type or a
//     reflect.Value of the marshalled value: naming them is the only way
//     a cell could hold a reflect value (by a type assertion or
//     errors.As), and reflect values read and write memory past the type
//     system. The errors still say what is wrong (their text); SyntaxError
//     and InvalidUTF8Error stay nameable.
var Withheld = map[string][]string{
	"time/time": {"LoadLocation"},
	"encoding/json/json": {"InvalidUnmarshalError", "MarshalerError", "UnmarshalFieldError",
		"UnmarshalTypeError", "UnsupportedTypeError", "UnsupportedValueError"},
	"sync/atomic/atomic": {"CompareAndSwapPointer", "LoadPointer", "StorePointer", "SwapPointer"},
}

// This file's init must run after the generated tables' inits: Go runs
// the init functions of a package's files in the order the files are
// given to the compiler, which the go tool sorts by name, and "withheld.go"
// sorts after every generated file. TestWithheldSymbolsAbsent fails if a
// rename breaks that.
func init() {
	for key, names := range Withheld {
		for _, n := range names {
			delete(Symbols[key], n)
		}
	}
}
