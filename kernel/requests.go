package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-zeromq/zmq4"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/wire"
)

// LanguageVersion is the Go language level cells are written in: yaegi
// v0.16.1 implements Go 1.22 (no range-over-int or range-over-func).
const LanguageVersion = "1.22"

func (k *Kernel) kernelInfo() map[string]any {
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       wire.ProtocolVersion,
		"implementation":         Implementation,
		"implementation_version": k.cfg.Version,
		"language_info": map[string]any{
			"name":               "go",
			"version":            LanguageVersion,
			"mimetype":           "text/x-go",
			"file_extension":     ".go",
			"pygments_lexer":     "go",
			"codemirror_mode":    "go",
			"nbconvert_exporter": "script",
		},
		"banner": k.banner(),
		"help_links": []map[string]string{
			{"text": "privnotes documentation", "url": "https://github.com/privnotes/privnotes/tree/main/docs"},
			{"text": "Go language specification", "url": "https://go.dev/ref/spec"},
			{"text": "Go standard library", "url": "https://pkg.go.dev/std"},
			{"text": "gonum", "url": "https://pkg.go.dev/gonum.org/v1/gonum"},
		},
	}
}

// banner is kernel_info's banner (jupyter console prints it at start).
func (k *Kernel) banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "privnotes %s: differentially private analysis in Go (yaegi interpreter, Go %s cells; kernel built with %s)\n",
		k.cfg.Version, LanguageVersion, runtime.Version())
	if k.cfg.StateDir != "" {
		fmt.Fprintf(&b, "State directory: %s (the registered datasets and the privacy ledger)\n", k.cfg.StateDir)
	}
	b.WriteString("Type %help for the DSL functions, %datasets for the data you may query, %ledger for what was spent.")
	return b.String()
}

type codeCursor struct {
	Code        string `json:"code"`
	CursorPos   *int   `json:"cursor_pos"`
	DetailLevel int    `json:"detail_level"`
}

// cursor returns the cursor in code points, defaulting to the end of the
// code as the protocol says for a missing cursor_pos.
func (c codeCursor) cursor() int {
	n := utf8.RuneCountInString(c.Code)
	if c.CursorPos == nil || *c.CursorPos > n || *c.CursorPos < 0 {
		return n
	}
	return *c.CursorPos
}

func (k *Kernel) complete(sock zmq4.Socket, m *wire.Message) {
	var c codeCursor
	if err := json.Unmarshal(m.Content, &c); err != nil {
		k.badRequest(sock, m, "complete_reply", err)
		return
	}
	r := k.cfg.Engine.Complete(c.Code, c.cursor())
	if r.Matches == nil {
		r.Matches = []string{}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	k.reply(sock, m, "complete_reply", map[string]any{
		"status": "ok", "matches": r.Matches, "cursor_start": r.CursorStart, "cursor_end": r.CursorEnd,
		"metadata": r.Metadata,
	})
}

func (k *Kernel) inspect(sock zmq4.Socket, m *wire.Message) {
	var c codeCursor
	if err := json.Unmarshal(m.Content, &c); err != nil {
		k.badRequest(sock, m, "inspect_reply", err)
		return
	}
	r := k.cfg.Engine.Inspect(c.Code, c.cursor(), c.DetailLevel)
	data := r.Data
	if !r.Found || data == nil {
		data = engine.MIMEBundle{}
	} else {
		data = withTextPlain(data)
	}
	k.reply(sock, m, "inspect_reply", map[string]any{
		"status": "ok", "found": r.Found && len(data) > 0, "data": data, "metadata": map[string]any{},
	})
}

func (k *Kernel) isComplete(sock zmq4.Socket, m *wire.Message) {
	var c codeCursor
	if err := json.Unmarshal(m.Content, &c); err != nil {
		k.badRequest(sock, m, "is_complete_reply", err)
		return
	}
	r := k.cfg.Engine.IsComplete(c.Code)
	content := map[string]any{"status": r.Status}
	switch r.Status {
	case "complete", "invalid", "unknown":
	case "incomplete":
		content["indent"] = r.Indent
	default:
		content["status"] = "unknown"
	}
	k.reply(sock, m, "is_complete_reply", content)
}

func (k *Kernel) historyReply(sock zmq4.Socket, m *wire.Message) {
	var c struct {
		Output   bool   `json:"output"`
		Access   string `json:"hist_access_type"`
		Session  int    `json:"session"`
		Start    int    `json:"start"`
		Stop     int    `json:"stop"`
		N        int    `json:"n"`
		Pattern  string `json:"pattern"`
		Unique   bool   `json:"unique"`
		RawInput bool   `json:"raw"`
	}
	if err := json.Unmarshal(m.Content, &c); err != nil {
		k.badRequest(sock, m, "history_reply", err)
		return
	}
	var entries []HistoryEntry
	switch c.Access {
	case "tail":
		entries = k.history.Tail(c.N)
	case "range":
		entries = k.history.Range(c.Session, c.Start, c.Stop)
	case "search":
		entries = k.history.Search(c.Pattern, c.N, c.Unique)
	default:
		k.reply(sock, m, "history_reply", errorContent("BadRequest",
			fmt.Sprintf("hist_access_type %q is not one of tail, range, search", c.Access)))
		return
	}
	list := make([]any, 0, len(entries))
	for _, e := range entries {
		if c.Output {
			var out any
			if e.Output != nil {
				out = *e.Output
			}
			list = append(list, []any{e.Session, e.Line, []any{e.Input, out}})
		} else {
			list = append(list, []any{e.Session, e.Line, e.Input})
		}
	}
	k.reply(sock, m, "history_reply", map[string]any{"status": "ok", "history": list})
}

// withTextPlain returns data with a text/plain rendering, which the
// protocol requires of every execute_result and every front end can show.
func withTextPlain(data engine.MIMEBundle) engine.MIMEBundle {
	if _, ok := data["text/plain"]; ok {
		return data
	}
	out := make(engine.MIMEBundle, len(data)+1)
	types := make([]string, 0, len(data))
	for t, v := range data {
		out[t] = v
		types = append(types, t)
	}
	sort.Strings(types)
	out["text/plain"] = fmt.Sprintf("<%v>", types)
	return out
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// execQueue holds execute requests in arrival order.
type execQueue struct {
	mu     sync.Mutex
	items  []*wire.Message
	notify chan struct{}
}

func (q *execQueue) push(m *wire.Message) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *execQueue) pop() *wire.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	m := q.items[0]
	q.items = q.items[1:]
	return m
}

func (q *execQueue) drain() []*wire.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

func (k *Kernel) executor() {
	for {
		if m := k.queue.pop(); m != nil {
			if behind, count := k.execute(m); len(behind) > 0 {
				k.abortQueued(behind, count)
			}
			continue
		}
		select {
		case <-k.ctx.Done():
			return
		case <-k.queue.notify:
		}
	}
}

type executeContent struct {
	Code            string            `json:"code"`
	Silent          bool              `json:"silent"`
	UserExpressions map[string]string `json:"user_expressions"`
	StoreHistory    *bool             `json:"store_history"`
	StopOnError     *bool             `json:"stop_on_error"`
	AllowStdin      bool              `json:"allow_stdin"`
}

// execute runs one execute request; when the cell failed with
// stop_on_error set it returns the requests queued behind it, which the
// caller aborts (after this request's idle).
func (k *Kernel) execute(m *wire.Message) (behind []*wire.Message, count int) {
	k.status(m, "busy")
	defer k.status(m, "idle")
	defer func() {
		if p := recover(); p != nil {
			k.log.Printf("execute: internal error: %v\n%s", p, debug.Stack())
			k.reply(k.shell, m, "execute_reply", errorContent("InternalError",
				fmt.Sprintf("the kernel failed on this request: %v", p)))
		}
	}()
	var c executeContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		k.badRequest(k.shell, m, "execute_reply", err)
		return nil, 0
	}
	// Defaults from the protocol: store_history and stop_on_error are
	// true; silent forces store_history off.
	storeHistory := c.StoreHistory == nil || *c.StoreHistory
	stopOnError := c.StopOnError == nil || *c.StopOnError
	if c.Silent {
		storeHistory = false
	}
	k.countMu.Lock()
	if storeHistory {
		k.count++
	}
	count = k.count
	k.countMu.Unlock()
	// The cell is interruptible from before its execute_input is published:
	// a front end that interrupts as soon as it sees the cell start must
	// not find no cell to cancel.
	ctx, cancel := context.WithCancel(k.ctx)
	k.runMu.Lock()
	k.runCancel = cancel
	k.runMu.Unlock()
	if !c.Silent {
		k.publish(m, "execute_input", map[string]any{"code": c.Code, "execution_count": count})
	}
	var meta struct {
		CellID string `json:"cellId"`
	}
	json.Unmarshal(m.Metadata, &meta)
	if meta.CellID == "" {
		meta.CellID = m.Header.MsgID
	}

	out := &iopubOutput{k: k, parent: m, silent: c.Silent}
	res := k.cfg.Engine.Execute(ctx, engine.ExecuteRequest{
		Code: c.Code, Silent: c.Silent, StoreHistory: storeHistory,
		CellID: meta.CellID, ExecutionCount: count,
	}, out)
	k.runMu.Lock()
	k.runCancel = nil
	k.runMu.Unlock()
	cancel()
	payload := out.close()

	var output *string
	if e := res.Error; e != nil {
		// Coloured like ipykernel's; ename and evalue stay plain.
		tb := engine.ColoredTraceback(e)
		if !c.Silent {
			k.publish(m, "error", map[string]any{"ename": e.Name, "evalue": e.Value, "traceback": tb})
		}
		if stopOnError {
			// Only what is queued before the error reply leaves is aborted:
			// a request the client sends after reading the reply is not
			// "behind" the failed cell (draining after the reply raced with it).
			behind = k.queue.drain()
		}
		// The payload also on error, as ipykernel: help shown before the
		// failure still reaches the pager.
		k.reply(k.shell, m, "execute_reply", map[string]any{
			"status": "error", "execution_count": count, "ename": e.Name, "evalue": e.Value, "traceback": tb,
			"payload": payload,
		})
	} else {
		if v := res.Value; v != nil && !c.Silent {
			data := withTextPlain(v.Data)
			if s, ok := data["text/plain"].(string); ok {
				output = &s
			}
			k.publish(m, "execute_result", map[string]any{
				"execution_count": count, "data": data, "metadata": orEmptyMap(v.Metadata),
			})
		}
		k.reply(k.shell, m, "execute_reply", map[string]any{
			"status": "ok", "execution_count": count, "payload": payload,
			"user_expressions": k.userExpressions(c.UserExpressions, meta.CellID),
		})
	}
	if storeHistory {
		if err := k.history.Add(count, c.Code, output); err != nil {
			k.log.Printf("history: %v", err)
		}
	}
	return behind, count
}

// abortQueued answers the execute requests queued behind a failed cell with
// status "aborted": like ipykernel, it assumes they were sent expecting the
// failed cell to succeed.
func (k *Kernel) abortQueued(queued []*wire.Message, count int) {
	for _, q := range queued {
		k.status(q, "busy")
		k.reply(k.shell, q, "execute_reply", map[string]any{"status": "aborted", "execution_count": count})
		k.status(q, "idle")
	}
}

// iopubOutput publishes a cell's outputs with the request as parent.
// Stream text is coalesced for up to streamDelay so that a loop printing
// lines does not send one message per line; any other output, and the end
// of the cell, flushes it first, so order is kept.
type iopubOutput struct {
	k      *Kernel
	parent *wire.Message
	silent bool

	mu      sync.Mutex
	closed  bool
	name    string
	pending []byte
	timer   *time.Timer
	pages   []engine.MIMEBundle // help for the pager, sent with the reply
}

const (
	streamDelay = 20 * time.Millisecond
	streamMax   = 64 << 10
)

func (o *iopubOutput) Stream(name, text string) {
	if name != "stderr" {
		name = "stdout"
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.silent {
		return
	}
	if o.name != name {
		o.flushLocked()
	}
	o.name = name
	o.pending = append(o.pending, text...)
	if len(o.pending) >= streamMax {
		o.flushLocked()
	} else if o.timer == nil {
		o.timer = time.AfterFunc(streamDelay, func() {
			o.mu.Lock()
			o.flushLocked()
			o.mu.Unlock()
		})
	}
}

func (o *iopubOutput) flushLocked() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	if len(o.pending) == 0 {
		return
	}
	o.k.publish(o.parent, "stream", map[string]any{"name": o.name, "text": string(o.pending)})
	o.pending = o.pending[:0]
}

func (o *iopubOutput) Display(d engine.Display) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.silent {
		return
	}
	if d.Page {
		o.pages = append(o.pages, d.Data)
		return
	}
	o.flushLocked()
	content := map[string]any{"data": withTextPlain(d.Data), "metadata": orEmptyMap(d.Metadata), "transient": map[string]any{}}
	if d.DisplayID != "" {
		content["transient"] = map[string]any{"display_id": d.DisplayID}
	}
	msgType := "display_data"
	if d.Update && d.DisplayID != "" {
		msgType = "update_display_data"
	}
	o.k.publish(o.parent, msgType, content)
}

func (o *iopubOutput) ClearOutput(wait bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.silent {
		return
	}
	o.flushLocked()
	o.k.publish(o.parent, "clear_output", map[string]any{"wait": wait})
}

// close flushes and drops later output: after the reply and idle, output
// could not be attributed to the cell any more. It returns the
// execute_reply's payload.
func (o *iopubOutput) close() []any {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
	o.closed = true
	return pagePayload(o.pages)
}

// pagePayload is the execute_reply payload of a cell's pager displays:
// one "page" payload, as ipykernel sends for `?` (front ends show one
// pager per reply, so the pages of a cell are joined in order). Text
// types are concatenated; a type that some page lacks is left out, and
// text/plain is always there.
func pagePayload(pages []engine.MIMEBundle) []any {
	if len(pages) == 0 {
		return []any{}
	}
	data := engine.MIMEBundle{}
	for mime := range withTextPlain(pages[0]) {
		parts := make([]string, 0, len(pages))
		for _, p := range pages {
			s, ok := withTextPlain(p)[mime].(string)
			if !ok {
				break
			}
			parts = append(parts, s)
		}
		if len(parts) == len(pages) {
			sep := "\n\n"
			if mime == "text/html" {
				sep = "\n<hr>\n"
			}
			data[mime] = strings.Join(parts, sep)
		}
	}
	return []any{map[string]any{"source": "page", "data": data, "start": 0}}
}

// userExpressions evaluates the user_expressions of an execute request
// after its cell succeeded, each as a silent cell, as ipykernel does (front
// ends use them for variable inspectors and status bars).
func (k *Kernel) userExpressions(exprs map[string]string, cellID string) map[string]any {
	out := make(map[string]any, len(exprs))
	if len(exprs) == 0 {
		return out
	}
	// Interruptible like a cell, and bounded: an expression is meant to be
	// a quick look at a variable.
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	k.runMu.Lock()
	k.runCancel = cancel
	k.runMu.Unlock()
	defer func() {
		k.runMu.Lock()
		k.runCancel = nil
		k.runMu.Unlock()
	}()
	for name, code := range exprs {
		res := k.cfg.Engine.Execute(ctx, engine.ExecuteRequest{Code: code, CellID: cellID}, discard{})
		switch {
		case res.Error != nil:
			tb := engine.ColoredTraceback(res.Error)
			out[name] = map[string]any{"status": "error", "ename": res.Error.Name, "evalue": res.Error.Value, "traceback": tb}
		case res.Value != nil:
			out[name] = map[string]any{"status": "ok", "data": withTextPlain(res.Value.Data), "metadata": orEmptyMap(res.Value.Metadata)}
		default:
			out[name] = map[string]any{"status": "ok", "data": map[string]any{"text/plain": ""}, "metadata": map[string]any{}}
		}
	}
	return out
}

// discard is an engine.Output that drops everything.
type discard struct{}

func (discard) Stream(string, string)  {}
func (discard) Display(engine.Display) {}
func (discard) ClearOutput(bool)       {}
