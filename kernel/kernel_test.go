package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/enginetest"
	"github.com/privnotes/privnotes/kernel/wire"
)

// hang bounds every wait of these tests. It is no requirement and no
// measure of speed: it only turns a hang (a reply that never comes, a cell
// an interrupt did not stop, a kernel that does not exit) into a failure
// instead of a stuck test binary, with room for a loaded 2-core machine
// many times over. What a test proves comes from which event happened
// (the reply's status, the log line), never from how fast.
const hang = 60 * time.Second

// client is a minimal Jupyter client over zmq4, for in-process tests of the
// server with the fake engine (no worker process, no Python).
type client struct {
	t              *testing.T
	k              *Kernel
	log            *syncBuffer // the kernel's log
	signer         *wire.Signer
	shell, control zmq4.Socket
	stdin          zmq4.Socket
	iopub, hb      zmq4.Socket
	shellIn, ctlIn chan *wire.Message
	iopubIn        chan *wire.Message
	kernelDone     chan struct{}
	stopKernel     context.CancelFunc
}

// syncBuffer is a bytes.Buffer safe for the kernel's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitLog waits until the kernel's log contains want.
func (c *client) waitLog(want string) {
	c.t.Helper()
	for deadline := time.Now().Add(hang); !strings.Contains(c.log.String(), want); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the kernel's log has no %q within %v:\n%s", want, hang, c.log.String())
		}
	}
}

// freePorts returns n distinct free TCP ports of 127.0.0.1: all listeners
// stay open until every port is chosen, so the system cannot hand out one
// port twice (picking them one at a time, it could).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// testConn is a connection for an in-process kernel on free ports.
func testConn(t *testing.T) ConnectionInfo {
	t.Helper()
	p := freePorts(t, 5)
	return ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: "secret", SignatureScheme: "hmac-sha256",
		ShellPort: p[0], ControlPort: p[1], StdinPort: p[2], IOPubPort: p[3], HBPort: p[4]}
}

func startKernel(t *testing.T) *client {
	t.Helper()
	return startKernelWith(t, Config{Engine: enginetest.New()})
}

// startKernelWith starts a kernel with cfg (its Conn and Log are set here)
// and connects a client to it.
func startKernelWith(t *testing.T, cfg Config) *client {
	t.Helper()
	conn := testConn(t)
	logBuf := &syncBuffer{}
	cfg.Conn = conn
	cfg.Log = log.New(logBuf, "", 0)
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{t: t, k: k, log: logBuf, signer: wire.NewSigner([]byte(conn.Key)), kernelDone: make(chan struct{}), stopKernel: cancel,
		shellIn: make(chan *wire.Message, 100), ctlIn: make(chan *wire.Message, 100), iopubIn: make(chan *wire.Message, 1000)}
	var runErr error
	go func() { _, runErr = k.Run(ctx); close(c.kernelDone) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.kernelDone:
		case <-time.After(hang):
			t.Errorf("kernel did not stop within %v", hang)
		}
	})
	cctx, ccancel := context.WithCancel(context.Background())
	t.Cleanup(ccancel)
	dial := func(s zmq4.Socket, port int) zmq4.Socket {
		deadline := time.Now().Add(hang)
		for {
			err := s.Dial(conn.endpoint(port))
			if err == nil {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("dial %d: %v", port, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	opts := []zmq4.Option{zmq4.WithDialerRetry(10 * time.Millisecond)}
	c.shell = dial(zmq4.NewDealer(cctx, append(opts, zmq4.WithID(zmq4.SocketIdentity("shell-client")))...), conn.ShellPort)
	c.control = dial(zmq4.NewDealer(cctx, append(opts, zmq4.WithID(zmq4.SocketIdentity("control-client")))...), conn.ControlPort)
	c.iopub = dial(zmq4.NewSub(cctx, opts...), conn.IOPubPort)
	c.iopub.SetOption(zmq4.OptionSubscribe, "")
	c.hb = dial(zmq4.NewReq(cctx, opts...), conn.HBPort)
	c.stdin = dial(zmq4.NewDealer(cctx, append(opts, zmq4.WithID(zmq4.SocketIdentity("stdin-client")))...), conn.StdinPort)
	pump := func(s zmq4.Socket, out chan *wire.Message, skipTopic bool) {
		for {
			m, err := s.Recv()
			if err != nil {
				return
			}
			frames := m.Frames
			if skipTopic {
				frames = frames[1:]
			}
			pm, err := c.signer.Parse(frames)
			if err != nil {
				t.Errorf("kernel sent a message that does not verify: %v", err)
				continue
			}
			out <- pm
		}
	}
	go pump(c.shell, c.shellIn, false)
	go pump(c.control, c.ctlIn, false)
	go pump(c.iopub, c.iopubIn, true)
	// Wait until IOPub is connected: kernel_info until a status arrives.
	deadline := time.Now().Add(hang)
	for {
		c.send(c.shell, c.signer, "kernel_info_request", map[string]any{})
		select {
		case <-c.iopubIn:
			c.drain()
			return c
		case <-c.kernelDone: // e.g. a port taken by another process meanwhile
			t.Fatalf("the kernel stopped during start-up: %v", runErr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no IOPub message within %v", hang)
		}
	}
}

func (c *client) drain() {
	time.Sleep(50 * time.Millisecond)
	for _, ch := range []chan *wire.Message{c.shellIn, c.ctlIn, c.iopubIn} {
		for len(ch) > 0 {
			<-ch
		}
	}
}

func (c *client) send(sock zmq4.Socket, s *wire.Signer, msgType string, content any) string {
	b, _ := json.Marshal(content)
	m := &wire.Message{Header: wire.NewHeader(msgType, "test-session", "tester"), Content: b}
	frames, err := s.Serialize(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
	return m.Header.MsgID
}

func (c *client) execute(code string, extra map[string]any) string {
	content := map[string]any{"code": code, "silent": false, "store_history": true}
	for k, v := range extra {
		content[k] = v
	}
	return c.send(c.shell, c.signer, "execute_request", content)
}

func parentID(m *wire.Message) string {
	var h wire.Header
	json.Unmarshal(m.Parent, &h)
	return h.MsgID
}

// reply waits for the reply to id on ch.
func (c *client) reply(ch chan *wire.Message, id string, timeout time.Duration) map[string]any {
	c.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m := <-ch:
			if parentID(m) == id {
				var content map[string]any
				json.Unmarshal(m.Content, &content)
				content["_type"] = m.Header.MsgType
				return content
			}
		case <-deadline:
			c.t.Fatalf("no reply to %s within %v", id, timeout)
			return nil
		}
	}
}

// iopub returns "type" or "type:detail" for each IOPub message of id up
// to its idle.
func (c *client) iopubOf(id string) []string {
	c.t.Helper()
	var got []string
	deadline := time.After(hang)
	for {
		select {
		case m := <-c.iopubIn:
			if parentID(m) != id {
				continue
			}
			var content map[string]any
			json.Unmarshal(m.Content, &content)
			s := m.Header.MsgType
			switch s {
			case "status":
				s += ":" + content["execution_state"].(string)
			case "stream":
				s += ":" + content["name"].(string) + ":" + content["text"].(string)
			}
			got = append(got, s)
			if s == "status:idle" {
				return got
			}
		case <-deadline:
			c.t.Fatalf("no idle for %s within %v; got %v", id, hang, got)
		}
	}
}

func TestExecuteStatusOrder(t *testing.T) {
	c := startKernel(t)
	id := c.execute("print a\neprint b\nprint c\nhtml <i>x</i>\nclear\ndisplay d1 one\nupdate d1 two\nvalue 3", nil)
	r := c.reply(c.shellIn, id, hang)
	if r["status"] != "ok" || r["execution_count"] != 1.0 {
		t.Errorf("reply %v", r)
	}
	// user_expressions are evaluated after the cell, without output.
	id2 := c.execute("set v 41", map[string]any{"user_expressions": map[string]string{"a": "get v", "b": "get nope"}})
	r = c.reply(c.shellIn, id2, hang)
	ue, _ := r["user_expressions"].(map[string]any)
	a, _ := ue["a"].(map[string]any)
	b, _ := ue["b"].(map[string]any)
	if a["status"] != "ok" || a["data"].(map[string]any)["text/plain"] != "41" || b["status"] != "error" {
		t.Errorf("user_expressions %v", ue)
	}
	want := "status:busy execute_input stream:stdout:a\n stream:stderr:b\n stream:stdout:c\n display_data clear_output display_data update_display_data execute_result status:idle"
	if got := strings.Join(c.iopubOf(id), " "); got != want {
		t.Errorf("iopub\n got %q\nwant %q", got, want)
	}
	if got := strings.Join(c.iopubOf(id2), " "); got != "status:busy execute_input status:idle" {
		t.Errorf("user_expressions published output: %q", got)
	}
}

// TestForgedAndMalformedMessagesAreDropped: messages signed with the wrong
// key, unsigned, with a corrupt signature or JSON, without a delimiter, or
// replayed, are dropped and logged, never answered or run, and the kernel
// goes on serving. Execute requests run in arrival order, so had a forged
// execute been accepted, its reply would come before the reply of the
// valid request sent after it: the check needs no quiet period.
func TestForgedAndMalformedMessagesAreDropped(t *testing.T) {
	c := startKernel(t)
	c.reply(c.shellIn, c.execute("set x 1", nil), hang)
	forged := []*wire.Signer{wire.NewSigner([]byte("wrong")), wire.NewSigner(nil)}
	var ids []string
	for _, s := range forged {
		ids = append(ids, c.send(c.shell, s, "execute_request", map[string]any{"code": "set x 666"}))
	}
	c.shell.SendMulti(zmq4.NewMsgFrom([]byte("<IDS|MSG>"), []byte("00"), []byte("{"), []byte("{}"), []byte("{}"), []byte("{}")))
	c.shell.SendMulti(zmq4.NewMsgFrom([]byte("no delimiter at all")))
	// Correctly signed, but the header is not JSON: it must be dropped
	// after the signature check, not crash the parser's caller.
	badHeader := []byte("{not json")
	sig := c.signer.Sign(badHeader, []byte("{}"), []byte("{}"), []byte("{}"))
	c.shell.SendMulti(zmq4.NewMsgFrom([]byte("<IDS|MSG>"), []byte(sig), badHeader, []byte("{}"), []byte("{}"), []byte("{}")))
	// A captured valid message sent twice runs once.
	b, _ := json.Marshal(map[string]any{"code": "set x 2"})
	replayed := &wire.Message{Header: wire.NewHeader("execute_request", "test-session", "tester"), Content: b}
	frames, err := c.signer.Serialize(replayed)
	if err != nil {
		t.Fatal(err)
	}
	c.shell.SendMulti(zmq4.NewMsgFrom(frames...))
	c.shell.SendMulti(zmq4.NewMsgFrom(frames...))

	id := c.execute("get x", nil)
	var replayReplies int
	for {
		m := c.next(c.shellIn)
		for _, fid := range ids {
			if parentID(m) == fid {
				t.Fatalf("a forged message was answered: %s", m.Header.MsgType)
			}
		}
		if parentID(m) == replayed.Header.MsgID {
			replayReplies++
		}
		if parentID(m) == id {
			break
		}
	}
	if replayReplies != 1 {
		t.Errorf("a message sent twice was answered %d times, want once", replayReplies)
	}
	// x is 2, from the replayed message run once, not 666 from a forged one.
	if got := c.resultText(id); got != "2" {
		t.Errorf("get x = %q, want 2", got)
	}
	logged := c.log.String()
	for _, want := range []string{
		"shell: dropped a message: wire: bad or missing signature\n",
		"shell: dropped a message: wire: no <IDS|MSG> delimiter among 2 frames\n",
		"shell: dropped a message: wire: malformed message: header: invalid JSON\n",
		"shell: dropped a replayed execute_request (duplicate signature)",
	} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log does not say %q:\n%s", want, logged)
		}
	}
}

// resultText returns the text/plain of the execute_result of id ("" if
// there was none), reading IOPub up to the request's idle.
func (c *client) resultText(id string) string {
	c.t.Helper()
	text := ""
	for deadline := time.After(hang); ; {
		select {
		case m := <-c.iopubIn:
			if parentID(m) != id {
				continue
			}
			var content struct {
				State string            `json:"execution_state"`
				Data  map[string]string `json:"data"`
			}
			json.Unmarshal(m.Content, &content)
			switch {
			case m.Header.MsgType == "execute_result":
				text = content.Data["text/plain"]
			case m.Header.MsgType == "status" && content.State == "idle":
				return text
			}
		case <-deadline:
			c.t.Fatalf("no idle for %s within %v", id, hang)
		}
	}
}

// next returns the next message of ch, failing after hang.
func (c *client) next(ch chan *wire.Message) *wire.Message {
	c.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(hang):
		c.t.Fatalf("no message within %v", hang)
		return nil
	}
}

// TestControlAnswersWhileACellRuns: kernel_info on control and completion
// on shell answer while a cell blocks (until interrupted, so any answer
// shows they do not wait for it), and an interrupt_request ends the cell.
// "block" never ends by itself, so its Interrupted reply is the event that
// proves the interrupt worked; an interrupt that does not stop it leaves
// the reply missing and fails after hang. No wall-clock bound: on a loaded
// machine the time to a reply says nothing about the kernel.
func TestControlAnswersWhileACellRuns(t *testing.T) {
	c := startKernel(t)
	c.reply(c.shellIn, c.execute("set kept 5", nil), hang)
	id := c.execute("block", nil)
	c.started(id)
	info := c.reply(c.ctlIn, c.send(c.control, c.signer, "kernel_info_request", map[string]any{}), hang)
	if info["_type"] != "kernel_info_reply" || info["protocol_version"] != wire.ProtocolVersion {
		t.Errorf("kernel_info on control: %v", info)
	}
	comp := c.reply(c.shellIn, c.send(c.shell, c.signer, "complete_request", map[string]any{"code": "ke", "cursor_pos": 2}), hang)
	if m, _ := comp["matches"].([]any); len(m) != 1 || m[0] != "kept" {
		t.Errorf("complete while a cell runs: %v", comp)
	}
	select {
	case m := <-c.shellIn:
		t.Fatalf("the blocked cell ended before the interrupt: %s %s", m.Header.MsgType, m.Content)
	default:
	}
	ir := c.reply(c.ctlIn, c.send(c.control, c.signer, "interrupt_request", map[string]any{}), hang)
	if ir["_type"] != "interrupt_reply" || ir["status"] != "ok" {
		t.Errorf("interrupt reply %v", ir)
	}
	r := c.reply(c.shellIn, id, hang)
	if r["status"] != "error" || r["ename"] != "Interrupted" {
		t.Errorf("interrupted cell reply %v", r)
	}
}

// TestInterruptAtExecuteInput: a front end may interrupt as soon as it
// sees the cell's execute_input; the cell must be cancellable by then
// (before, the kernel published execute_input before it recorded the
// cell's cancel, and an interrupt in between was lost: the cell blocked,
// and here its reply would never come).
func TestInterruptAtExecuteInput(t *testing.T) {
	c := startKernel(t)
	for i := 0; i < 20; i++ {
		id := c.execute("block", nil)
		c.started(id)
		c.send(c.control, c.signer, "interrupt_request", map[string]any{})
		r := c.reply(c.shellIn, id, hang)
		if r["status"] != "error" || r["ename"] != "Interrupted" {
			t.Fatalf("round %d: reply %v, want Interrupted", i, r)
		}
	}
}

// started waits for the execute_input of id on IOPub: the kernel has
// handed the cell to the engine.
func (c *client) started(id string) {
	c.t.Helper()
	deadline := time.After(hang)
	for {
		select {
		case m := <-c.iopubIn:
			if parentID(m) == id && m.Header.MsgType == "execute_input" {
				return
			}
		case <-deadline:
			c.t.Fatalf("no execute_input for %s within %v: the request was never run (aborted behind an earlier error?)", id, hang)
		}
	}
}

// queued waits until n execute requests wait in the kernel's queue.
func (c *client) queued(n int) {
	c.t.Helper()
	for deadline := time.Now().Add(hang); ; time.Sleep(time.Millisecond) {
		c.k.queue.mu.Lock()
		got := len(c.k.queue.items)
		c.k.queue.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%d execute requests queued after %v, want %d", got, hang, n)
		}
	}
}

// TestStopOnError: the requests queued behind a failed cell are aborted,
// unless it was sent with stop_on_error false. The failing cell waits at a
// gate until both requests are in the queue (an event, not a sleep long
// enough for them to arrive).
func TestStopOnError(t *testing.T) {
	eng := newTestEngine()
	c := startKernelWith(t, Config{Engine: eng})
	first := c.execute("gate\nfail Boom it failed", nil)
	c.started(first)
	second := c.execute("value 2", nil)
	third := c.execute("value 3", nil)
	c.queued(2)
	eng.open()
	if r := c.reply(c.shellIn, first, hang); r["status"] != "error" || r["ename"] != "Boom" {
		t.Errorf("first %v", r)
	}
	for _, id := range []string{second, third} {
		if r := c.reply(c.shellIn, id, hang); r["status"] != "aborted" {
			t.Errorf("queued execute %v, want aborted", r)
		}
	}
	first = c.execute("gate\nfail Boom again", map[string]any{"stop_on_error": false})
	c.started(first)
	second = c.execute("value 2", nil)
	c.queued(1)
	eng.open()
	if r := c.reply(c.shellIn, first, hang); r["status"] != "error" || r["ename"] != "Boom" {
		t.Errorf("first with stop_on_error false: %v", r)
	}
	if r := c.reply(c.shellIn, second, hang); r["status"] != "ok" {
		t.Errorf("with stop_on_error false: %v", r)
	}
}

// TestUnknownRequestAndShutdown: an unknown request gets an error reply;
// shutdown_request is answered and Run returns, with the restart flag.
func TestUnknownRequestAndShutdown(t *testing.T) {
	c := startKernel(t)
	r := c.reply(c.shellIn, c.send(c.shell, c.signer, "frobnicate_request", map[string]any{}), hang)
	if r["_type"] != "frobnicate_reply" || r["status"] != "error" || r["ename"] != "UnsupportedRequest" ||
		r["evalue"] != `privnotes does not handle "frobnicate_request" messages` {
		t.Errorf("unknown request: %v", r)
	}
	r = c.reply(c.ctlIn, c.send(c.control, c.signer, "shutdown_request", map[string]any{"restart": true}), hang)
	if r["_type"] != "shutdown_reply" || r["restart"] != true {
		t.Errorf("shutdown reply %v", r)
	}
	select {
	case <-c.kernelDone:
	case <-time.After(hang):
		t.Fatalf("Run did not return within %v of shutdown_request", hang)
	}
}

func TestHeartbeatEchoes(t *testing.T) {
	c := startKernel(t)
	if err := c.hb.Send(zmq4.NewMsgString("ping")); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		m, err := c.hb.Recv()
		if err == nil {
			got <- string(m.Bytes())
		}
	}()
	select {
	case s := <-got:
		if s != "ping" {
			t.Errorf("heartbeat echoed %q", s)
		}
	case <-time.After(hang):
		t.Fatalf("no heartbeat echo within %v", hang)
	}
}

func TestHistoryPersistsAcrossSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h1, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	out := "2"
	h1.Add(1, "x := 1", nil)
	h1.Add(2, "x + 1", &out)
	h2, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if h2.Session() != 2 {
		t.Fatalf("second session numbered %d", h2.Session())
	}
	h2.Add(1, "y := 3", nil)
	if got := h2.Tail(2); len(got) != 2 || got[0].Input != "x + 1" || *got[0].Output != "2" || got[1].Session != 2 {
		t.Errorf("tail %+v", got)
	}
	if got := h2.Range(-1, 2, 0); len(got) != 1 || got[0].Input != "x + 1" {
		t.Errorf("range of the previous session %+v", got)
	}
	if got := h2.Search("? := *", 0, false); len(got) != 2 || got[1].Input != "y := 3" {
		t.Errorf("search %+v", got)
	}
}

func TestConnectionFileValidation(t *testing.T) {
	good := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: "k", SignatureScheme: "hmac-sha256",
		ShellPort: 1, ControlPort: 2, StdinPort: 3, IOPubPort: 4, HBPort: 5}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*ConnectionInfo){
		"udp transport": func(c *ConnectionInfo) { c.Transport = "udp" },
		"md5 signature": func(c *ConnectionInfo) { c.SignatureScheme = "hmac-md5" },
		"zero port":     func(c *ConnectionInfo) { c.HBPort = 0 },
		"no ip":         func(c *ConnectionInfo) { c.IP = "" },
	}
	for name, f := range bad {
		c := good
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// TestPagerPayload: help displays (engine.Display.Page) leave the cell's
// output alone and come back as one "page" payload of execute_reply, as
// ipykernel sends for `?`: several pages of a cell are joined in order,
// the payload is also sent when the cell fails after paging, and a silent
// cell pages nothing.
func TestPagerPayload(t *testing.T) {
	c := startKernel(t)
	tests := []struct {
		code   string
		extra  map[string]any
		status string
		page   string // "" for no payload
		iopub  string
	}{
		{"page help one", nil, "ok", "help one", "status:busy execute_input status:idle"},
		{"print a\npage one\npage two\nvalue 3", nil, "ok", "one\n\ntwo", "status:busy execute_input stream:stdout:a\n execute_result status:idle"},
		{"page before\nfail Boom after", map[string]any{"stop_on_error": false}, "error", "before", "status:busy execute_input error status:idle"},
		{"print a", nil, "ok", "", "status:busy execute_input stream:stdout:a\n status:idle"},
		{"page quiet", map[string]any{"silent": true}, "ok", "", "status:busy status:idle"},
	}
	for _, tc := range tests {
		id := c.execute(tc.code, tc.extra)
		r := c.reply(c.shellIn, id, hang)
		if r["status"] != tc.status {
			t.Errorf("%q: status %v, want %s", tc.code, r["status"], tc.status)
		}
		payload, ok := r["payload"].([]any)
		if !ok {
			t.Errorf("%q: reply has no payload list: %v", tc.code, r)
			continue
		}
		if tc.page == "" {
			if len(payload) != 0 {
				t.Errorf("%q: payload %v, want none", tc.code, payload)
			}
		} else {
			want := []any{map[string]any{"source": "page", "data": map[string]any{"text/plain": tc.page}, "start": 0.0}}
			if got, _ := json.Marshal(payload); string(got) != string(must(json.Marshal(want))) {
				t.Errorf("%q: payload %s, want %s", tc.code, got, must(json.Marshal(want)))
			}
		}
		if got := strings.Join(c.iopubOf(id), " "); got != tc.iopub {
			t.Errorf("%q: iopub\n got %q\nwant %q", tc.code, got, tc.iopub)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestPagePayloadJoinsTypes: the mime types every page has are joined;
// one that some page lacks is dropped rather than shown for part of them.
func TestPagePayloadJoinsTypes(t *testing.T) {
	got := pagePayload([]engine.MIMEBundle{
		{"text/plain": "a", "text/html": "<b>a</b>"},
		{"text/plain": "b", "text/html": "<b>b</b>", "text/markdown": "*b*"},
	})
	want := []any{map[string]any{"source": "page", "start": 0, "data": engine.MIMEBundle{
		"text/plain": "a\n\nb", "text/html": "<b>a</b>\n<hr>\n<b>b</b>"}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := pagePayload(nil); len(got) != 0 {
		t.Errorf("no pages: %v", got)
	}
}

// TestTracebackColours: the error output and the execute_reply carry the
// traceback with ANSI colours (the name red and bold, as ipykernel's),
// while ename and evalue stay plain for programs that compare them.
func TestTracebackColours(t *testing.T) {
	c := startKernel(t)
	id := c.execute("fail Boom it failed", nil)
	r := c.reply(c.shellIn, id, hang)
	if r["ename"] != "Boom" || r["evalue"] != "it failed" {
		t.Errorf("ename/evalue not plain: %v", r)
	}
	want := []any{"\x1b[1;31mBoom\x1b[0m: it failed", "  at cell line 1"}
	if fmt.Sprint(r["traceback"]) != fmt.Sprint(want) {
		t.Errorf("reply traceback %q, want %q", r["traceback"], want)
	}
	var published map[string]any
	for m := c.next(c.iopubIn); ; m = c.next(c.iopubIn) {
		if parentID(m) == id && m.Header.MsgType == "error" {
			json.Unmarshal(m.Content, &published)
			break
		}
	}
	if published["ename"] != "Boom" || published["evalue"] != "it failed" || fmt.Sprint(published["traceback"]) != fmt.Sprint(want) {
		t.Errorf("error output %v", published)
	}
}

// TestBannerNamesTheStateDirectory: kernel_info's banner names the state
// directory when the kernel has one, so a new user sees which registry
// and ledger the kernel uses.
func TestBannerNamesTheStateDirectory(t *testing.T) {
	for _, dir := range []string{"/srv/privnotes-state", ""} {
		c := startKernelWith(t, Config{Engine: enginetest.New(), StateDir: dir})
		r := c.reply(c.shellIn, c.send(c.shell, c.signer, "kernel_info_request", map[string]any{}), hang)
		banner, _ := r["banner"].(string)
		has := strings.Contains(banner, "\nState directory: /srv/privnotes-state (the registered datasets and the privacy ledger)\n")
		if has != (dir != "") || strings.Contains(banner, "State directory: (") {
			t.Errorf("StateDir %q: banner\n%s", dir, banner)
		}
		if !strings.HasPrefix(banner, "privnotes dev: ") || !strings.HasSuffix(banner, "%ledger for what was spent.") {
			t.Errorf("banner\n%s", banner)
		}
	}
}

// TestProgressDisplay: a computation's progress (engine.ProgressDisplay)
// reaches a notebook as one display_data and then update_display_data
// with the same transient display_id, each with an HTML progress bar.
func TestProgressDisplay(t *testing.T) {
	c := startKernel(t)
	id := c.execute("progress 3 private_pca (npm)", nil)
	if r := c.reply(c.shellIn, id, hang); r["status"] != "ok" {
		t.Fatalf("reply %v", r)
	}
	var types, ids, texts []string
	for {
		m := c.next(c.iopubIn)
		if parentID(m) != id {
			continue
		}
		var content struct {
			State     string            `json:"execution_state"`
			Data      map[string]string `json:"data"`
			Transient map[string]string `json:"transient"`
		}
		json.Unmarshal(m.Content, &content)
		if m.Header.MsgType == "status" && content.State == "idle" {
			break
		}
		if strings.HasSuffix(m.Header.MsgType, "display_data") {
			types = append(types, m.Header.MsgType)
			ids = append(ids, content.Transient["display_id"])
			texts = append(texts, content.Data["text/plain"])
			if !strings.Contains(content.Data["text/html"], "<progress value=") {
				t.Errorf("no progress bar: %v", content.Data)
			}
		}
	}
	if strings.Join(types, " ") != "display_data update_display_data update_display_data" ||
		ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] || texts[2] != "private_pca (npm): step 3 of 3" {
		t.Errorf("progress messages %v, ids %v, texts %v", types, ids, texts)
	}
}
