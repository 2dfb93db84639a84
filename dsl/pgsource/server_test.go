package pgsource_test

import (
	"testing"

	"github.com/privnotes/privnotes/internal/pgtest"
)

// server is a throwaway PostgreSQL cluster (internal/pgtest, shared with
// dsl/runtime's neighbouring-datasets harness), with the method names
// this package's tests use.
type server struct{ *pgtest.Server }

// startServer starts a cluster for t and stops it in Cleanup; without
// the binaries it skips, except under CI=true (pgtest.Start).
func startServer(t testing.TB) *server {
	t.Helper()
	return &server{pgtest.Start(t)}
}

func (s *server) start(t testing.TB)     { s.Start(t) }
func (s *server) stop(t testing.TB)      { s.Stop(t) }
func (s *server) url(user string) string { return s.URL(user) }

// exec runs statements as the superuser.
func (s *server) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	s.Exec(t, sql, args...)
}

// copyCSV loads csv (with a header line) into table as the superuser.
func (s *server) copyCSV(t testing.TB, table, csv string) {
	t.Helper()
	s.CopyCSV(t, table, csv)
}
