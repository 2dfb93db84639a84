package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/enginetest"
)

// publicPanic is the fake engine plus "public-panic", a panic on the cell's
// goroutine in code that handles no private data.
type publicPanic struct{ *enginetest.Fake }

func (p publicPanic) Execute(ctx context.Context, req engine.ExecuteRequest, out engine.Output) engine.ExecuteResult {
	if req.Code == "public-panic" {
		panic("public bug")
	}
	return p.Fake.Execute(ctx, req, out)
}

// serveConn drives Serve in process, as the supervisor does over the
// pipes.
type serveConn struct {
	t      *testing.T
	in     *io.PipeWriter
	frames chan *frame
	done   chan error
}

func startServe(t *testing.T) *serveConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &serveConn{t: t, in: inW, frames: make(chan *frame, 100), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, publicPanic{enginetest.New()})
		outW.Close()
		c.done <- err
	}()
	go func() {
		defer close(c.frames)
		for {
			f, err := readFrame(outR)
			if err != nil {
				return
			}
			c.frames <- f
		}
	}()
	t.Cleanup(func() { inW.Close() })
	if f := c.next(); f.Type != tHello || f.PID != os.Getpid() {
		t.Fatalf("first frame %+v, want hello with pid %d", f, os.Getpid())
	}
	return c
}

func (c *serveConn) send(f *frame) {
	c.t.Helper()
	if err := writeFrame(c.in, f); err != nil {
		c.t.Fatal(err)
	}
}

func (c *serveConn) next() *frame {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.t.Fatal("Serve closed its output")
		}
		return f
	case <-time.After(hang):
		c.t.Fatalf("no frame from Serve within %v", hang)
		return nil
	}
}

// result waits for Serve's error.
func (c *serveConn) result() error {
	c.t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(hang):
		c.t.Fatalf("Serve did not return within %v", hang)
		return nil
	}
}

func TestServeRequests(t *testing.T) {
	c := startServe(t)
	c.send(&frame{ID: 1, Type: tExecute, Execute: &engine.ExecuteRequest{Code: "print a\neprint b\ndisplay d x\nclear\nvalue 3"}})
	var got []string
	for {
		f := c.next()
		if f.ID != 1 {
			t.Fatalf("frame %+v of another request", f)
		}
		switch f.Type {
		case tStream:
			got = append(got, f.Name+":"+f.Text)
		case tDisplay:
			got = append(got, "display:"+f.Display.DisplayID)
		case tClear:
			got = append(got, "clear")
		}
		if f.Type == tResult {
			if f.Result.Error != nil || f.Result.Value.Data["text/plain"] != "3" {
				t.Errorf("result %+v", f.Result)
			}
			break
		}
	}
	if strings.Join(got, "|") != "stdout:a\n|stderr:b\n|display:d|clear" {
		t.Errorf("outputs %q", got)
	}

	c.send(&frame{ID: 2, Type: tComplete, Code: "pri", Cursor: 3})
	if f := c.next(); f.ID != 2 || f.Type != tCompletion || strings.Join(f.Completion.Matches, ",") != "print" {
		t.Errorf("completion %+v", f)
	}
	c.send(&frame{ID: 3, Type: tInspect, Code: "block", Cursor: 1})
	if f := c.next(); f.ID != 3 || f.Type != tInspection || !f.Inspection.Found {
		t.Errorf("inspection %+v", f)
	}
	c.send(&frame{ID: 4, Type: tIsComplete, Code: "x {"})
	if f := c.next(); f.ID != 4 || f.Type != tCompleteness || f.Completeness.Status != "incomplete" {
		t.Errorf("completeness %+v", f)
	}

	// A blocked cell stops on its cancel; a cancel of an unknown id is
	// ignored.
	c.send(&frame{ID: 5, Type: tExecute, Execute: &engine.ExecuteRequest{Code: "print started\nblock"}})
	if f := c.next(); f.ID != 5 || f.Type != tStream || f.Text != "started\n" {
		t.Fatalf("frame %+v, want the cell's first output", f)
	}
	c.send(&frame{ID: 99, Type: tCancel})
	c.send(&frame{ID: 5, Type: tCancel})
	if f := c.next(); f.ID != 5 || f.Type != tResult || f.Result.Error == nil || f.Result.Error.Name != "Interrupted" {
		t.Errorf("cancelled cell %+v", f)
	}

	// A panic that escapes the engine costs the cell, with the panic's
	// value and stack (this code handles no private data).
	c.send(&frame{ID: 6, Type: tExecute, Execute: &engine.ExecuteRequest{Code: "public-panic"}})
	f := c.next()
	if f.ID != 6 || f.Type != tResult || f.Result.Error == nil {
		t.Fatalf("panicking cell %+v", f)
	}
	if e := f.Result.Error; e.Name != "InternalError" || e.Value != "the engine panicked: public bug" ||
		len(e.Traceback) != 2 || e.Traceback[0] != "panic: public bug" || !strings.Contains(e.Traceback[1], "goroutine ") {
		t.Errorf("panic reported as %+v", e)
	}

	c.send(&frame{ID: 7, Type: tExecute})
	if err := c.result(); err == nil || err.Error() != "worker protocol: execute frame 7 without a request" {
		t.Errorf("Serve: %v", err)
	}
}

func TestServeProtocolErrors(t *testing.T) {
	c := startServe(t)
	c.send(&frame{ID: 1, Type: "bogus"})
	if err := c.result(); err == nil || err.Error() != `worker protocol: unknown request type "bogus"` {
		t.Errorf("unknown type: %v", err)
	}

	c = startServe(t)
	c.in.Write([]byte{0, 0, 0, 2, '{', '['})
	if err := c.result(); err == nil || !strings.HasPrefix(err.Error(), "worker protocol: decode: ") {
		t.Errorf("corrupt frame: %v", err)
	}

	// The kernel went away: EOF ends Serve without an error.
	c = startServe(t)
	c.in.Close()
	if err := c.result(); err != nil {
		t.Errorf("EOF: %v", err)
	}

	// ... at once, even while a long cell runs (block waits for its
	// context, which the old Serve cancelled only after waiting): a
	// worker whose kernel died must not go on running (and charging).
	c = startServe(t)
	c.send(&frame{ID: 1, Type: tExecute, Execute: &engine.ExecuteRequest{Code: "block"}})
	time.Sleep(50 * time.Millisecond)
	c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("EOF with a running cell: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("Serve waited for the running cell after the kernel went away")
	}

	// A worker that cannot even say hello stops at once.
	broken := errors.New("broken pipe")
	if err := Serve(context.Background(), strings.NewReader(""), failingWriter{broken}, enginetest.New()); !errors.Is(err, broken) {
		t.Errorf("Serve with a broken output: %v", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestServeFatalAndFrameErrors(t *testing.T) {
	var buf bytes.Buffer
	ServeFatal(&buf, errors.New("no engine"))
	if f, err := readFrame(&buf); err != nil || f.Type != tFatal || f.Text != "no engine" {
		t.Errorf("fatal frame %+v, %v", f, err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 10, '{'})); err == nil || err.Error() != "worker protocol: truncated frame: unexpected EOF" {
		t.Errorf("truncated frame: %v", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated length: %v", err)
	}
	err := writeFrame(&buf, &frame{Type: tDisplay, Display: &engine.Display{Data: engine.MIMEBundle{"x": math.NaN()}}})
	if err == nil || err.Error() != "worker protocol: encode display: json: unsupported value: NaN" {
		t.Errorf("unencodable frame: %v", err)
	}
}
