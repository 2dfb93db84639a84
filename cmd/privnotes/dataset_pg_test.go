package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// dataset add --from postgres://… (or clickhouse://…, the same code
// path) refuses what it cannot register, and a
// server it cannot reach, before storing anything; a password never goes
// in the URL. (dsl/pgsource's tests register live tables on a server.)
func TestDatasetAddPostgresValidation(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	pw := writeCSV(t, dir, "pw", "secret\n")
	const down = "postgres://analyst@127.0.0.1:1/db?connect_timeout=2"
	const chDown = "clickhouse://analyst@127.0.0.1:1/db"
	budget := []string{"--eps", "1", "--delta", "1e-6"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no table", []string{"--from", down}, 2, "give the table with --table SCHEMA.TABLE"},
		{"table without url", []string{"--from", pw, "--table", "public.t"}, 2, "are for --from postgres://"},
		{"password in url", []string{"--from", "postgres://analyst:secret@127.0.0.1:1/db", "--table", "t"}, 2, "leave the password out of the URL"},
		{"password in query", []string{"--from", "postgresql://analyst@127.0.0.1:1/db?password=secret", "--table", "t"}, 2, "leave the password out of the URL"},
		{"two passwords", []string{"--from", down, "--table", "t", "--password-file", pw, "--password-env", "HOME"}, 2, "one of --password-file or --password-env"},
		{"unset variable", []string{"--from", down, "--table", "t", "--password-env", "PRIVNOTES_NO_SUCH_VARIABLE"}, 2, "the variable is not set"},
		{"label", []string{"--from", down, "--table", "t", "--label", "y", "--label-clip", "1"}, 2, "register a snapshot (--sql) for regression"},
		{"csv flags", []string{"--from", down, "--table", "t", "--header", "yes"}, 2, "are for files"},
		{"order of row-level data", []string{"--from", down, "--table", "t", "--order", "id"}, 2, "--order orders each user's rows"},
		{"bad table", []string{"--from", down, "--table", "a.b.c"}, 1, "give SCHEMA.TABLE"},
		{"server down", []string{"--from", down, "--table", "public.t", "--password-file", pw}, 1, "cannot be reached"},
		{"clickhouse: no table", []string{"--from", chDown}, 2, "give the table with --table DATABASE.TABLE"},
		{"clickhouse: password in url", []string{"--from", "clickhouse://analyst:secret@127.0.0.1:1/db", "--table", "t"}, 2, "leave the password out of the URL"},
		{"clickhouse: bad table", []string{"--from", chDown, "--table", "a.b.c"}, 1, "give DATABASE.TABLE"},
		// User-level data is registered as on PostgreSQL: the flags reach
		// the catalog's read, which fails here for the server alone.
		{"clickhouse: user-level", []string{"--from", chDown, "--table", "db.t", "--unit", "user:uid", "--order", "id", "--password-file", pw}, 1, "ClickHouse server cannot be reached"},
		{"clickhouse: order of row-level data", []string{"--from", chDown, "--table", "db.t", "--order", "id"}, 2, "--order orders each user's rows"},
		{"clickhouse: server down", []string{"--from", chDown, "--table", "db.t", "--password-file", pw}, 1, "ClickHouse server cannot be reached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"dataset", "add", "d", "--state", state}, tc.args...), budget...)
			code, _, stderr := runCLI(args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "secret") {
				t.Errorf("exit %d, stderr %q; want exit %d and %q, and no password", code, stderr, tc.code, tc.want)
			}
		})
	}
}
