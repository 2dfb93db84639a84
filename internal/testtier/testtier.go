// Package testtier sorts the tests into the tiers of docs/testing.md with
// one greppable line at the top of a test:
//
//	testtier.Long(t)        // statistical audit or long sweep: skipped under -short
//	testtier.Integration(t) // Python/Jupyter, Chromium/Node or real processes:
//	                        // runs only with -tags integration
//
// `go test -short ./...` is the fast tier (unit and property tests);
// `go test ./...` adds the audits and sweeps; `make test` and CI run
// `go test -tags duckdb_arrow,integration ./...`, which is everything.
// A skipped test keeps every assertion: it only runs in another tier.
package testtier

import "testing"

// Long skips t under -short: statistical audits (many samples of a
// mechanism against its privacy bound) and long sweeps run in the full
// run (`go test ./...`, `make test`) only.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test (statistical audit or sweep): skipped under -short; runs in go test without -short and make test")
	}
}

// Integration skips t unless the tests were built with the integration
// tag: tests that drive Python/jupyter_client, Chromium and Node, or
// start real servers, kernels and worker processes. make test and CI set
// the tag.
func Integration(t testing.TB) {
	t.Helper()
	if !integration {
		t.Skip("integration test: needs -tags integration (make test sets it)")
	}
}

// Enabled reports whether the integration tag is set, for a TestMain that
// must not build the integration environment without it.
func Enabled() bool { return integration }
