package pgsource_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/privnotes/privnotes/internal/testtier"
)

// pgBin is where Debian's postgresql-15 puts its programs (PG_BIN
// overrides it).
func pgBin() string {
	if b := os.Getenv("PG_BIN"); b != "" {
		return b
	}
	return "/usr/lib/postgresql/15/bin"
}

// server is a throwaway PostgreSQL cluster on a free loopback port, its
// superuser postgres with password superPassword, password (scram)
// authentication over TCP.
type server struct {
	bin, dir, data string
	port           int
	asUser         []string // the command prefix that runs as the cluster's owner
}

const superPassword = "super-secret"

// startServer starts a cluster for t and stops it in Cleanup. Without the
// binaries the test skips, except in CI (CI=true), where a missing
// PostgreSQL is a failure: .ci/run installs it.
// A server process belongs to the integration tier (docs/testing.md).
func startServer(t testing.TB) *server {
	t.Helper()
	testtier.Integration(t) // starts a server process
	bin := pgBin()
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL 15 is not installed at %s (apt-get install -y postgresql): %v", bin, err)
		}
		t.Skipf("PostgreSQL 15 is not installed at %s (apt-get install -y postgresql, or set PG_BIN)", bin)
	}
	// The cluster's files are outside t.TempDir (mode 0700, root's when
	// the tests run as root): initdb refuses to run as root, so it runs
	// as the unprivileged postgres user there.
	dir, err := os.MkdirTemp("", "pgsource-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &server{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to run the cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(superPassword+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.run(t, "initdb", "-D", s.data, "-U", "postgres", "--pwfile", pw, "--auth-local", "trust", "--auth-host", "scram-sha-256", "--no-sync")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.start(t)
	t.Cleanup(func() { s.stop(t) })
	return s
}

// run runs one of the cluster's programs as its owner.
func (s *server) run(t testing.TB, prog string, args ...string) {
	t.Helper()
	argv := append(append(append([]string{}, s.asUser...), filepath.Join(s.bin, prog)), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", prog, err, out)
	}
}

func (s *server) start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, s.dir)
	s.run(t, "pg_ctl", "-D", s.data, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "start")
}

// stop stops the server at once (no checkpoint: its data are throwaway).
func (s *server) stop(t testing.TB) {
	t.Helper()
	argv := append(append(append([]string{}, s.asUser...), filepath.Join(s.bin, "pg_ctl")), "-D", s.data, "-m", "immediate", "-w", "stop")
	exec.Command(argv[0], argv[1:]...).Run() // already stopped is fine
}

// url is the server's URL for user (without a password).
func (s *server) url(user string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", user, s.port)
}

// exec runs statements as the superuser.
func (s *server) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(s.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = superPassword
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", strings.SplitN(sql, "\n", 2)[0], err)
	}
}

// copyCSV loads csv (with a header line) into table as the superuser.
func (s *server) copyCSV(t testing.TB, table, csv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, _ := pgx.ParseConfig(s.url("postgres"))
	cfg.Password = superPassword
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(csv), "COPY "+table+" FROM STDIN WITH (FORMAT csv, HEADER true)"); err != nil {
		t.Fatal(err)
	}
}
