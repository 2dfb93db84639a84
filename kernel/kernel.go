// Package kernel is the Jupyter side of privnotes: it binds the five
// ZeroMQ channels of a connection file, verifies and dispatches messages,
// keeps the per-request status order (busy, outputs, reply, idle), and
// hands cells to an engine.Engine — in production a worker.Supervisor, so
// that no user code ever runs in the process that owns the sockets.
//
// Concurrency: each socket has its own receive goroutine. Control requests
// (interrupt, shutdown, kernel_info) are served by their own goroutine and
// are never queued behind a cell. Execute requests run one at a time on an
// executor goroutine, in arrival order; the other shell requests (complete,
// inspect, is_complete, history, ...) are answered at once, even while a
// cell runs.
//
// Decisions worth knowing:
//
//   - Messages that do not verify (bad or missing HMAC, no delimiter, bad
//     JSON) and replays of an already seen signature are dropped and logged,
//     never answered or executed.
//   - shutdown_request is answered on the channel it came on and the process
//     then exits, also with restart=true: jupyter_client's restart_kernel
//     waits for the old process to end and starts a new one (a kernel that
//     stays up is killed after 5 s). Restarting therefore loses variables but
//     never the ledger, which lives in the state directory.
//   - The kernel watches the process that started it (JPY_PARENT_PID, see
//     Config.ParentPID) once a second and shuts down, worker included,
//     when it is gone: a front end killed with SIGKILL leaves no orphan
//     holding the state database.
//   - stop_on_error (default true) answers the execute requests already
//     queued behind a failed or interrupted cell with status "aborted".
//   - History: cells run with store_history are kept in memory and, when a
//     state directory is configured, appended to kernel-history.jsonl
//     there, so tail and search reach earlier sessions.
//   - Not supported: input_request (the stdin channel is bound but reads
//     nothing), the debugger (debug_request gets an error reply), comms
//     (comm_open is answered with comm_close), and iopub_welcome (5.5).
package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/wire"
)

// Implementation names this kernel in kernel_info_reply.
const Implementation = "privnotes"

// sendTimeout bounds a ROUTER send: zmq4 blocks a send to a socket with no
// peer until the timeout, and a client that went away must not wedge the
// kernel.
const sendTimeout = 10 * time.Second

// Config configures a Kernel.
type Config struct {
	Conn   ConnectionInfo
	Engine engine.Engine
	// History records executed cells; nil keeps them in memory.
	History *History
	// Version is the implementation_version ("dev" when empty).
	Version string
	// StateDir is the state directory the engine reads (registered
	// datasets, the ledger), shown in the banner so that a user knows
	// which registry the kernel uses. Empty leaves it out.
	StateDir string
	// Log receives dropped messages and other events (stderr of the
	// kernel process, i.e. the Jupyter server's log). Nil discards.
	Log *log.Logger
	// ParentPID is the front end whose end shuts the kernel down, as
	// ipykernel does: 0 means the JPY_PARENT_PID environment variable
	// (jupyter_client sets it), negative turns the watch off. While it
	// is on, the kernel also shuts down when its own parent process
	// changes (the parent died and the kernel was re-parented).
	ParentPID int
}

// Kernel is one running Jupyter kernel.
type Kernel struct {
	cfg     Config
	signer  *wire.Signer
	session string
	log     *log.Logger
	history *History

	shell, control, stdin, iopub, hb zmq4.Socket

	iopubMu sync.Mutex
	replay  replayGuard

	queue execQueue

	runMu     sync.Mutex
	runCancel context.CancelFunc

	countMu sync.Mutex
	count   int

	ctx      context.Context
	stop     context.CancelFunc
	shutdown chan bool // receives the restart flag of a shutdown_request
}

// New checks cfg and returns a kernel ready to Run.
func New(cfg Config) (*Kernel, error) {
	if cfg.Engine == nil {
		return nil, errors.New("kernel: no engine")
	}
	if err := cfg.Conn.Validate(); err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	if cfg.History == nil {
		cfg.History, _ = OpenHistory("")
	}
	return &Kernel{
		cfg:      cfg,
		signer:   wire.NewSigner([]byte(cfg.Conn.Key)),
		session:  uuid.NewString(),
		log:      cfg.Log,
		history:  cfg.History,
		shutdown: make(chan bool, 1),
		queue:    execQueue{notify: make(chan struct{}, 1)},
	}, nil
}

// Run binds the channels and serves until a shutdown_request arrives or
// ctx is cancelled. It returns whether the shutdown asked for a restart
// (the client then starts a new kernel process).
func (k *Kernel) Run(ctx context.Context) (restart bool, err error) {
	k.ctx, k.stop = context.WithCancel(ctx)
	defer k.stop()
	c := k.cfg.Conn
	sockOpts := []zmq4.Option{zmq4.WithTimeout(sendTimeout), zmq4.WithLogger(k.log)}
	k.shell = zmq4.NewRouter(k.ctx, sockOpts...)
	k.control = zmq4.NewRouter(k.ctx, sockOpts...)
	k.stdin = zmq4.NewRouter(k.ctx, sockOpts...)
	k.iopub = zmq4.NewPub(k.ctx, sockOpts...)
	k.hb = zmq4.NewRep(k.ctx, sockOpts...)
	socks := []struct {
		s    zmq4.Socket
		name string
		port int
	}{
		{k.hb, "hb", c.HBPort}, {k.iopub, "iopub", c.IOPubPort}, {k.control, "control", c.ControlPort},
		{k.stdin, "stdin", c.StdinPort}, {k.shell, "shell", c.ShellPort},
	}
	defer func() {
		for _, s := range socks {
			s.s.Close()
		}
	}()
	for _, s := range socks {
		if err := s.s.Listen(c.endpoint(s.port)); err != nil {
			return false, fmt.Errorf("kernel: bind %s channel: %w", s.name, err)
		}
	}

	var wg sync.WaitGroup
	goFn := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	shellIn := make(chan *wire.Message, 64)
	controlIn := make(chan *wire.Message, 16)
	goFn(k.heartbeat)
	goFn(func() { k.receive(k.shell, "shell", shellIn) })
	goFn(func() { k.receive(k.control, "control", controlIn) })
	goFn(func() { k.receive(k.stdin, "stdin", nil) })
	goFn(func() { k.serveControl(controlIn) })
	goFn(func() { k.serveShell(shellIn) })
	goFn(k.executor)

	parentGone := make(chan struct{})
	if w := newParentWatch(k.cfg.ParentPID); w != nil {
		goFn(func() { k.watchParent(k.ctx, w, parentGone) })
	}

	k.publish(nil, "status", map[string]any{"execution_state": "starting"})
	select {
	case restart = <-k.shutdown:
	case <-k.ctx.Done():
	case <-parentGone:
	}
	k.Interrupt()
	// Linger: IOPub sends are queued; give the last status messages (the
	// idle after shutdown_reply) a moment to leave before closing.
	time.Sleep(50 * time.Millisecond)
	k.stop()
	if cl, ok := k.cfg.Engine.(io.Closer); ok {
		cl.Close()
	}
	for _, s := range socks {
		s.s.Close()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		k.log.Printf("kernel: some goroutines did not stop within 2 s of shutdown")
	}
	return restart, nil
}

// Interrupt cancels the running cell, if any. It is what interrupt_request
// and SIGINT do.
func (k *Kernel) Interrupt() {
	k.runMu.Lock()
	defer k.runMu.Unlock()
	if k.runCancel != nil {
		k.runCancel()
	}
}

func (k *Kernel) heartbeat() {
	for {
		msg, err := k.hb.Recv()
		if err != nil {
			if k.ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err := k.hb.Send(msg); err != nil && k.ctx.Err() == nil {
			k.log.Printf("heartbeat: %v", err)
		}
	}
}

// receive reads one ROUTER socket, drops what does not verify, and passes
// the rest on.
func (k *Kernel) receive(sock zmq4.Socket, name string, out chan<- *wire.Message) {
	for {
		zm, err := sock.Recv()
		if err != nil {
			if k.ctx.Err() != nil {
				return
			}
			k.log.Printf("%s: receive: %v", name, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		m, err := k.signer.Parse(zm.Frames)
		if err != nil {
			k.log.Printf("%s: dropped a message: %v", name, err)
			continue
		}
		if k.signer.Enabled() && !k.replay.fresh(wire.Signature(zm.Frames)) {
			k.log.Printf("%s: dropped a replayed %s (duplicate signature)", name, m.Header.MsgType)
			continue
		}
		if out == nil {
			k.log.Printf("%s: ignored %s (input requests are not supported)", name, m.Header.MsgType)
			continue
		}
		select {
		case out <- m:
		case <-k.ctx.Done():
			return
		}
	}
}

// serveShell answers shell requests; execute requests go to the executor
// queue so that the rest are answered while a cell runs.
func (k *Kernel) serveShell(in <-chan *wire.Message) {
	for {
		select {
		case <-k.ctx.Done():
			return
		case m := <-in:
			if m.Header.MsgType == "execute_request" {
				k.queue.push(m)
				continue
			}
			k.handle(k.shell, m)
		}
	}
}

func (k *Kernel) serveControl(in <-chan *wire.Message) {
	for {
		select {
		case <-k.ctx.Done():
			return
		case m := <-in:
			k.handle(k.control, m)
		}
	}
}

// handle answers one non-execute request: busy, reply on the channel it
// came on, idle.
func (k *Kernel) handle(sock zmq4.Socket, m *wire.Message) {
	k.status(m, "busy")
	var after func()
	defer func() {
		if p := recover(); p != nil {
			k.log.Printf("%s: internal error: %v\n%s", m.Header.MsgType, p, debug.Stack())
			k.reply(sock, m, replyType(m.Header.MsgType), errorContent("InternalError",
				fmt.Sprintf("the kernel failed on this request: %v", p)))
		}
		k.status(m, "idle")
		if after != nil {
			after()
		}
	}()
	switch t := m.Header.MsgType; t {
	case "kernel_info_request":
		k.reply(sock, m, "kernel_info_reply", k.kernelInfo())
	case "complete_request":
		k.complete(sock, m)
	case "inspect_request":
		k.inspect(sock, m)
	case "is_complete_request":
		k.isComplete(sock, m)
	case "history_request":
		k.historyReply(sock, m)
	case "comm_info_request":
		k.reply(sock, m, "comm_info_reply", map[string]any{"status": "ok", "comms": map[string]any{}})
	case "comm_open":
		// No comm targets exist: close the comm so the front end does not
		// wait for it.
		var c struct {
			CommID     string `json:"comm_id"`
			TargetName string `json:"target_name"`
		}
		json.Unmarshal(m.Content, &c)
		k.log.Printf("comm_open to unknown target %q: closing it", c.TargetName)
		k.publish(m, "comm_close", map[string]any{"comm_id": c.CommID, "data": map[string]any{}})
	case "comm_msg", "comm_close":
		// Messages to comms that were never opened; nothing to do.
	case "interrupt_request":
		k.Interrupt()
		k.reply(sock, m, "interrupt_reply", map[string]any{"status": "ok"})
	case "shutdown_request":
		var c struct {
			Restart bool `json:"restart"`
		}
		json.Unmarshal(m.Content, &c)
		k.reply(sock, m, "shutdown_reply", map[string]any{"status": "ok", "restart": c.Restart})
		// Even with restart, the process exits: jupyter_client's
		// restart_kernel waits for the process to end and starts a new one
		// (and kills a kernel that stays up after 5 s).
		after = func() {
			select {
			case k.shutdown <- c.Restart:
			default:
			}
		}
	default:
		k.log.Printf("unsupported request %q: error reply", t)
		k.reply(sock, m, replyType(t), errorContent("UnsupportedRequest",
			fmt.Sprintf("privnotes does not handle %q messages", t)))
	}
}

func replyType(requestType string) string {
	return strings.TrimSuffix(requestType, "_request") + "_reply"
}

func errorContent(ename, evalue string) map[string]any {
	return map[string]any{"status": "error", "ename": ename, "evalue": evalue, "traceback": []string{ename + ": " + evalue}}
}

// badRequest answers a request whose content does not decode.
func (k *Kernel) badRequest(sock zmq4.Socket, m *wire.Message, replyType string, err error) {
	k.log.Printf("%s: bad content: %v", m.Header.MsgType, err)
	k.reply(sock, m, replyType, errorContent("BadRequest",
		fmt.Sprintf("the %s content is not valid: %v", m.Header.MsgType, err)))
}

// message builds an outgoing message with a fresh header.
func (k *Kernel) message(parent *wire.Message, msgType string, content any) (*wire.Message, error) {
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", msgType, err)
	}
	m := &wire.Message{Header: wire.NewHeader(msgType, k.session, "privnotes"), Content: b}
	if parent != nil {
		m.Parent = parent.RawHeader()
		m.Header.Username = parent.Header.Username
	}
	return m, nil
}

func (k *Kernel) reply(sock zmq4.Socket, parent *wire.Message, msgType string, content any) {
	m, err := k.message(parent, msgType, content)
	if err != nil {
		k.log.Printf("reply: %v", err)
		return
	}
	m.Identities = parent.Identities
	frames, err := k.signer.Serialize(m)
	if err != nil {
		k.log.Printf("reply: %v", err)
		return
	}
	// zmq4's ROUTER serializes concurrent sends itself; no lock here, so a
	// send stuck on a vanished shell peer cannot hold up control replies.
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil && k.ctx.Err() == nil {
		k.log.Printf("send %s: %v", msgType, err)
	}
}

// publish sends an IOPub message; messages go out in the order of the
// calls.
func (k *Kernel) publish(parent *wire.Message, msgType string, content any) {
	m, err := k.message(parent, msgType, content)
	if err != nil {
		k.log.Printf("publish: %v", err)
		return
	}
	frames, err := k.signer.Serialize(m)
	if err != nil {
		k.log.Printf("publish: %v", err)
		return
	}
	// The topic frame: clients subscribe to everything, the convention is
	// kernel.<session>.<msg_type>.
	frames = append([][]byte{[]byte("kernel." + k.session + "." + msgType)}, frames...)
	k.iopubMu.Lock()
	defer k.iopubMu.Unlock()
	if err := k.iopub.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil && k.ctx.Err() == nil {
		k.log.Printf("publish %s: %v", msgType, err)
	}
}

func (k *Kernel) status(parent *wire.Message, state string) {
	k.publish(parent, "status", map[string]any{"execution_state": state})
}

// replayGuard remembers recent signatures so that a captured message
// cannot be replayed (jupyter_client applies the same rule to kernels).
type replayGuard struct {
	mu   sync.Mutex
	seen map[string]bool
	ring []string
	next int
}

const replayWindow = 1 << 14

func (g *replayGuard) fresh(sig []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = make(map[string]bool, replayWindow)
		g.ring = make([]string, replayWindow)
	}
	s := string(sig)
	if g.seen[s] {
		return false
	}
	if old := g.ring[g.next]; old != "" {
		delete(g.seen, old)
	}
	g.ring[g.next] = s
	g.next = (g.next + 1) % replayWindow
	g.seen[s] = true
	return true
}
