// Package chtest starts throwaway ClickHouse servers for the tests of
// the packages that run private calls on live ClickHouse tables
// (dsl/chsource, the notebooks' quickstart-clickhouse).
//
// A server is a real process, so its tests belong to the integration
// tier (docs/testing.md): Start skips them without the integration tag,
// and skips them locally when clickhouse-server is absent; under CI=true
// a missing server is a failure, because .ci/run installs it.
package chtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
)

// serverBin is Debian's clickhouse-server (CH_SERVER overrides it).
func Bin() string {
	if b := os.Getenv("CH_SERVER"); b != "" {
		return b
	}
	return "/usr/sbin/clickhouse-server"
}

// Server is a throwaway ClickHouse server on free loopback ports whose
// cluster "two" has two shards, the databases shard1 and shard2 of the
// same server (remote_servers names each by its default database), so
// that a Distributed table over it runs every statement on two shards
// and merges their partial aggregates, as a real cluster does. Its
// users' queries, and the shards' part of them, are logged in
// system.query_log. Its users are default (SuperPassword) and analyst
// (AnalystPassword), both on loopback only.
type Server struct {
	dir string
	// HTTP and TCP are its loopback ports.
	HTTP, TCP int
	cmd       *exec.Cmd
	uid, gid  uint32
	asOther   bool
}

// SuperPassword is the password of the server's superuser default, and
// AnalystPassword that of its user analyst.
const (
	SuperPassword   = "super-secret"
	AnalystPassword = "analyst-pw"
)

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts a server for t and stops it in Cleanup. Without the
// binary the test skips, except in CI (CI=true), where a missing
// ClickHouse is a failure: .ci/run installs it.
func Start(t testing.TB) *Server {
	t.Helper()
	testtier.Integration(t) // starts a server process
	bin := Bin()
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ClickHouse is not installed at %s (apt-get install -y clickhouse-server): %v", bin, err)
		}
		t.Skipf("ClickHouse is not installed at %s (apt-get install -y clickhouse-server, or set CH_SERVER)", bin)
	}
	dir, err := os.MkdirTemp("", "chsource-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{dir: dir, HTTP: freePort(t), TCP: freePort(t)}
	if os.Geteuid() == 0 {
		// The server refuses nothing as root, but a database server
		// has no business running as root: the package's user.
		u, err := user.Lookup("clickhouse")
		if err != nil {
			t.Fatalf("running as root needs the clickhouse user to run the server: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.uid, s.gid, s.asOther = uint32(uid), uint32(gid), true
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	users := `<?xml version="1.0"?>
<yandex>
  <profiles><default><log_queries>1</log_queries></default></profiles>
  <quotas><default></default></quotas>
  <users>
    <default><password>` + SuperPassword + `</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
    <analyst><password>` + AnalystPassword + `</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></analyst>
  </users>
</yandex>
`
	shard := func(db string) string {
		return `<shard><replica><host>127.0.0.1</host><port>` + strconv.Itoa(s.TCP) + `</port><user>default</user><password>` + SuperPassword + `</password><default_database>` + db + `</default_database></replica></shard>`
	}
	config := `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>` + dir + `/server.log</log><errorlog>` + dir + `/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>` + strconv.Itoa(s.HTTP) + `</http_port>
  <tcp_port>` + strconv.Itoa(s.TCP) + `</tcp_port>
  <path>` + dir + `/data/</path>
  <tmp_path>` + dir + `/tmp/</tmp_path>
  <users_config>` + dir + `/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <remote_servers><two>` + shard("shard1") + shard("shard2") + `</two></remote_servers>
</yandex>
`
	for name, text := range map[string]string{"users.xml": users, "config.xml": config} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.Start(t)
	t.Cleanup(s.Stop)
	return s
}

// Start runs the server (again, after Stop) and waits until it answers.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(Bin(), "--config-file="+filepath.Join(s.dir, "config.xml"))
	s.cmd.Dir = s.dir
	if s.asOther {
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: s.uid, Gid: s.gid}}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/ping", s.HTTP))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
			t.Fatalf("the ClickHouse server did not answer within a minute: %v\n%s", err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop kills the server at once (its data are throwaway) and waits for
// it; already stopped is fine.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// URL is the server's clickhouse:// URL for user, database db.
func (s *Server) URL(user string) string {
	return fmt.Sprintf("clickhouse://%s@127.0.0.1:%d/db", user, s.HTTP)
}

// Exec runs one statement as the superuser, with body (if any) as the
// data of an INSERT.
func (s *Server) Exec(t testing.TB, stmt, body string) {
	t.Helper()
	s.post(t, stmt, body)
}

// Query runs a SELECT as the superuser and returns its TabSeparated
// result without the final newline.
func (s *Server) Query(t testing.TB, stmt string) string {
	t.Helper()
	return strings.TrimSuffix(s.post(t, stmt, ""), "\n")
}

// post sends stmt as the superuser and returns the response's body. A
// statement alone is the request's body (a long one would not fit in the
// URL); an INSERT's data is the body, after its statement in the URL.
func (s *Server) post(t testing.TB, stmt, body string) string {
	t.Helper()
	u := fmt.Sprintf("http://127.0.0.1:%d/", s.HTTP)
	if body == "" {
		body = stmt
	} else {
		u += "?" + url.Values{"query": {stmt}}.Encode()
	}
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("default", SuperPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%.200s: %s", stmt, b)
	}
	return string(b)
}
