// Package notebooks holds the demo notebooks of privnotes (*.ipynb), their
// data (data/, with attribution) and the scripts that register the data and
// execute a notebook headless (scripts/). It has no Go API: its tests build
// the privnotes binary, install the kernel spec into a temporary Jupyter
// path, register the data sets in a temporary state directory and execute
// every notebook through the real kernel with Debian's nbclient, checking
// that only cells tagged raises-exception fail (with the error they
// document), and that the numbers the notebooks print stay inside the
// ranges written in their cells' metadata.
//
// Cell metadata understood by the tests (key "privnotes_test"):
//
//	{"checks": [
//	   {"pattern": "sin² = ([0-9.e-]+)", "min": 0, "max": 0.2},  // first group parsed as a number
//	   {"contains": "BudgetExceeded"},                             // text in the cell's output
//	   {"absent": "this line does not run"},                       // text that must not appear
//	   {"mime": "image/png"},                                      // a display of that type
//	   {"reference_pca": {"csv": "data/x.csv", "clip": 2.5,      // a printed private component
//	                      "component": 1, "max_sin2": 0.1}}       // against the exact one
//	 ],
//	 "error": "BudgetExceeded"}                                    // for raises-exception cells
//
// A pattern is checked on every match in the cell's text output (stream
// and text/plain), so a check on "ε=([0-9.]+)" holds all printed values to
// the range.
package notebooks
