package interp

import (
	"regexp"
	"sync"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
)

// streamFlushDelay bounds how long printed text waits in the buffer, so a
// loop printing progress reaches the front end in time without sending one
// message per Println.
const (
	streamFlushDelay = 50 * time.Millisecond
	streamFlushSize  = 8 << 10
)

// router is the interpreter's stdout and stderr. It forwards text to the
// Output of the cell that runs (or of the last cell, for goroutines that
// outlive their cell), buffering a little and keeping the order of stdout,
// stderr and displays. It also takes yaegi's panic trace lines off stderr.
type router struct {
	mu    sync.Mutex
	out   engine.Output
	name  string // stream whose text is in buf
	buf   []byte
	timer *time.Timer
	trace []string // yaegi panic lines of the running chunk
}

// panicLine matches the line yaegi writes to stderr for each frame a panic
// unwinds: "12:3: panic: main.f(...)".
var panicLine = regexp.MustCompile(`^(\d+):(\d+): panic: (\S*)\(\.\.\.\)\n?$`)

func (r *router) setOutput(out engine.Output) {
	r.mu.Lock()
	r.flushLocked()
	r.out = out
	r.trace = nil
	r.mu.Unlock()
}

func (r *router) takeTrace() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.trace
	r.trace = nil
	return t
}

func (r *router) write(name string, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == "stderr" && panicLine.Match(p) {
		r.trace = append(r.trace, string(p))
		return
	}
	if r.name != name {
		r.flushLocked()
		r.name = name
	}
	r.buf = append(r.buf, p...)
	if len(r.buf) >= streamFlushSize {
		r.flushLocked()
		return
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(streamFlushDelay, r.flush)
	}
}

func (r *router) flush() {
	r.mu.Lock()
	r.flushLocked()
	r.mu.Unlock()
}

func (r *router) flushLocked() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if len(r.buf) == 0 {
		return
	}
	if r.out != nil {
		r.out.Stream(r.name, string(r.buf))
	}
	r.buf = r.buf[:0]
}

// display flushes pending text, then sends d, so outputs keep their order.
func (r *router) display(d engine.Display) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
	if r.out != nil {
		r.out.Display(d)
	}
}

func (r *router) clear(wait bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
	if r.out != nil {
		r.out.ClearOutput(wait)
	}
}

// cellOutput is the engine.Output handed to the plugin: it goes through
// the router so that the runtime's outputs are ordered with the cell's
// prints.
type cellOutput struct{ r *router }

func (c cellOutput) Stream(name, text string) { c.r.write(name, []byte(text)) }
func (c cellOutput) Display(d engine.Display) { c.r.display(d) }
func (c cellOutput) ClearOutput(wait bool)    { c.r.clear(wait) }

type streamWriter struct {
	r    *router
	name string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.r.write(w.name, p)
	return len(p), nil
}
