package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/privnotes/privnotes/kernel/wire"
)

// hang bounds the waits of the tests in this file for events (a reply, a
// command's end). It is no requirement: it only turns a hang into a
// failure, with room for a loaded 2-core machine many times over.
const hang = 60 * time.Second

// lockedBuffer is a bytes.Buffer safe for a command's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until s() contains want.
func waitFor(t *testing.T, what string, s func() string, want string) {
	t.Helper()
	for deadline := time.Now().Add(hang); !strings.Contains(s(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s has no %q within %v:\n%s", what, want, hang, s())
		}
	}
}

// asWorkerParent makes the worker processes a kernel started in this test
// run "privnotes worker" in the test binary (its TestMain dispatches the
// command line of a child marked with cellChildEnv), not the tests.
func asWorkerParent(t *testing.T) {
	t.Setenv(cellChildEnv, "1")
}

// connectionFile writes a connection file on free ports of 127.0.0.1.
func connectionFile(t *testing.T, dir string) (path string, conn map[string]any) {
	t.Helper()
	conn = map[string]any{"transport": "tcp", "ip": "127.0.0.1", "key": "test-key", "signature_scheme": "hmac-sha256"}
	// All listeners stay open until the five ports are chosen, so that no
	// port is handed out twice.
	var ls []net.Listener
	for _, ch := range []string{"shell", "control", "stdin", "iopub", "hb"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		conn[ch+"_port"] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	b, _ := json.Marshal(conn)
	path = filepath.Join(dir, "kernel.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, conn
}

func TestKernelCommandUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // prefix of stderr
	}{
		{"no connection file", []string{"kernel"}, 2, "Usage: privnotes kernel [--state DIR] CONNECTION_FILE\n"},
		{"two files", []string{"kernel", "a.json", "b.json"}, 2, "Usage: privnotes kernel [--state DIR] CONNECTION_FILE\n"},
		{"flag and argument", []string{"kernel", "--connection-file", "a.json", "b.json"}, 2, "Usage: privnotes kernel [--state DIR] CONNECTION_FILE\n"},
		{"bad flag", []string{"kernel", "--bogus", "a.json"}, 2, "flag provided but not defined: -bogus\nUsage: privnotes kernel"},
		{"help", []string{"kernel", "-h"}, 0, "Usage: privnotes kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runCLI(append(tt.args[:1:1], append([]string{"--state", dir}, tt.args[1:]...)...)...)
			if code != tt.code || out != "" || !strings.HasPrefix(stderr, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and stderr starting %q", code, out, stderr, tt.code, tt.stderr)
			}
		})
	}
}

// TestKernelCommandBadConnectionFile: a connection file that is missing,
// not JSON, or asks for what the kernel does not do ends the command
// with status 1 and one line that names the file and the problem, before
// any worker is started.
func TestKernelCommandBadConnectionFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"transport": "tcp", "ip": "127.0.0.1", "shell_port": 1, "control_port": 2, "stdin_port": 3, "iopub_port": 4, "hb_port": 5, "key": "k", "signature_scheme": "hmac-sha256"}`
	missing := filepath.Join(dir, "missing.json")
	notJSON := write("not.json", "shell_port=1\n")
	udp := write("udp.json", strings.Replace(good, `"tcp"`, `"udp"`, 1))
	md5 := write("md5.json", strings.Replace(good, "hmac-sha256", "hmac-md5", 1))
	noIP := write("noip.json", strings.Replace(good, `"127.0.0.1"`, `""`, 1))
	tests := []struct {
		file, want string
	}{
		{missing, "privnotes kernel: connection file: open " + missing + ": no such file or directory\n"},
		{notJSON, "privnotes kernel: connection file " + notJSON + " is not valid JSON: invalid character 's' looking for beginning of value\n"},
		{udp, "privnotes kernel: connection file " + udp + `: transport "udp" is not supported (use "tcp" or "ipc")` + "\n"},
		{md5, "privnotes kernel: connection file " + md5 + `: signature_scheme "hmac-md5" is not supported (use "hmac-sha256")` + "\n"},
		{noIP, "privnotes kernel: connection file " + noIP + ": no ip\n"},
	}
	for _, tt := range tests {
		code, out, stderr := runCLI("kernel", "--state", filepath.Join(dir, "state"), tt.file)
		if code != 1 || out != "" || stderr != tt.want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", filepath.Base(tt.file), code, out, stderr, tt.want)
		}
	}
	// The same with --connection-file.
	if code, _, stderr := runCLI("kernel", "--state", filepath.Join(dir, "state"), "--connection-file", udp); code != 1 || !strings.Contains(stderr, `transport "udp" is not supported`) {
		t.Errorf("--connection-file: exit %d, %q", code, stderr)
	}
}

// TestKernelCommandBadState: a state directory that cannot be created, or
// a history file that cannot be opened, ends the command with status 1
// and a line saying what failed.
func TestKernelCommandBadState(t *testing.T) {
	dir := t.TempDir()
	connFile, _ := connectionFile(t, dir)
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("kernel", "--state", filepath.Join(file, "state"), connFile)
	// the same words as repl and run (usage_errors_test.go)
	want := "privnotes kernel: creating state directory: mkdir " + file + ": not a directory\n"
	if code != 1 || stderr != want {
		t.Errorf("state under a file: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	state := filepath.Join(dir, "state")
	hist := filepath.Join(state, "kernel-history.jsonl")
	if err := os.MkdirAll(hist, 0o700); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("kernel", "--state", state, connFile)
	want = "privnotes kernel: history: open " + hist + ": is a directory\n"
	if code != 1 || stderr != want {
		t.Errorf("history is a directory: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}

// TestKernelCommandBusyPort: a port of the connection file taken by
// another program ends the command with status 1 naming the channel; the
// worker it had started is stopped.
func TestKernelCommandBusyPort(t *testing.T) {
	asWorkerParent(t)
	dir := t.TempDir()
	connFile, conn := connectionFile(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn["hb_port"] = l.Addr().(*net.TCPAddr).Port
	b, _ := json.Marshal(conn)
	if err := os.WriteFile(connFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var code int
	var stderr string
	go func() {
		code, _, stderr = runCLI("kernel", "--state", filepath.Join(dir, "state"), connFile)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(hang):
		t.Fatalf("the kernel command did not end within %v with a busy port", hang)
	}
	if code != 1 || !strings.Contains(stderr, "privnotes kernel: kernel: bind hb channel: ") || !strings.Contains(stderr, "address already in use") {
		t.Errorf("exit %d, stderr %q; want 1 and the hb channel's bind error", code, stderr)
	}
}

// kclient is a minimal Jupyter client of a kernel command.
type kclient struct {
	t              *testing.T
	signer         *wire.Signer
	shell, control zmq4.Socket
	iopub          zmq4.Socket
	shellIn, ctlIn chan *wire.Message
	iopubIn        chan *wire.Message
}

func dialKernel(t *testing.T, conn map[string]any) *kclient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &kclient{t: t, signer: wire.NewSigner([]byte(conn["key"].(string))),
		shellIn: make(chan *wire.Message, 100), ctlIn: make(chan *wire.Message, 100), iopubIn: make(chan *wire.Message, 1000)}
	opts := []zmq4.Option{zmq4.WithDialerRetry(10 * time.Millisecond)}
	dial := func(s zmq4.Socket, ch string) zmq4.Socket {
		addr := "tcp://127.0.0.1:" + strings.TrimSpace(mustJSON(conn[ch+"_port"]))
		for deadline := time.Now().Add(hang); ; time.Sleep(10 * time.Millisecond) {
			if err := s.Dial(addr); err == nil {
				return s
			} else if time.Now().After(deadline) {
				t.Fatalf("dial %s: %v", addr, err)
			}
		}
	}
	c.shell = dial(zmq4.NewDealer(ctx, append(opts, zmq4.WithID(zmq4.SocketIdentity("shell-client")))...), "shell")
	c.control = dial(zmq4.NewDealer(ctx, append(opts, zmq4.WithID(zmq4.SocketIdentity("control-client")))...), "control")
	c.iopub = dial(zmq4.NewSub(ctx, opts...), "iopub")
	c.iopub.SetOption(zmq4.OptionSubscribe, "")
	pump := func(s zmq4.Socket, out chan *wire.Message, topic bool) {
		for {
			m, err := s.Recv()
			if err != nil {
				return
			}
			frames := m.Frames
			if topic {
				frames = frames[1:]
			}
			if pm, err := c.signer.Parse(frames); err == nil {
				out <- pm
			}
		}
	}
	go pump(c.shell, c.shellIn, false)
	go pump(c.control, c.ctlIn, false)
	go pump(c.iopub, c.iopubIn, true)
	return c
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func (c *kclient) send(sock zmq4.Socket, msgType string, content any) string {
	c.t.Helper()
	b, _ := json.Marshal(content)
	m := &wire.Message{Header: wire.NewHeader(msgType, "test-session", "tester"), Content: b}
	frames, err := c.signer.Serialize(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
	return m.Header.MsgID
}

func kparent(m *wire.Message) string {
	var h wire.Header
	json.Unmarshal(m.Parent, &h)
	return h.MsgID
}

// wait returns the content of the first message of ch with parent id and
// type msgType.
func (c *kclient) wait(ch chan *wire.Message, id, msgType string) map[string]any {
	c.t.Helper()
	deadline := time.After(hang)
	for {
		select {
		case m := <-ch:
			if kparent(m) == id && m.Header.MsgType == msgType {
				var content map[string]any
				json.Unmarshal(m.Content, &content)
				return content
			}
		case <-deadline:
			c.t.Fatalf("no %s to %s within %v", msgType, id, hang)
			return nil
		}
	}
}

// TestKernelCommandServes runs "privnotes kernel" in process with the real
// worker (the test binary as "privnotes worker"): it answers, runs a cell
// in the interpreter, turns SIGINT into an interrupt of the running cell
// (the cell loops for ever, so its Interrupted reply shows the signal
// reached it), and shuts down on SIGTERM with status 0.
func TestKernelCommandServes(t *testing.T) {
	asWorkerParent(t)
	// A SIGINT or SIGTERM that reached this process with no handler of the
	// command installed would kill the test binary; this one keeps it
	// alive (the signals are only sent once the command answers, after it
	// installed its own).
	keep := make(chan os.Signal, 16)
	signal.Notify(keep, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(keep)

	dir := t.TempDir()
	connFile, conn := connectionFile(t, dir)
	state := filepath.Join(dir, "state")
	stderr := &lockedBuffer{}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runKernel([]string{"--state", state, connFile}, &stdout, stderr) }()
	c := dialKernel(t, conn)

	// kernel_info until IOPub is connected too (a status arrives).
	var info map[string]any
	for deadline := time.Now().Add(hang); info == nil; {
		id := c.send(c.shell, "kernel_info_request", map[string]any{})
		select {
		case m := <-c.shellIn:
			if kparent(m) == id {
				json.Unmarshal(m.Content, &info)
			}
		case code := <-done:
			t.Fatalf("the kernel command ended with %d during start-up:\n%s", code, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kernel_info_reply within %v:\n%s", hang, stderr.String())
		}
	}
	if info["implementation"] != "privnotes" || info["implementation_version"] != version {
		t.Errorf("kernel_info %v", info)
	}
	// The banner says which state directory (registry, ledger) is in use.
	if b, _ := info["banner"].(string); !strings.Contains(b, "\nState directory: "+state+" (") {
		t.Errorf("the banner does not name the state directory %s:\n%s", state, b)
	}

	id := c.send(c.shell, "execute_request", map[string]any{"code": "x := 21\nx * 2", "silent": false, "store_history": true})
	if r := c.wait(c.iopubIn, id, "execute_result"); r["data"].(map[string]any)["text/plain"] != "42" {
		t.Errorf("execute_result %v", r)
	}
	if r := c.wait(c.shellIn, id, "execute_reply"); r["status"] != "ok" {
		t.Errorf("execute_reply %v", r)
	}

	id = c.send(c.shell, "execute_request", map[string]any{"code": "for {\n}", "silent": false})
	c.wait(c.iopubIn, id, "execute_input")
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The loop never ends by itself, so any end of it is the interrupt's
	// doing: normally Interrupted; on a machine so loaded that the cell
	// took longer than the kernel's 2 s grace to stop, the worker is
	// restarted instead, which the error says.
	r := c.wait(c.shellIn, id, "execute_reply")
	restarted := r["ename"] == "InterpreterRestarted" && strings.Contains(fmt.Sprint(r["evalue"]), "did not stop within 2s of the interrupt")
	if r["status"] != "error" || (r["ename"] != "Interrupted" && !restarted) {
		t.Errorf("the looping cell after SIGINT: %v", r)
	}
	waitFor(t, "the kernel's log", stderr.String, "SIGINT: interrupting the running cell")
	if !restarted {
		id = c.send(c.shell, "execute_request", map[string]any{"code": "x", "silent": false})
		if r := c.wait(c.iopubIn, id, "execute_result"); r["data"].(map[string]any)["text/plain"] != "21" {
			t.Errorf("x after the interrupt: %v", r)
		}
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0:\n%s", code, stderr.String())
		}
	case <-time.After(hang):
		t.Fatalf("the kernel command did not end within %v of SIGTERM:\n%s", hang, stderr.String())
	}
	if !strings.Contains(stderr.String(), "terminated: shutting down") {
		t.Errorf("the log does not say why the kernel stopped:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(state, "kernel-history.jsonl")); err != nil {
		t.Errorf("no history in the state directory: %v", err)
	}
}
