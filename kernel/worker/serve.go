package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

	"github.com/privnotes/privnotes/dsl/engine"
)

// Serve is the worker side: it reads requests from in, runs them on eng and
// writes outputs and replies to out, until in reaches EOF (the kernel went
// away) or ctx is done. Cells run one at a time, in a goroutine of their
// own, so that cancel, complete, inspect and is_complete requests are
// served while a cell runs.
//
// At EOF Serve cancels the cells that still run and returns nil at once,
// without waiting for them: the kernel is gone, nobody will see what they
// release, and a cell must not go on charging the budget (lifeline.go).
// The caller exits. On other errors and when ctx is done, Serve waits for
// the running cells.
func Serve(ctx context.Context, in io.Reader, out io.Writer, eng engine.Engine) error {
	s := &server{out: out, eng: eng, cancels: map[uint64]context.CancelFunc{}}
	if err := s.send(&frame{Type: tHello, PID: os.Getpid()}); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	kernelGone := false
	defer func() {
		if !kernelGone {
			wg.Wait()
		}
	}()
	for {
		f, err := readFrame(in)
		if err != nil {
			if errors.Is(err, io.EOF) {
				kernelGone = true
				return nil
			}
			return err
		}
		switch f.Type {
		case tExecute:
			if f.Execute == nil {
				return fmt.Errorf("worker protocol: execute frame %d without a request", f.ID)
			}
			cctx, cancel := context.WithCancel(ctx)
			s.mu.Lock()
			s.cancels[f.ID] = cancel
			s.mu.Unlock()
			wg.Add(1)
			go func(id uint64, req engine.ExecuteRequest) {
				defer wg.Done()
				res := s.execute(cctx, id, req)
				s.mu.Lock()
				delete(s.cancels, id)
				s.mu.Unlock()
				cancel()
				s.send(&frame{ID: id, Type: tResult, Result: &res})
			}(f.ID, *f.Execute)
		case tCancel:
			s.mu.Lock()
			if cancel := s.cancels[f.ID]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
		case tComplete:
			go func(f *frame) {
				c := s.eng.Complete(f.Code, f.Cursor)
				s.send(&frame{ID: f.ID, Type: tCompletion, Completion: &c})
			}(f)
		case tInspect:
			go func(f *frame) {
				i := s.eng.Inspect(f.Code, f.Cursor, f.Detail)
				s.send(&frame{ID: f.ID, Type: tInspection, Inspection: &i})
			}(f)
		case tIsComplete:
			go func(f *frame) {
				c := s.eng.IsComplete(f.Code)
				s.send(&frame{ID: f.ID, Type: tCompleteness, Completeness: &c})
			}(f)
		default:
			return fmt.Errorf("worker protocol: unknown request type %q", f.Type)
		}
	}
}

// ServeFatal tells the supervisor that the engine could not start, so that
// the first cell reports why instead of a bare "the interpreter exited".
func ServeFatal(out io.Writer, err error) {
	writeFrame(out, &frame{Type: tFatal, Text: err.Error()})
}

type server struct {
	eng     engine.Engine
	wmu     sync.Mutex
	out     io.Writer
	mu      sync.Mutex
	cancels map[uint64]context.CancelFunc
}

func (s *server) send(f *frame) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrame(s.out, f)
}

// execute runs one cell and turns a panic that escaped the engine into an
// error result, so a bug in the engine costs one cell, not the variables.
// A panic that went through a private computation is reported without its
// value or stack.
func (s *server) execute(ctx context.Context, id uint64, req engine.ExecuteRequest) (res engine.ExecuteResult) {
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			if privateFrames(stack) {
				// The value and the frames' arguments may depend on
				// private data (see crash.go): neither is shown.
				msg := "the engine panicked inside a private computation; the details are withheld because they may depend on the data"
				res = engine.ExecuteResult{Error: &engine.Error{Name: "InternalError", Value: msg, Traceback: []string{"InternalError: " + msg}}}
				return
			}
			res = engine.ExecuteResult{Error: &engine.Error{
				Name:      "InternalError",
				Value:     fmt.Sprintf("the engine panicked: %v", p),
				Traceback: []string{fmt.Sprintf("panic: %v", p), stack},
			}}
		}
	}()
	return s.eng.Execute(ctx, req, &frameOutput{s: s, id: id})
}

// frameOutput forwards a cell's outputs as frames tagged with its id.
type frameOutput struct {
	s  *server
	id uint64
}

func (o *frameOutput) Stream(name, text string) {
	o.s.send(&frame{ID: o.id, Type: tStream, Name: name, Text: text})
}

func (o *frameOutput) Display(d engine.Display) {
	o.s.send(&frame{ID: o.id, Type: tDisplay, Display: &d})
}

func (o *frameOutput) ClearOutput(wait bool) {
	o.s.send(&frame{ID: o.id, Type: tClear, Wait: wait})
}
