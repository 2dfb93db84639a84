package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/enginetest"
	"github.com/privnotes/privnotes/kernel/wire"
)

// testEngine is enginetest's Fake with a few commands for the kernel's own
// tests:
//
//	gate          (first line) wait until the test calls open, or until
//	              interrupted; the rest of the cell then runs
//	png           the cell's value is an image/png without text/plain
//	panic         Execute panics, as a bug in an engine would
//
// Complete, Inspect and IsComplete panic on the code "panic".
type testEngine struct {
	*enginetest.Fake
	gate chan struct{}
}

func newTestEngine() *testEngine {
	return &testEngine{Fake: enginetest.New(), gate: make(chan struct{}, 1)}
}

// open lets one gated cell go on.
func (e *testEngine) open() { e.gate <- struct{}{} }

func (e *testEngine) Execute(ctx context.Context, req engine.ExecuteRequest, out engine.Output) engine.ExecuteResult {
	switch code := req.Code; {
	case strings.HasPrefix(code, "gate\n"):
		select {
		case <-e.gate:
		case <-ctx.Done():
			return engine.ExecuteResult{Error: &engine.Error{Name: "Interrupted", Value: "interrupted at the gate"}}
		}
		req.Code = strings.TrimPrefix(code, "gate\n")
	case code == "png":
		data := engine.MIMEBundle{"image/png": "iVBORw0KGgo="}
		out.Display(engine.Display{Data: data})
		return engine.ExecuteResult{Value: &engine.Display{Data: data}}
	case code == "panic":
		panic("engine bug in Execute")
	}
	return e.Fake.Execute(ctx, req, out)
}

func (e *testEngine) Complete(code string, cursor int) engine.Completion {
	if code == "panic" {
		panic("engine bug in Complete")
	}
	return e.Fake.Complete(code, cursor)
}

func (e *testEngine) Inspect(code string, cursor, detail int) engine.Inspection {
	if code == "panic" {
		panic("engine bug in Inspect")
	}
	return e.Fake.Inspect(code, cursor, detail)
}

func (e *testEngine) IsComplete(code string) engine.Completeness {
	if code == "panic" {
		panic("engine bug in IsComplete")
	}
	return e.Fake.IsComplete(code)
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadConnectionFile: every way a connection file can be wrong gives an
// error that names the file and the problem; a good one loads as written.
func TestLoadConnectionFile(t *testing.T) {
	dir := t.TempDir()
	good := `{"transport": "tcp", "ip": "127.0.0.1", "shell_port": 1, "control_port": 2, "stdin_port": 3,
		"iopub_port": 4, "hb_port": 5, "key": "k", "signature_scheme": "hmac-sha256", "kernel_name": "privnotes"}`
	c, err := LoadConnectionFile(writeFile(t, dir, "good.json", good))
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: 1, ControlPort: 2, StdinPort: 3, IOPubPort: 4, HBPort: 5,
		Key: "k", SignatureScheme: "hmac-sha256", KernelName: "privnotes"}
	if c != want {
		t.Errorf("loaded %+v, want %+v", c, want)
	}

	missing := filepath.Join(dir, "missing.json")
	_, err = LoadConnectionFile(missing)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || err.Error() != "connection file: open "+missing+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
	tests := []struct {
		name, content, want string
	}{
		{"not JSON", "transport=tcp", "is not valid JSON: invalid character 'a' in literal true (expecting 'u')"},
		{"truncated", `{"transport": "tcp"`, "is not valid JSON: unexpected end of JSON input"},
		{"port as text", `{"transport": "tcp", "shell_port": "1"}`, "is not valid JSON: json: cannot unmarshal string into Go struct field ConnectionInfo.shell_port of type int"},
		{"wrong transport", strings.Replace(good, `"tcp"`, `"udp"`, 1), `: transport "udp" is not supported (use "tcp" or "ipc")`},
		{"no transport", `{"ip": "127.0.0.1"}`, `: transport "" is not supported (use "tcp" or "ipc")`},
		{"bad scheme", strings.Replace(good, "hmac-sha256", "hmac-md5", 1), `: signature_scheme "hmac-md5" is not supported (use "hmac-sha256")`},
		{"key without scheme", strings.Replace(good, `"hmac-sha256"`, `""`, 1), `: signature_scheme "" is not supported (use "hmac-sha256")`},
		{"no ip", strings.Replace(good, `"127.0.0.1"`, `""`, 1), ": no ip"},
		{"zero tcp port", strings.Replace(good, `"hb_port": 5`, `"hb_port": 0`, 1), ": hb_port 0 is not a port number in 1..65535"},
		{"port too large", strings.Replace(good, `"iopub_port": 4`, `"iopub_port": 70000`, 1), ": iopub_port 70000 is not a port number in 1..65535"},
		{"negative port", strings.Replace(good, `"stdin_port": 3`, `"stdin_port": -3`, 1), ": stdin_port -3 is not a port number in 1..65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".json", tt.content)
			_, err := LoadConnectionFile(p)
			if err == nil || !strings.HasPrefix(err.Error(), "connection file "+p) || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q naming %s", err, tt.want, p)
			}
		})
	}

	// No key turns signing off, whatever the scheme; ipc needs no ports.
	unsigned := `{"transport": "ipc", "ip": "` + filepath.Join(dir, "kernel") + `", "key": "", "signature_scheme": ""}`
	c, err = LoadConnectionFile(writeFile(t, dir, "ipc.json", unsigned))
	if err != nil {
		t.Fatalf("unsigned ipc file: %v", err)
	}
	if got, want := c.endpoint(3), "ipc://"+filepath.Join(dir, "kernel")+"-3"; got != want {
		t.Errorf("ipc endpoint %q, want %q", got, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{Conn: testConn(t)}); err == nil || err.Error() != "kernel: no engine" {
		t.Errorf("no engine: %v", err)
	}
	conn := testConn(t)
	conn.SignatureScheme = "hmac-sha1"
	if _, err := New(Config{Conn: conn, Engine: enginetest.New()}); err == nil ||
		err.Error() != `kernel: signature_scheme "hmac-sha1" is not supported (use "hmac-sha256")` {
		t.Errorf("bad scheme: %v", err)
	}
}

// TestRunReportsBusyPort: a channel port taken by another process is an
// error of Run that names the channel, not a hang or a panic.
func TestRunReportsBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn := testConn(t)
	conn.ShellPort = l.Addr().(*net.TCPAddr).Port
	k, err := New(Config{Conn: conn, Engine: enginetest.New()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := k.Run(context.Background()); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.HasPrefix(err.Error(), "kernel: bind shell channel: ") || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("Run: %v, want the shell channel's bind error", err)
		}
	case <-time.After(hang):
		t.Fatalf("Run did not return within %v with a busy port", hang)
	}
}

// TestRequestsWithBadContent: a signed request whose content does not
// decode gets an error reply that says why, and the kernel goes on.
func TestRequestsWithBadContent(t *testing.T) {
	c := startKernel(t)
	for _, tt := range []struct {
		msgType string
		content map[string]any
		detail  string
	}{
		{"complete_request", map[string]any{"code": 5}, "json: cannot unmarshal number into Go struct field codeCursor.code of type string"},
		{"inspect_request", map[string]any{"cursor_pos": "end"}, "json: cannot unmarshal string into Go struct field codeCursor.cursor_pos of type int"},
		{"is_complete_request", map[string]any{"code": []int{1}}, "json: cannot unmarshal array into Go struct field codeCursor.code of type string"},
		{"history_request", map[string]any{"hist_access_type": 5}, "json: cannot unmarshal number into Go struct field .hist_access_type of type string"},
		{"execute_request", map[string]any{"code": true}, "json: cannot unmarshal bool into Go struct field executeContent.code of type string"},
	} {
		r := c.reply(c.shellIn, c.send(c.shell, c.signer, tt.msgType, tt.content), hang)
		wantType := strings.TrimSuffix(tt.msgType, "_request") + "_reply"
		wantValue := "the " + tt.msgType + " content is not valid: " + tt.detail
		if r["_type"] != wantType || r["status"] != "error" || r["ename"] != "BadRequest" || r["evalue"] != wantValue {
			t.Errorf("%s: reply %v; want %s with BadRequest %q", tt.msgType, r, wantType, wantValue)
		}
	}
	c.waitLog("execute_request: bad content: json: cannot unmarshal bool")
	// Still serving, and the bad execute took no execution count.
	r := c.reply(c.shellIn, c.execute("value 1", nil), hang)
	if r["status"] != "ok" || r["execution_count"] != 1.0 {
		t.Errorf("after bad requests: %v", r)
	}
}

// TestEnginePanicsDoNotKillTheKernel: a panic in the engine, on any
// request, is an InternalError reply; the kernel keeps its sockets, its
// variables and its execution count.
func TestEnginePanicsDoNotKillTheKernel(t *testing.T) {
	c := startKernelWith(t, Config{Engine: newTestEngine()})
	c.reply(c.shellIn, c.execute("set x 5", nil), hang)
	for _, tt := range []struct{ msgType, what string }{
		{"complete_request", "Complete"}, {"inspect_request", "Inspect"}, {"is_complete_request", "IsComplete"},
	} {
		id := c.send(c.shell, c.signer, tt.msgType, map[string]any{"code": "panic", "cursor_pos": 1})
		r := c.reply(c.shellIn, id, hang)
		want := "the kernel failed on this request: engine bug in " + tt.what
		if r["status"] != "error" || r["ename"] != "InternalError" || r["evalue"] != want {
			t.Errorf("%s: %v, want InternalError %q", tt.msgType, r, want)
		}
		if got := strings.Join(c.iopubOf(id), " "); got != "status:busy status:idle" {
			t.Errorf("%s: iopub %q, want busy then idle", tt.msgType, got)
		}
	}
	id := c.execute("panic", nil)
	r := c.reply(c.shellIn, id, hang)
	if r["_type"] != "execute_reply" || r["status"] != "error" || r["ename"] != "InternalError" ||
		r["evalue"] != "the kernel failed on this request: engine bug in Execute" {
		t.Errorf("execute: %v", r)
	}
	if got := c.iopubOf(id); got[len(got)-1] != "status:idle" {
		t.Errorf("no idle after the panic: %v", got)
	}
	c.waitLog("execute: internal error: engine bug in Execute")
	id = c.execute("get x", nil)
	if r := c.reply(c.shellIn, id, hang); r["status"] != "ok" || r["execution_count"] != 3.0 {
		t.Errorf("after the panics: %v", r)
	}
	if got := c.resultText(id); got != "5" {
		t.Errorf("x = %q after the panics, want 5", got)
	}
}

// TestInspectIsCompleteAndHistory covers the answers of the other shell
// requests, silent cells and user expressions without output.
func TestInspectIsCompleteAndHistory(t *testing.T) {
	c := startKernel(t)
	ins := c.reply(c.shellIn, c.send(c.shell, c.signer, "inspect_request", map[string]any{"code": "spin", "cursor_pos": 2, "detail_level": 0}), hang)
	if data, _ := ins["data"].(map[string]any); ins["found"] != true || data["text/plain"] != "spin: loop ignoring interrupts" {
		t.Errorf("inspect spin: %v", ins)
	}
	ins = c.reply(c.shellIn, c.send(c.shell, c.signer, "inspect_request", map[string]any{"code": "nothing"}), hang)
	if data, _ := ins["data"].(map[string]any); ins["found"] != false || len(data) != 0 {
		t.Errorf("inspect of an unknown word: %v", ins)
	}
	for code, want := range map[string]map[string]any{
		"value 1":   {"status": "complete"},
		"set x {":   {"status": "incomplete", "indent": "    "},
		"value 1 }": {"status": "invalid"},
	} {
		r := c.reply(c.shellIn, c.send(c.shell, c.signer, "is_complete_request", map[string]any{"code": code}), hang)
		delete(r, "_type")
		if len(r) != len(want) || r["status"] != want["status"] || r["indent"] != want["indent"] {
			t.Errorf("is_complete %q: %v, want %v", code, r, want)
		}
	}

	c.reply(c.shellIn, c.execute("value 7", nil), hang)
	c.reply(c.shellIn, c.execute("print hidden\nvalue 8", map[string]any{"silent": true}), hang)
	id := c.execute("set y 1", map[string]any{"user_expressions": map[string]string{"quiet": "print x\nhtml h\nclear"}})
	r := c.reply(c.shellIn, id, hang)
	ue, _ := r["user_expressions"].(map[string]any)
	if q, _ := ue["quiet"].(map[string]any); q["status"] != "ok" || q["data"].(map[string]any)["text/plain"] != "" {
		t.Errorf("user expression without a value: %v", ue)
	}
	if got := strings.Join(c.iopubOf(id), " "); got != "status:busy execute_input status:idle" {
		t.Errorf("the user expression published output: %q", got)
	}
	c.reply(c.shellIn, c.execute("value 9", map[string]any{"store_history": false}), hang)

	hist := func(content map[string]any) []any {
		t.Helper()
		r := c.reply(c.shellIn, c.send(c.shell, c.signer, "history_request", content), hang)
		if r["status"] != "ok" {
			t.Fatalf("history %v: %v", content, r)
		}
		h, _ := r["history"].([]any)
		return h
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	// Only the cells with store_history: "value 7" (1) and "set y 1" (2).
	if got := js(hist(map[string]any{"hist_access_type": "tail", "n": 10, "output": true})); got != `[[1,1,["value 7","7"]],[1,2,["set y 1",null]]]` {
		t.Errorf("tail with output: %s", got)
	}
	if got := js(hist(map[string]any{"hist_access_type": "range", "session": 0, "start": 2, "stop": 0})); got != `[[1,2,"set y 1"]]` {
		t.Errorf("range: %s", got)
	}
	if got := js(hist(map[string]any{"hist_access_type": "search", "pattern": "value*", "n": 5, "unique": true})); got != `[[1,1,"value 7"]]` {
		t.Errorf("search: %s", got)
	}
	r = c.reply(c.shellIn, c.send(c.shell, c.signer, "history_request", map[string]any{"hist_access_type": "bogus"}), hang)
	if r["status"] != "error" || r["ename"] != "BadRequest" || r["evalue"] != `hist_access_type "bogus" is not one of tail, range, search` {
		t.Errorf("bad hist_access_type: %v", r)
	}
}

// TestValueWithoutTextPlain: every execute_result and display_data carries
// text/plain, even when the engine gives only an image.
func TestValueWithoutTextPlain(t *testing.T) {
	c := startKernelWith(t, Config{Engine: newTestEngine()})
	id := c.execute("png", nil)
	c.reply(c.shellIn, id, hang)
	seen := 0
	for seen < 2 {
		m := c.next(c.iopubIn)
		if parentID(m) != id || (m.Header.MsgType != "display_data" && m.Header.MsgType != "execute_result") {
			continue
		}
		seen++
		var content struct {
			Data map[string]string `json:"data"`
		}
		json.Unmarshal(m.Content, &content)
		if content.Data["text/plain"] != "<[image/png]>" || content.Data["image/png"] != "iVBORw0KGgo=" {
			t.Errorf("%s data %v", m.Header.MsgType, content.Data)
		}
	}
}

// TestLargeStreamIsSplit: stream text over the coalescing limit goes out
// at once, in order and complete.
func TestLargeStreamIsSplit(t *testing.T) {
	c := startKernel(t)
	long := strings.Repeat("x", streamMax+10)
	id := c.execute("print "+long+"\nprint tail", nil)
	c.reply(c.shellIn, id, hang)
	var text strings.Builder
	streams := 0
	for _, s := range c.iopubOf(id) {
		if rest, ok := strings.CutPrefix(s, "stream:stdout:"); ok {
			streams++
			text.WriteString(rest)
		}
	}
	if text.String() != long+"\ntail\n" || streams < 2 {
		t.Errorf("%d stream messages with %d bytes, want the %d bytes in at least 2", streams, text.Len(), len(long)+6)
	}
}

// TestCommsStdinAndUnsupported: comms are closed at once, the stdin
// channel is ignored with a log line, debug requests get an error reply.
func TestCommsStdinAndUnsupported(t *testing.T) {
	c := startKernel(t)
	r := c.reply(c.shellIn, c.send(c.shell, c.signer, "comm_info_request", map[string]any{}), hang)
	if comms, _ := r["comms"].(map[string]any); r["status"] != "ok" || comms == nil || len(comms) != 0 {
		t.Errorf("comm_info: %v", r)
	}
	id := c.send(c.shell, c.signer, "comm_open", map[string]any{"comm_id": "c1", "target_name": "jupyter.widget", "data": map[string]any{}})
	for {
		m := c.next(c.iopubIn)
		if parentID(m) == id && m.Header.MsgType == "comm_close" {
			var content map[string]any
			json.Unmarshal(m.Content, &content)
			if content["comm_id"] != "c1" {
				t.Errorf("comm_close %v", content)
			}
			break
		}
	}
	c.waitLog(`comm_open to unknown target "jupyter.widget": closing it`)
	msgID := c.send(c.shell, c.signer, "comm_msg", map[string]any{"comm_id": "c1", "data": map[string]any{}})
	if got := strings.Join(c.iopubOf(msgID), " "); got != "status:busy status:idle" {
		t.Errorf("comm_msg: iopub %q", got)
	}
	c.send(c.stdin, c.signer, "input_reply", map[string]any{"value": "typed"})
	c.waitLog("stdin: ignored input_reply (input requests are not supported)")
	r = c.reply(c.ctlIn, c.send(c.control, c.signer, "debug_request", map[string]any{}), hang)
	if r["_type"] != "debug_reply" || r["status"] != "error" || r["ename"] != "UnsupportedRequest" {
		t.Errorf("debug_request: %v", r)
	}
	// comm_msg has no reply: the next shell reply is kernel_info's.
	kid := c.send(c.shell, c.signer, "kernel_info_request", map[string]any{})
	if m := c.next(c.shellIn); parentID(m) != kid {
		t.Errorf("a reply to %s before kernel_info's", m.Header.MsgType)
	}
}

// TestHistoryWriteFailureKeepsTheCell: a history file that cannot be
// written is logged; the cell's reply is unaffected.
func TestHistoryWriteFailureKeepsTheCell(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	// The file turns into a directory behind the kernel's back.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	c := startKernelWith(t, Config{Engine: enginetest.New(), History: h})
	if r := c.reply(c.shellIn, c.execute("value 1", nil), hang); r["status"] != "ok" {
		t.Errorf("reply %v", r)
	}
	c.waitLog("history: history: open " + path + ": is a directory")
	if got := h.Tail(0); len(got) != 1 || got[0].Input != "value 1" {
		t.Errorf("in-memory history %+v", got)
	}
}

func TestOpenHistoryErrorsAndTornLines(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenHistory(dir); err == nil || err.Error() != "history: open "+dir+": is a directory" {
		t.Errorf("history on a directory: %v", err)
	}
	// A torn last line (a crash mid-write) and a line of no session are
	// skipped; the next session follows the highest one read.
	p := writeFile(t, dir, "h.jsonl", `{"session":3,"line":1,"input":"a"}`+"\n"+`{"session":0,"line":1,"input":"b"}`+"\n"+`{"session":4,"li`)
	h, err := OpenHistory(p)
	if err != nil {
		t.Fatal(err)
	}
	if h.Session() != 4 {
		t.Errorf("session %d, want 4", h.Session())
	}
	if got := h.Tail(5); len(got) != 1 || got[0].Input != "a" {
		t.Errorf("entries %+v", got)
	}
	long := writeFile(t, dir, "long.jsonl", strings.Repeat("x", 17<<20))
	if _, err := OpenHistory(long); err == nil || err.Error() != "history "+long+": bufio.Scanner: token too long" {
		t.Errorf("a 17 MB line: %v", err)
	}
}

// TestReplayGuardForgets: the guard remembers a window of signatures; the
// oldest is forgotten once the window is full.
func TestReplayGuardForgets(t *testing.T) {
	var g replayGuard
	if !g.fresh([]byte("first")) || g.fresh([]byte("first")) {
		t.Fatal("a repeated signature counts as fresh")
	}
	for i := 0; i < replayWindow; i++ {
		g.fresh([]byte{byte(i), byte(i >> 8), 'x'})
	}
	if !g.fresh([]byte("first")) {
		t.Error("the guard never forgets a signature")
	}
}

// TestParentWatchReparented: a kernel whose parent changed (its parent
// died and it was re-parented) counts its front end as gone.
func TestParentWatchReparented(t *testing.T) {
	w := &parentWatch{pid: os.Getppid(), ppid0: os.Getppid() + 1}
	why, gone := w.gone()
	want := "parent process " + strconv.Itoa(os.Getppid()+1) + " exited (the kernel now belongs to process " + strconv.Itoa(os.Getppid()) + ")"
	if !gone || why != want {
		t.Errorf("gone() = %q, %v; want %q", why, gone, want)
	}
}

// TestZombieIsNotAlive: a front end that ended but was not reaped yet
// (a zombie) counts as gone.
func TestZombieIsNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	stat := "/proc/" + strconv.Itoa(pid) + "/stat"
	for deadline := time.Now().Add(hang); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Skipf("no %s: %v", stat, err)
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie within %v", pid, hang)
		}
	}
	if processAlive(pid) {
		t.Errorf("the zombie %d counts as alive", pid)
	}
	if !processAlive(os.Getpid()) {
		t.Error("this process counts as dead")
	}
}

// sendRaw sends frames as they are, signed by nobody.
func (c *client) sendRaw(sock zmq4.Socket, frames ...[]byte) {
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
}

// TestControlSurvivesGarbage: garbage on the control channel is dropped
// like on shell; interrupt and shutdown still work.
func TestControlSurvivesGarbage(t *testing.T) {
	c := startKernel(t)
	c.sendRaw(c.control, []byte("garbage"))
	c.sendRaw(c.control, []byte(wire.Delimiter), []byte("sig"), []byte("{}"))
	c.waitLog("control: dropped a message: wire: no <IDS|MSG> delimiter among 2 frames\n")
	c.waitLog("control: dropped a message: wire: fewer than 5 frames after the delimiter (got 2)\n")
	r := c.reply(c.ctlIn, c.send(c.control, c.signer, "shutdown_request", map[string]any{"restart": false}), hang)
	if r["_type"] != "shutdown_reply" || r["restart"] != false {
		t.Errorf("shutdown after garbage: %v", r)
	}
	select {
	case <-c.kernelDone:
	case <-time.After(hang):
		t.Fatalf("Run did not return within %v of shutdown_request", hang)
	}
}
