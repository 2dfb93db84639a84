package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
)

// Config says how a Supervisor starts its worker.
type Config struct {
	// Path and Args are the worker's command line, e.g. the privnotes
	// binary and ["worker", "--state", dir].
	Path string
	Args []string
	// Env is the worker's environment; nil means the supervisor's own.
	Env []string
	// InterruptGrace bounds how long an interrupted cell may take to
	// stop before the worker is killed and restarted (default 2 s).
	InterruptGrace time.Duration
	// RequestTimeout bounds complete, inspect and is_complete requests
	// (default 5 s); on timeout they answer "nothing found".
	RequestTimeout time.Duration
	// Log receives the worker's stdout and stderr, line by line, and
	// supervision events. Nil discards them.
	Log *log.Logger
}

// Error names the Supervisor reports in ExecuteResult.Error.
const (
	ErrRestarted   = "InterpreterRestarted"
	ErrUnavailable = "InterpreterUnavailable"
)

// Supervisor implements engine.Engine by forwarding every call to a worker
// process, and restarts that process when it dies or ignores an interrupt.
// It is safe for concurrent use; Execute calls are serialized by the
// caller, as engine.Engine requires.
type Supervisor struct {
	cfg    Config
	nextID atomic.Uint64

	mu       sync.Mutex
	cur      *proc
	closed   bool
	lostFrom *proc // a worker that died between cells; the next cell is told
}

var _ engine.Engine = (*Supervisor)(nil)

// NewSupervisor starts a worker and returns its supervisor. The worker
// initialises its engine in the background; the first request waits for it.
func NewSupervisor(cfg Config) (*Supervisor, error) {
	if cfg.InterruptGrace <= 0 {
		cfg.InterruptGrace = 2 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	s := &Supervisor{cfg: cfg}
	p, err := s.start()
	if err != nil {
		return nil, err
	}
	s.cur = p
	return s, nil
}

// PID returns the process id of the current worker, or 0 if none runs.
func (s *Supervisor) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0
	}
	return s.cur.cmd.Process.Pid
}

// Restart kills the worker (losing its variables) and starts a new one.
func (s *Supervisor) Restart() error {
	s.mu.Lock()
	old := s.cur
	s.cur = nil
	s.mu.Unlock()
	if old != nil {
		old.kill()
		<-old.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("worker: supervisor is closed")
	}
	if s.cur != nil { // a concurrent call already started one
		return nil
	}
	p, err := s.start()
	if err != nil {
		return err
	}
	s.cur = p
	return nil
}

// Close kills the worker and waits for it to exit.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	s.closed = true
	p := s.cur
	s.cur = nil
	s.mu.Unlock()
	if p != nil {
		p.kill()
		<-p.done
	}
	return nil
}

// current returns the running worker, starting one if needed. lost is the
// reason a previous worker died between cells, reported once.
func (s *Supervisor) current() (p *proc, lost string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", errors.New("the kernel is shutting down")
	}
	if s.lostFrom != nil {
		lost = s.lostFrom.reason
		s.lostFrom = nil
	}
	if s.cur != nil {
		select {
		case <-s.cur.done:
			if lost == "" && s.cur.gotHello.Load() {
				lost = s.cur.reason
			}
			s.cur = nil
		default:
			return s.cur, lost, nil
		}
	}
	p, err = s.start()
	if err != nil {
		return nil, lost, err
	}
	s.cur = p
	return p, lost, nil
}

// replace starts a new worker in place of p, which has exited, unless that
// was already done.
func (s *Supervisor) replace(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostFrom == p {
		s.lostFrom = nil // the cell that was running is told instead
	}
	if s.cur != p || s.closed {
		return
	}
	s.cur = nil
	if np, err := s.start(); err == nil {
		s.cur = np
	} else {
		s.cfg.Log.Printf("worker: restart failed: %v", err)
	}
}

// exited is called when a worker process has ended. A worker that dies on
// its own between cells (a goroutine of an earlier cell panicked) is
// replaced at once, and the next cell is warned that variables were lost.
func (s *Supervisor) exited(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Log.Printf("worker %d exited: %s", p.pid, p.reason)
	if s.cur != p || s.closed || p.killed.Load() || !p.gotHello.Load() {
		// Killed on purpose, already replaced, or failed at start-up (no
		// eager restart, so a broken installation cannot loop).
		return
	}
	p.mu.Lock()
	busy := false
	for _, c := range p.calls {
		busy = busy || c.out != nil // an execute, which reports the death itself
	}
	p.mu.Unlock()
	if !busy {
		s.lostFrom = p
	}
	s.cur = nil
	if np, err := s.start(); err == nil {
		s.cur = np
	}
}

// Execute runs a cell in the worker. Cancelling ctx interrupts it; a cell
// that does not stop within InterruptGrace, or a worker that dies, gives an
// InterpreterRestarted error and a fresh worker for the next cell.
func (s *Supervisor) Execute(ctx context.Context, req engine.ExecuteRequest, out engine.Output) engine.ExecuteResult {
	p, lost, err := s.current()
	if lost != "" {
		out.Stream("stderr", fmt.Sprintf("%s: the interpreter process exited after the previous cell (%s); variables were lost; the ledger is unaffected\n", ErrRestarted, lost))
	}
	if err != nil {
		return errorResult(ErrUnavailable, fmt.Sprintf("could not start the interpreter: %v", err))
	}
	c, err := p.request(&frame{ID: s.nextID.Add(1), Type: tExecute, Execute: &req}, out)
	if err != nil {
		return s.died(p)
	}
	select {
	case f := <-c.ch:
		return resultOf(f)
	case <-p.done:
		return s.died(p)
	case <-ctx.Done():
	}
	p.send(&frame{ID: c.id, Type: tCancel})
	grace := time.NewTimer(s.cfg.InterruptGrace)
	defer grace.Stop()
	select {
	case f := <-c.ch:
		return resultOf(f)
	case <-p.done:
		return s.died(p)
	case <-grace.C:
	}
	s.cfg.Log.Printf("worker %d: cell ignored the interrupt for %v; killing it", p.pid, s.cfg.InterruptGrace)
	p.kill()
	<-p.done
	s.replace(p)
	return errorResult(ErrRestarted, fmt.Sprintf(
		"the cell did not stop within %v of the interrupt, so the interpreter process was restarted; variables were lost; the ledger is unaffected",
		s.cfg.InterruptGrace))
}

func (s *Supervisor) died(p *proc) engine.ExecuteResult {
	<-p.done
	s.replace(p)
	if p.fatal != "" {
		return errorResult(ErrUnavailable, "the interpreter could not start: "+p.fatal)
	}
	return errorResult(ErrRestarted, fmt.Sprintf(
		"the interpreter process exited (%s); variables were lost; the ledger is unaffected", p.reason))
}

func resultOf(f *frame) engine.ExecuteResult {
	if f.Result == nil {
		return errorResult("InternalError", "the worker sent a result frame without a result")
	}
	return *f.Result
}

func errorResult(name, msg string) engine.ExecuteResult {
	return engine.ExecuteResult{Error: &engine.Error{Name: name, Value: msg, Traceback: []string{name + ": " + msg}}}
}

// ask sends a short request and waits for its reply, giving up after
// RequestTimeout or when the worker dies.
func (s *Supervisor) ask(f *frame) *frame {
	p, _, err := s.current()
	if err != nil {
		return nil
	}
	f.ID = s.nextID.Add(1)
	c, err := p.request(f, nil)
	if err != nil {
		return nil
	}
	t := time.NewTimer(s.cfg.RequestTimeout)
	defer t.Stop()
	select {
	case r := <-c.ch:
		return r
	case <-p.done:
	case <-t.C:
		p.forget(c.id)
	}
	return nil
}

// Complete forwards to the worker; it answers while a cell runs.
func (s *Supervisor) Complete(code string, cursor int) engine.Completion {
	if r := s.ask(&frame{Type: tComplete, Code: code, Cursor: cursor}); r != nil && r.Completion != nil {
		return *r.Completion
	}
	return engine.Completion{Matches: []string{}, CursorStart: cursor, CursorEnd: cursor, Metadata: map[string]any{}}
}

// Inspect forwards to the worker.
func (s *Supervisor) Inspect(code string, cursor int, detail int) engine.Inspection {
	if r := s.ask(&frame{Type: tInspect, Code: code, Cursor: cursor, Detail: detail}); r != nil && r.Inspection != nil {
		return *r.Inspection
	}
	return engine.Inspection{Found: false, Data: engine.MIMEBundle{}}
}

// IsComplete forwards to the worker.
func (s *Supervisor) IsComplete(code string) engine.Completeness {
	if r := s.ask(&frame{Type: tIsComplete, Code: code}); r != nil && r.Completeness != nil {
		return *r.Completeness
	}
	return engine.Completeness{Status: "unknown"}
}

// proc is one worker process.
type proc struct {
	cmd      *exec.Cmd
	pid      int
	toWorker *os.File
	wmu      sync.Mutex

	mu    sync.Mutex
	calls map[uint64]*call

	gotHello atomic.Bool
	killed   atomic.Bool
	stderr   *tailWriter
	// Set before done is closed.
	fatal  string
	reason string
	done   chan struct{}
}

type call struct {
	id  uint64
	out engine.Output // nil for non-execute requests
	ch  chan *frame
}

func (s *Supervisor) start() (*proc, error) {
	toWorkerR, toWorkerW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker: pipe: %w", err)
	}
	fromWorkerR, fromWorkerW, err := os.Pipe()
	if err != nil {
		toWorkerR.Close()
		toWorkerW.Close()
		return nil, fmt.Errorf("worker: pipe: %w", err)
	}
	cmd := exec.Command(s.cfg.Path, s.cfg.Args...)
	cmd.Env = workerEnv(s.cfg.Env)
	cmd.ExtraFiles = []*os.File{toWorkerR, fromWorkerW} // fd 3 and fd 4
	tail := &tailWriter{log: s.cfg.Log, prefix: "worker stderr: ", reports: true}
	cmd.Stdout = &tailWriter{log: s.cfg.Log, prefix: "worker stdout: "}
	cmd.Stderr = tail
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	toWorkerR.Close()
	fromWorkerW.Close()
	if err != nil {
		toWorkerW.Close()
		fromWorkerR.Close()
		return nil, fmt.Errorf("worker: start %s: %w", s.cfg.Path, err)
	}
	p := &proc{
		cmd: cmd, pid: cmd.Process.Pid, toWorker: toWorkerW,
		calls: map[uint64]*call{}, stderr: tail, done: make(chan struct{}),
	}
	go s.readLoop(p, fromWorkerR)
	return p, nil
}

func (s *Supervisor) readLoop(p *proc, r *os.File) {
	defer r.Close()
	var protoErr error
	for {
		f, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				protoErr = err
			}
			break
		}
		p.dispatch(f)
	}
	if protoErr != nil {
		// The stream is corrupt; nothing more from this worker can be
		// trusted.
		s.cfg.Log.Printf("worker %d: %v; killing it", p.pid, protoErr)
		p.cmd.Process.Kill()
	}
	p.toWorker.Close()
	werr := p.cmd.Wait()
	p.reason = p.stderr.finish(p.pid, werr, protoErr)
	close(p.done)
	s.exited(p)
}

func (p *proc) dispatch(f *frame) {
	switch f.Type {
	case tHello:
		p.gotHello.Store(true)
		return
	case tFatal:
		p.fatal = f.Text
		return
	}
	p.mu.Lock()
	c := p.calls[f.ID]
	switch f.Type {
	case tResult, tCompletion, tInspection, tCompleteness:
		delete(p.calls, f.ID)
	}
	p.mu.Unlock()
	if c == nil {
		return // output of a cell already given up on
	}
	switch f.Type {
	case tStream:
		if c.out != nil {
			c.out.Stream(f.Name, f.Text)
		}
	case tDisplay:
		if c.out != nil && f.Display != nil {
			c.out.Display(*f.Display)
		}
	case tClear:
		if c.out != nil {
			c.out.ClearOutput(f.Wait)
		}
	default:
		c.ch <- f
	}
}

func (p *proc) request(f *frame, out engine.Output) (*call, error) {
	c := &call{id: f.ID, out: out, ch: make(chan *frame, 1)}
	p.mu.Lock()
	p.calls[f.ID] = c
	p.mu.Unlock()
	if err := p.send(f); err != nil {
		p.forget(f.ID)
		return nil, err
	}
	return c, nil
}

func (p *proc) forget(id uint64) {
	p.mu.Lock()
	delete(p.calls, id)
	p.mu.Unlock()
}

func (p *proc) send(f *frame) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return writeFrame(p.toWorker, f)
}

func (p *proc) kill() {
	p.killed.Store(true)
	p.cmd.Process.Kill()
}

// workerEnv is the worker's environment: env (nil: the supervisor's own)
// with GOTRACEBACK=single, so that a crash report shows the crashing
// goroutine's frames (which decide whether it is withheld, see crash.go)
// and no other goroutine's.
func workerEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOTRACEBACK=") {
			out = append(out, kv)
		}
	}
	return append(out, "GOTRACEBACK=single")
}
