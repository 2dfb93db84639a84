package stdlib

// Withheld lists symbols of allowlisted packages that cells may not use,
// by table key and name. The generated tables hold whole packages; these
// few symbols reach the host beyond computing:
//
//   - time.LoadLocation opens files named by its argument under the host's
//     zoneinfo directories (and $ZONEINFO), so a cell could probe which
//     files exist there. Cells get fixed zones only: time.UTC,
//     time.FixedZone, and time.LoadLocationFromTZData on bytes they hold.
var Withheld = map[string][]string{
	"time/time": {"LoadLocation"},
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
