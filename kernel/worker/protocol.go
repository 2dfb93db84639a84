// Package worker runs user code in a child process and lets the kernel
// drive it as an engine.Engine.
//
// The kernel process owns the Jupyter sockets and never runs user code.
// A Supervisor (kernel side) starts "privnotes worker", which calls Serve
// (worker side) with the real engine. The two speak a small framed
// protocol over a pair of pipes on file descriptors 3 and 4 of the worker,
// not over stdin/stdout: compiled code that writes to fd 1 or 2 (a stray
// println, the Go runtime's crash report) cannot corrupt the protocol, and
// the supervisor collects those writes as the worker's log and the reason
// for a crash. A crash report that may hold private data (one whose stack
// goes through a mechanism, the DSL runtime or the ledger) is withheld
// from both: see crash.go.
//
// Each frame is a 4-byte big-endian length followed by one JSON object.
// Every request carries an id; the replies and the outputs of a cell carry
// the same id, so completion and inspection requests are answered while a
// cell runs.
package worker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/privnotes/privnotes/dsl/engine"
)

// maxFrame bounds one frame; a rich output (a PNG) fits easily, and a
// corrupt length prefix cannot make the reader allocate gigabytes.
const maxFrame = 64 << 20

// Frame types. Requests go from the supervisor to the worker, the others
// from the worker to the supervisor.
const (
	// requests
	tExecute    = "execute"
	tCancel     = "cancel" // interrupt the execute with the same id
	tComplete   = "complete"
	tInspect    = "inspect"
	tIsComplete = "is_complete"

	// worker to supervisor
	tHello        = "hello" // the engine is ready
	tFatal        = "fatal" // the engine could not start; Text says why
	tStream       = "stream"
	tDisplay      = "display"
	tClear        = "clear"
	tResult       = "result"
	tCompletion   = "completion"
	tInspection   = "inspection"
	tCompleteness = "completeness"
)

// frame is the one message shape of the protocol; each type uses a few of
// the fields.
type frame struct {
	ID   uint64 `json:"id"`
	Type string `json:"type"`

	Execute *engine.ExecuteRequest `json:"execute,omitempty"`
	Code    string                 `json:"code,omitempty"`
	Cursor  int                    `json:"cursor,omitempty"`
	Detail  int                    `json:"detail,omitempty"`

	Name    string          `json:"name,omitempty"` // stream name
	Text    string          `json:"text,omitempty"`
	Display *engine.Display `json:"display,omitempty"`
	Wait    bool            `json:"wait,omitempty"`
	PID     int             `json:"pid,omitempty"`

	Result       *engine.ExecuteResult `json:"result,omitempty"`
	Completion   *engine.Completion    `json:"completion,omitempty"`
	Inspection   *engine.Inspection    `json:"inspection,omitempty"`
	Completeness *engine.Completeness  `json:"completeness,omitempty"`
}

func writeFrame(w io.Writer, f *frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("worker protocol: encode %s: %w", f.Type, err)
	}
	if len(b) > maxFrame {
		return fmt.Errorf("worker protocol: %s frame of %d bytes exceeds %d", f.Type, len(b), maxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader) (*frame, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, fmt.Errorf("worker protocol: frame of %d bytes exceeds %d", size, maxFrame)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("worker protocol: truncated frame: %w", err)
	}
	f := new(frame)
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("worker protocol: decode: %w", err)
	}
	return f, nil
}
