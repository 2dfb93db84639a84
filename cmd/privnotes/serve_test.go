package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
)

// server is a real `privnotes serve` process (this test binary, which
// TestMain dispatches as the command line says).
type server struct {
	cmd  *exec.Cmd
	addr string
	log  *lockedBuffer
}

var ledgerRow = regexp.MustCompile(`(?m)^\d+ `)

// recordRows counts the rows of ledger show's table other than seal
// records, which ledger show lists too (one after each stored release).
func recordRows(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if ledgerRow.MatchString(l) && !strings.Contains(l, "seal of record") {
			n++
		}
	}
	return n
}

var listening = regexp.MustCompile(`listening on (\S+) \(mutual TLS\)`)

func startServe(t *testing.T, state, tls, addr string, extra ...string) *server {
	t.Helper()
	var s *server
	for try := 0; try < 50; try++ { // a restart on the same port may wait for the old socket
		s = &server{log: &lockedBuffer{}}
		s.cmd = exec.Command(os.Args[0], append([]string{"serve", "--state", state, "--listen", addr, "--tls-dir", tls}, extra...)...)
		s.cmd.Env = append(os.Environ(), cellChildEnv+"=1")
		s.cmd.Stderr = s.log
		out, err := s.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if m := listening.FindStringSubmatch(line); m != nil {
			s.addr = m[1]
			t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
			return s
		}
		s.cmd.Wait()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("privnotes serve did not start: %s", s.log)
	return nil
}

// clearServerEnv unsets the client's server settings, so that a test sees
// only the flags it passes.
func clearServerEnv(t *testing.T) {
	for _, k := range []string{envServers, envTLSDir, envTimeout} {
		t.Setenv(k, "")
	}
}

// newServeDir clears the server settings and returns a temporary directory
// with a first deployment's certificates in its tls subdirectory.
func newServeDir(t *testing.T) (dir, tls string) {
	clearServerEnv(t)
	dir = t.TempDir()
	tls = filepath.Join(dir, "tls")
	if code, _, errs := runCLI("certs", "init", tls, "--hosts", "127.0.0.1,localhost"); code != 0 {
		t.Fatalf("certs init: %s", errs)
	}
	return dir, tls
}

// tabCSV writes the 100-row table (a, b) the serve tests register.
func tabCSV(t *testing.T, dir string) string {
	var b strings.Builder
	b.WriteString("a,b\n")
	for i := range 100 {
		fmt.Fprintf(&b, "%d,%d\n", i%7, i%3)
	}
	return writeCSV(t, dir, "tab.csv", b.String())
}

// kill ends the server as a crash would (SIGKILL).
func (s *server) kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// TestServeProcesses runs scripts and a REPL against real server
// processes on loopback: remote calls with the receipts of the servers'
// ledgers, a killed server (ProviderFailed naming it; the session stays
// usable), a restart that continues from its ledger, missing and wrong
// credentials (a clear error, nothing charged).
func TestServeProcesses(t *testing.T) {
	testtier.Integration(t)
	dir, tls := newServeDir(t)
	var states [2]string
	csv := tabCSV(t, dir)
	var srv [2]*server
	for i := range states {
		states[i] = filepath.Join(dir, fmt.Sprintf("p%d", i+1))
		if code, _, errs := runCLI("dataset", "add", "tab", "--csv", csv, "--eps", "2", "--delta", "1e-5", "--clip", "10", "--accountant", "basic", "--state", states[i]); code != 0 {
			t.Fatalf("dataset add: %s", errs)
		}
		srv[i] = startServe(t, states[i], tls, "127.0.0.1:0")
	}
	servers := fmt.Sprintf("p1=%s,p2=%s", srv[0].addr, srv[1].addr)
	script := writeCSV(t, dir, "remote.pn", `a := private_count(dataset("tab", server="p1"), eps=0.25)
b := private_count(dataset("tab", server="p2"), eps=0.5)
fmt.Println(a)
fmt.Println(b)
`)
	client := filepath.Join(dir, "client-state") // holds no data
	run := func(extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runScript(append([]string{script, "--state", client}, extra...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := run("--servers", servers, "--tls-dir", tls)
	if code != 0 || !strings.Contains(out, "ledger record 2; remaining ε=1.75") || !strings.Contains(out, "ledger record 2; remaining ε=1.5") {
		t.Fatalf("remote run: exit %d\n%s\n%s", code, out, errs)
	}
	charges := func(state string) int {
		_, out, _ := runCLI("ledger", "show", "--dataset", "tab", "--state", state)
		return recordRows(out) - 1 // less the registration
	}
	if c1, c2 := charges(states[0]), charges(states[1]); c1 != 1 || c2 != 1 {
		t.Errorf("server ledgers: %d and %d charges, want 1 each", c1, c2)
	}

	// p2 dies: the call on p1 stands, p2's fails naming it.
	srv[1].kill()
	t.Setenv(envTimeout, "2s")
	code, out, errs = run("--servers", servers, "--tls-dir", tls)
	want := fmt.Sprintf("ProviderFailed: p2 (%s) did not answer within 2s; nothing was charged; the 1 charge(s) this cell made before this call stand", srv[1].addr)
	t.Logf("p2 killed: %s", errs)
	if code == 0 || !strings.Contains(errs, want) {
		t.Errorf("p2 down: exit %d, stderr %q, want %q", code, errs, want)
	}
	// A REPL session goes on after the failure.
	var rout, rerr bytes.Buffer
	runRepl([]string{"--state", client, "--servers", servers, "--tls-dir", tls}, strings.NewReader(
		"x := private_count(dataset(\"tab\", server=\"p2\"), eps=0.25)\ny := private_count(dataset(\"tab\", server=\"p1\"), eps=0.25)\nfmt.Println(\"p1 answered:\", y.Receipt.LedgerID > 0)\n"), &rout, &rerr)
	if !strings.Contains(rerr.String(), "ProviderFailed: p2") || !strings.Contains(rout.String(), "p1 answered: true") {
		t.Errorf("repl after a failure:\n%s\n%s", rout.String(), rerr.String())
	}

	// p2 restarts on its port and continues from its ledger.
	srv[1] = startServe(t, states[1], tls, srv[1].addr)
	code, out, errs = run("--servers", servers, "--tls-dir", tls)
	if code != 0 || !strings.Contains(out, "ledger record 4; remaining ε=1") { // p2: register, charge, its seal, this charge
		t.Errorf("after the restart: exit %d\n%s\n%s", code, out, errs)
	}
	before := [2]int{charges(states[0]), charges(states[1])}

	// Credentials: none, or another CA's.
	empty := t.TempDir()
	if code, _, errs := run("--servers", servers, "--tls-dir", empty); code != exitUsage || !strings.Contains(errs, "certs init") {
		t.Errorf("no credentials: exit %d, %s", code, errs)
	}
	other := filepath.Join(dir, "other")
	if code, _, errs := runCLI("certs", "init", other, "--hosts", "127.0.0.1"); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs = run("--servers", servers, "--tls-dir", other)
	t.Logf("another CA: %s", errs)
	if code == 0 || !strings.Contains(errs, "authentication failed") {
		t.Errorf("another CA's credentials: exit %d, %s", code, errs)
	}
	if after := [2]int{charges(states[0]), charges(states[1])}; after != before {
		t.Errorf("refused clients changed the ledgers: %v, then %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(client, "state.db")); err == nil {
		if _, out, _ := runCLI("ledger", "show", "--state", client); ledgerRow.MatchString(out) {
			t.Errorf("the client's own ledger has charges:\n%s", out)
		}
	}
}

// TestServersFlags: bad client configurations are refused before
// anything runs.
func TestServersFlags(t *testing.T) {
	clearServerEnv(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--servers", "p1"}, "not NAME=HOST:PORT"},
		{[]string{"--servers", "p1=localhost"}, "not HOST:PORT"},
		{[]string{"--servers", "p1=a:1,p1=b:2"}, "named twice"},
		{[]string{"--servers", "p1=a:1"}, "needs --tls-dir"},
		{[]string{"--tls-dir", "x"}, "without --servers"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := runScript(append([]string{"-", "--state", t.TempDir()}, c.args...), strings.NewReader("1"), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestInstallRecordsServers: install writes the servers and the TLS
// directory into kernel.json, whose environment the kernel starts with.
func TestInstallRecordsServers(t *testing.T) {
	clearServerEnv(t)
	dir := t.TempDir()
	tls := filepath.Join(dir, "tls")
	if code, _, errs := runCLI("certs", "init", tls, "--hosts", "127.0.0.1"); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs := runCLI("install", "--prefix", dir, "--servers", "p1=127.0.0.1:7001", "--tls-dir", tls)
	if code != 0 {
		t.Fatalf("install: %d %s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "share", "jupyter", "kernels", "privnotes", "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct{ Env map[string]string }
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Env[envServers] != "p1=127.0.0.1:7001" || spec.Env[envTLSDir] != tls {
		t.Errorf("kernel.json env %v", spec.Env)
	}
	if code, _, errs := runCLI("install", "--prefix", dir, "--servers", "p1=127.0.0.1:7001", "--tls-dir", filepath.Join(dir, "none")); code != 2 || !strings.Contains(errs, "certs init") {
		t.Errorf("install with a TLS directory without credentials: %d %s", code, errs)
	}
}

// TestDatasetUnknownServer: a server name the session does not know is a
// DatasetError saying which servers there are, or how to configure them.
func TestDatasetUnknownServer(t *testing.T) {
	clearServerEnv(t)
	tls := filepath.Join(t.TempDir(), "tls")
	if code, _, errs := runCLI("certs", "init", tls, "--hosts", "127.0.0.1"); code != 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		args []string
		want string
	}{
		{nil, `DatasetError: dataset: server "p9": no data servers are configured, so "p9" names none (start the kernel, repl or run with --servers`},
		{[]string{"--servers", "p1=127.0.0.1:1,p2=127.0.0.1:2", "--tls-dir", tls}, `DatasetError: dataset: server "p9": no server is named "p9"; the configured servers are p1, p2`},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := runScript(append([]string{"-", "--state", t.TempDir()}, c.args...), strings.NewReader(`ds := dataset("tab", server="p9")`+"\n"), &out, &errb)
		if code != exitError || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestServeNamedReplay: a named call on a remote dataset is stored in the
// server's ledger, and the same call from a later client process replays
// it from there (nothing charged, the same number), with the release hash
// and the replay carried back over the wire.
func TestServeNamedReplay(t *testing.T) {
	testtier.Integration(t)
	dir, tls := newServeDir(t)
	csv := tabCSV(t, dir)
	state := filepath.Join(dir, "p1")
	if code, _, errs := runCLI("dataset", "add", "tab", "--csv", csv, "--eps", "2", "--delta", "1e-5", "--clip", "10", "--state", state); code != 0 {
		t.Fatalf("dataset add: %s", errs)
	}
	srv := startServe(t, state, tls, "127.0.0.1:0")
	script := writeCSV(t, dir, "named.pn", `c := private_count(dataset("tab", server="p1"), eps=0.25, name="n")
fmt.Println(c.Value, c.Receipt.Replayed, len(c.Receipt.ReleaseHash), c.Receipt.Name)
`)
	run := func() string {
		var out, errb bytes.Buffer
		code := runScript([]string{script, "--state", t.TempDir(), "--servers", "p1=" + srv.addr, "--tls-dir", tls}, nil, &out, &errb)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	first, again := run(), run()
	value, rest, _ := strings.Cut(first, " ")
	if rest != "false 64 n" {
		t.Errorf("first call: %q, want a fresh release with a 64-hex release hash", first)
	}
	if again != value+" true 64 n" {
		t.Errorf("second call: %q, want %q replayed", again, value+" true 64 n")
	}
	_, out, _ := runCLI("ledger", "show", "--dataset", "tab", "--state", state)
	if n := recordRows(out) - 1; n != 1 {
		t.Errorf("server ledger: %d charges after a call and its replay, want 1:\n%s", n, out)
	}
}

// TestServeAuthz runs server processes with --authz files and analysts
// with their own certificates (privnotes certs client): bob is granted
// "part" on p1 and p2 but not on p3, so his federated call fails at the
// plan, before any member is charged; alice's runs; carol, signed by the
// same CA but listed nowhere, is refused; a malformed file stops the
// server at start naming its line.
func TestServeAuthz(t *testing.T) {
	testtier.Integration(t)
	e := newFedEnv(t, [3]string{"20", "20", "20"})
	for _, name := range []string{"alice", "bob", "carol"} {
		if code, out, errs := runCLI("certs", "client", e.tls, "--name", name); code != 0 || !strings.Contains(out, "clients/"+name) {
			t.Fatalf("certs client %s: exit %d, %s%s", name, code, out, errs)
		}
	}
	if code, _, errs := runCLI("certs", "client", e.tls, "--name", "alice"); code == 0 || !strings.Contains(errs, "already exists") {
		t.Errorf("issuing alice twice: exit %d, %s", code, errs)
	}
	grants := [3]string{"alice part\nbob part\n", "alice part  # analysts\nbob part\n", "alice *\nbob other\n"}
	// p3's grant of "other" names a dataset it does not hold: a warning.
	for i := range e.srv {
		file := writeCSV(t, e.dir, fmt.Sprintf("authz%d", i+1), grants[i])
		e.srv[i].kill()
		e.srv[i] = startServe(t, e.states[i], e.tls, "127.0.0.1:0", "--authz", file)
	}
	// The warning goes to stderr, which the test copies in on its own
	// goroutine: wait for it rather than race the copy.
	const warning = `grants client "bob" dataset "other", which is not registered here`
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(e.srv[2].log.String(), warning) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if log := e.srv[2].log.String(); !strings.Contains(log, warning) {
		t.Errorf("p3 did not warn of its grant of an unregistered dataset: %s", log)
	}
	as := func(who, script string) (int, string, string) {
		path := writeCSV(t, e.dir, fmt.Sprintf("s%d.pn", time.Now().UnixNano()), script)
		var out, errb bytes.Buffer
		code := runScript([]string{path, "--state", e.client, "--servers", e.servers(), "--tls-dir", filepath.Join(e.tls, "clients", who)}, nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	fedPCA := fedOpen + `r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=3)
fmt.Println(r.Receipt)
`
	code, out, errs := as("bob", fedPCA)
	t.Logf("bob's federated call: %s", errs)
	if code == 0 || !strings.Contains(errs, "ProviderFailed: p3") || !strings.Contains(errs, `client "bob" may not use dataset "part"`) {
		t.Errorf("bob's federated call: exit %d\n%s\n%s", code, out, errs)
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 0 {
			t.Errorf("p%d has %d charges after a call one member refused, want 0", i+1, c)
		}
	}
	code, out, errs = as("bob", `fmt.Println(private_count(dataset("part", server="p1"), eps=0.1))
`)
	if code != 0 || !strings.Contains(out, "ledger record") {
		t.Errorf("bob on p1: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = as("alice", fedPCA)
	if code != 0 || !strings.Contains(out, "p3:part: charged") {
		t.Errorf("alice's federated call: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = as("carol", `x := private_count(dataset("part", server="p1"), eps=0.1)
`)
	if code == 0 || !strings.Contains(errs, `client "carol" is not listed`) {
		t.Errorf("carol: exit %d, %s", code, errs)
	}
	if c := [3]int{e.charges(t, 0), e.charges(t, 1), e.charges(t, 2)}; c != [3]int{2, 1, 1} {
		t.Errorf("charges %v, want bob's count and alice's call at p1, alice's call at p2 and p3", c)
	}

	bad := writeCSV(t, e.dir, "bad-authz", "alice part\nbob\n")
	code, _, errs = runCLI("serve", "--state", e.states[0], "--listen", "127.0.0.1:0", "--tls-dir", e.tls, "--authz", bad)
	if code == 0 || !strings.Contains(errs, "line 2") || !strings.Contains(errs, "granted no dataset") {
		t.Errorf("a malformed authz file: exit %d, %s", code, errs)
	}
}

// TestServeMatrix: private_low_rank and private_pca(method="ppm-entry") on
// a matrix dataset of a server return the result types a local call
// returns, from a script.
func TestServeMatrix(t *testing.T) {
	testtier.Integration(t)
	dir, tls := newServeDir(t)
	sym := writeCSV(t, dir, "sym.txt", "2 1 0\n1 3 0.5\n0 0.5 -1\n")
	rect := writeCSV(t, dir, "rect.txt", "1 0\n0 2\n0.5 0.5\n")
	srvState, local := filepath.Join(dir, "p1"), filepath.Join(dir, "local")
	for _, state := range []string{srvState, local} {
		for _, reg := range [][]string{{"m", "--matrix", sym}, {"r", "--matrix", rect, "--rectangular"}} {
			if code, _, errs := runCLI(append(append([]string{"dataset", "add"}, reg...), "--entry-bound", "3", "--eps", "20", "--delta", "1e-5", "--state", state)...); code != 0 {
				t.Fatalf("dataset add %v: %s", reg, errs)
			}
		}
	}
	srv := startServe(t, srvState, tls, "127.0.0.1:0")
	script := func(server string) string {
		return fmt.Sprintf(`for _, name := range []string{"m", "r"} {
	ds := dataset(name%[1]s)
	lr := private_low_rank(ds, k=1, eps=1, delta=1e-6)
	r1, c1 := lr.Matrix.Dims()
	p := private_pca(ds, k=1, eps=1, delta=1e-6, method="ppm-entry")
	r2, c2 := p.Components.Dims()
	fmt.Printf("%%s: %%T %%dx%%d right %%v; %%T %%dx%%d right %%v\n", name, lr, r1, c1, lr.Right != nil, p, r2, c2, p.Right != nil)
}
`, server)
	}
	run := func(src string, extra ...string) string {
		path := writeCSV(t, dir, fmt.Sprintf("s%d.pn", time.Now().UnixNano()), src)
		var out, errb bytes.Buffer
		if code := runScript(append([]string{path}, extra...), nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
		}
		return out.String()
	}
	remote := run(script(`, server="p1"`), "--state", filepath.Join(dir, "client"), "--servers", "p1="+srv.addr, "--tls-dir", tls)
	loc := run(script(""), "--state", local)
	t.Logf("remote:\n%s", remote)
	if remote != loc || !strings.Contains(remote, "r: *runtime.LowRankResult 3x2 right true; *runtime.PCAResult 3x1 right true") {
		t.Errorf("remote results\n%s\nlocal results\n%s", remote, loc)
	}
}

// TestBenchTransport: bench --transport grpc runs both federated workloads
// (tiny settings) and prints the in-process and grpc rows with a ratio; a
// workload it does not time is refused.
func TestBenchTransport(t *testing.T) {
	testtier.Long(t)
	for _, w := range []struct{ workload, n, d string }{{"dpspca", "60", "12"}, {"fedrep", "20", "5"}} {
		code, out, errs := runCLI("bench", "--workload", w.workload, "--transport", "grpc", "--providers", "2", "--reps", "1", "--n", w.n, "--d", w.d, "--k", "1")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", w.workload, code, errs)
		}
		for _, row := range []string{w.workload + " ", "in-process", "grpc (loopback, mTLS)", "private_count"} {
			if !strings.Contains(out, row) {
				t.Errorf("%s: no %q row:\n%s", w.workload, row, out)
			}
		}
	}
	if code, _, errs := runCLI("bench", "--workload", "quantile", "--transport", "grpc"); code != 2 || !strings.Contains(errs, "dpspca or fedrep") {
		t.Errorf("an untimed workload: exit %d, %s", code, errs)
	}
}
