// Package enginetest provides Fake, a stand-in engine.Engine for testing
// the kernel, the worker protocol and the supervisor without the Go
// interpreter. It is a test double: release builds of privnotes never link
// it (cmd/privnotes links it only under the build tag "fakeengine").
//
// A Fake cell is a list of commands, one per line:
//
//	print TEXT           write TEXT and a newline to stdout
//	eprint TEXT          write TEXT and a newline to stderr
//	html TEXT            display_data with text/html and text/plain
//	page TEXT            help for the pager (a Page display)
//	progress N LABEL     N steps of progress of LABEL (each step shown)
//	display ID TEXT      display_data named ID
//	update ID TEXT       update_display_data of display ID
//	clear                clear_output (wait=false)
//	set NAME VALUE       remember a variable
//	get NAME             the cell's value is the variable (error if unset)
//	value TEXT           the cell's value is TEXT
//	fail NAME MESSAGE    the cell fails with error NAME
//	sleep MS             sleep MS milliseconds, stopping early if interrupted
//	block                wait until interrupted (like a long compiled call)
//	spin                 busy loop that ignores interrupts
//	goroutine-panic      panic in a new goroutine (kills the process)
//	recurse              unbounded recursion (stack overflow)
//	exit CODE            os.Exit(CODE)
//
// An empty line or a line starting with "//" does nothing. The value of a
// cell is the value of its last value/get command.
package enginetest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
)

// Fake is an engine.Engine driven by the command language above.
type Fake struct {
	mu   sync.Mutex
	vars map[string]string
}

// New returns an empty Fake.
func New() *Fake { return &Fake{vars: map[string]string{}} }

var commands = map[string]string{
	"print":           "print TEXT: write TEXT to stdout",
	"eprint":          "eprint TEXT: write TEXT to stderr",
	"html":            "html TEXT: display TEXT as HTML",
	"page":            "page TEXT: show TEXT in the pager",
	"progress":        "progress N LABEL: report N steps of progress",
	"display":         "display ID TEXT: a named display",
	"update":          "update ID TEXT: replace display ID",
	"clear":           "clear: clear the output",
	"set":             "set NAME VALUE: define a variable",
	"get":             "get NAME: the value of a variable",
	"value":           "value TEXT: the value of the cell",
	"fail":            "fail NAME MESSAGE: raise an error",
	"sleep":           "sleep MS: sleep, interruptible",
	"block":           "block: wait until interrupted",
	"spin":            "spin: loop ignoring interrupts",
	"goroutine-panic": "goroutine-panic: crash the process",
	"recurse":         "recurse: overflow the stack",
	"exit":            "exit CODE: exit the process",
}

// Execute runs a cell.
func (f *Fake) Execute(ctx context.Context, req engine.ExecuteRequest, out engine.Output) engine.ExecuteResult {
	var res engine.ExecuteResult
	for i, line := range strings.Split(req.Code, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		cmd, arg, _ := strings.Cut(line, " ")
		id, text, _ := strings.Cut(arg, " ")
		fail := func(name, msg string) engine.ExecuteResult {
			return engine.ExecuteResult{Error: &engine.Error{
				Name: name, Value: msg,
				Traceback: []string{fmt.Sprintf("%s: %s", name, msg), fmt.Sprintf("  at cell line %d", i+1)},
			}}
		}
		switch cmd {
		case "print":
			out.Stream("stdout", arg+"\n")
		case "eprint":
			out.Stream("stderr", arg+"\n")
		case "html":
			out.Display(engine.Display{Data: engine.MIMEBundle{"text/html": arg, "text/plain": arg}, Metadata: map[string]any{}})
		case "page":
			out.Display(engine.Display{Data: engine.MIMEBundle{"text/plain": arg}, Page: true})
		case "progress":
			n, err := strconv.Atoi(id)
			if err != nil {
				return fail("CompileError", "progress needs a number of steps")
			}
			for step := 1; step <= n; step++ {
				out.Display(engine.ProgressDisplay(fmt.Sprint(i+1), engine.Progress{Label: text, Done: step, Total: n}, step > 1))
			}
		case "display", "update":
			out.Display(engine.Display{Data: engine.MIMEBundle{"text/plain": text}, Metadata: map[string]any{},
				DisplayID: id, Update: cmd == "update"})
		case "clear":
			out.ClearOutput(false)
		case "set":
			f.mu.Lock()
			f.vars[id] = text
			f.mu.Unlock()
		case "get":
			f.mu.Lock()
			v, ok := f.vars[arg]
			f.mu.Unlock()
			if !ok {
				return fail("CompileError", fmt.Sprintf("undefined: %s", arg))
			}
			res.Value = plain(v)
		case "value":
			res.Value = plain(arg)
		case "fail":
			return fail(id, text)
		case "sleep", "block":
			d := time.Duration(1<<62 - 1)
			if cmd == "sleep" {
				ms, err := strconv.Atoi(arg)
				if err != nil {
					return fail("CompileError", "sleep needs milliseconds")
				}
				d = time.Duration(ms) * time.Millisecond
			}
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fail("Interrupted", "the cell was interrupted")
			}
		case "spin":
			// A cell that never yields, for tests of interrupts.
			//lint:ignore SA5002 the endless loop is the point
			for {
			}
		case "goroutine-panic":
			go func() { panic("boom from a goroutine") }()
			select {}
		case "recurse":
			recurse(0)
		case "exit":
			code, _ := strconv.Atoi(arg)
			os.Exit(code)
		default:
			return fail("CompileError", fmt.Sprintf("unknown command %q", cmd))
		}
		if req.Silent {
			res.Value = nil
		}
	}
	return res
}

// recurse overflows the stack, for tests of worker crashes.
//
//go:noinline
func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	//lint:ignore SA5007 the endless recursion is the point
	return recurse(n+1) + int(pad[0])
}

func plain(s string) *engine.Display {
	return &engine.Display{Data: engine.MIMEBundle{"text/plain": s}, Metadata: map[string]any{}}
}

// Complete completes command names and variable names; cursor counts code
// points.
func (f *Fake) Complete(code string, cursor int) engine.Completion {
	r := []rune(code)
	if cursor < 0 || cursor > len(r) {
		cursor = len(r)
	}
	start := cursor
	for start > 0 && (r[start-1] == '-' || r[start-1] == '_' || isAlnum(r[start-1])) {
		start--
	}
	prefix := string(r[start:cursor])
	var matches []string
	f.mu.Lock()
	for name := range f.vars {
		if strings.HasPrefix(name, prefix) {
			matches = append(matches, name)
		}
	}
	f.mu.Unlock()
	for name := range commands {
		if strings.HasPrefix(name, prefix) {
			matches = append(matches, name)
		}
	}
	sort.Strings(matches)
	if matches == nil {
		matches = []string{}
	}
	return engine.Completion{Matches: matches, CursorStart: start, CursorEnd: cursor, Metadata: map[string]any{}}
}

func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c > 127
}

// Inspect documents the command under the cursor.
func (f *Fake) Inspect(code string, cursor int, detail int) engine.Inspection {
	c := f.Complete(code, cursor)
	r := []rune(code)
	end := c.CursorEnd
	for end < len(r) && (r[end] == '-' || isAlnum(r[end])) {
		end++
	}
	word := string(r[c.CursorStart:end])
	if doc, ok := commands[word]; ok {
		return engine.Inspection{Found: true, Data: engine.MIMEBundle{"text/plain": doc}}
	}
	return engine.Inspection{Found: false, Data: engine.MIMEBundle{}}
}

// IsComplete says a cell ending in "\" or with more "{" than "}" is
// incomplete, and one with more "}" than "{" is invalid.
func (f *Fake) IsComplete(code string) engine.Completeness {
	open := strings.Count(code, "{") - strings.Count(code, "}")
	switch {
	case open < 0:
		return engine.Completeness{Status: "invalid"}
	case open > 0 || strings.HasSuffix(strings.TrimRight(code, " \t\n"), "\\"):
		return engine.Completeness{Status: "incomplete", Indent: strings.Repeat("    ", max(open, 1))}
	}
	return engine.Completeness{Status: "complete"}
}
