// Package pgtest starts throwaway PostgreSQL 15 clusters for the tests
// of the packages that run private calls on live tables (dsl/pgsource,
// dsl/runtime's neighbouring-datasets harness).
//
// A cluster is a real server process, so its tests belong to the
// integration tier (docs/testing.md): Start skips them without the
// integration tag, and skips them locally when Debian's postgresql-15
// binaries are absent; under CI=true a missing PostgreSQL is a failure,
// because .ci/run installs it.
package pgtest

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

// SuperPassword is the password of a cluster's superuser postgres.
const SuperPassword = "super-secret"

// Bin is where Debian's postgresql-15 puts its programs ($PG_BIN
// overrides it).
func Bin() string {
	if b := os.Getenv("PG_BIN"); b != "" {
		return b
	}
	return "/usr/lib/postgresql/15/bin"
}

// Server is a throwaway PostgreSQL cluster on a free loopback port, its
// superuser postgres with password SuperPassword, password (scram)
// authentication over TCP.
type Server struct {
	bin, dir, data string
	port           int
	asUser         []string // the command prefix that runs as the cluster's owner
}

// Start starts a cluster for t and stops it in Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	testtier.Integration(t) // starts a server process
	bin := Bin()
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL 15 is not installed at %s (apt-get install -y postgresql): %v", bin, err)
		}
		t.Skipf("PostgreSQL 15 is not installed at %s (apt-get install -y postgresql, or set PG_BIN)", bin)
	}
	// The cluster's files are outside t.TempDir (mode 0700, root's when
	// the tests run as root): initdb refuses to run as root, so it runs
	// as the unprivileged postgres user there.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
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
	if err := os.WriteFile(pw, []byte(SuperPassword+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.run(t, "initdb", "-D", s.data, "-U", "postgres", "--pwfile", pw, "--auth-local", "trust", "--auth-host", "scram-sha-256", "--no-sync")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.Start(t)
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// run runs one of the cluster's programs as its owner.
func (s *Server) run(t testing.TB, prog string, args ...string) {
	t.Helper()
	argv := append(append(append([]string{}, s.asUser...), filepath.Join(s.bin, prog)), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", prog, err, out)
	}
}

// Start starts the server again after Stop.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, s.dir)
	s.run(t, "pg_ctl", "-D", s.data, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "start")
}

// Stop stops the server at once (no checkpoint: its data are throwaway).
// Stopping a stopped server is fine.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	argv := append(append(append([]string{}, s.asUser...), filepath.Join(s.bin, "pg_ctl")), "-D", s.data, "-m", "immediate", "-w", "stop")
	exec.Command(argv[0], argv[1:]...).Run() // already stopped is fine
}

// URL is the server's URL for user (without a password).
func (s *Server) URL(user string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", user, s.port)
}

// superConn connects as the superuser.
func (s *Server) superConn(t testing.TB, ctx context.Context) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = SuperPassword
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// Exec runs statements as the superuser.
func (s *Server) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := s.superConn(t, ctx)
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", strings.SplitN(sql, "\n", 2)[0], err)
	}
}

// CopyCSV loads csv (with a header line) into table as the superuser.
func (s *Server) CopyCSV(t testing.TB, table, csv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := s.superConn(t, ctx)
	defer conn.Close(ctx)
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(csv), "COPY "+table+" FROM STDIN WITH (FORMAT csv, HEADER true)"); err != nil {
		t.Fatalf("COPY %s: %v", table, err)
	}
}

// Errors are the ERROR lines of the server's log, with the statement
// that raised each, for failure messages: a statement that fails after
// the charge gives a data-independent release, so a test sees only that
// the release differs, and the log says why.
func (s *Server) Errors(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "log"))
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	var out []string
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, "ERROR:") {
			out = append(out, l)
			if i+1 < len(lines) && strings.Contains(lines[i+1], "STATEMENT:") {
				out = append(out, lines[i+1])
			}
		}
	}
	return strings.Join(out, "\n")
}
