package interp

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/privnotes/privnotes/dsl/engine"
)

// BasicPlugin is the plugin used when no DSL is registered: plain Go cells
// plus the line magic %help NAME (display functions and allowlisted
// packages). It is also the reference for what a Plugin does with magics:
// it translates each magic line into a call of a compiled function, on the
// same line, so magics run in order with the cell's statements.
type BasicPlugin struct {
	mu  sync.Mutex
	out engine.Output
}

// Exports provides __pn_magic, the function magic lines become.
func (p *BasicPlugin) Exports() map[string]reflect.Value {
	return map[string]reflect.Value{
		"__pn_magic": reflect.ValueOf(func(name, args string) {
			p.mu.Lock()
			out := p.out
			p.mu.Unlock()
			if out == nil {
				return
			}
			if name != "help" {
				panic(&engine.Error{Name: "MagicError", Value: "unknown magic %" + name + " (available: %help NAME)"})
			}
			text, ok := helpText(strings.TrimSpace(args))
			if !ok {
				text = fmt.Sprintf("no help for %q; try %%help show, or %%help PACKAGE (for example %%help math)", strings.TrimSpace(args))
			}
			out.Stream("stdout", text+"\n")
		}),
	}
}

// Rewrite turns lines whose first non-blank character is % into
// __pn_magic("name", "args") calls; the rest is left as is. (A % line
// inside a raw string is mistaken for a magic: acceptable for a test
// plugin, the DSL's translator scans properly.)
func (*BasicPlugin) Rewrite(src string) (Program, error) {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "%") || strings.HasPrefix(t, "%%") {
			if strings.HasPrefix(t, "%%") {
				return Program{}, lineError{i + 1, 1, "cell magics (" + strings.Fields(t)[0] + ") need the privnotes DSL"}
			}
			continue
		}
		name, args, _ := strings.Cut(t[1:], " ")
		lines[i] = fmt.Sprintf("__pn_magic(%q, %q)", name, strings.TrimSpace(args))
	}
	return Program{Go: strings.Join(lines, "\n")}, nil
}

// Begin binds the magic output to the cell.
func (p *BasicPlugin) Begin(_ context.Context, c *Cell) error {
	p.mu.Lock()
	p.out = c.Out
	p.mu.Unlock()
	return nil
}

// End does nothing: the output stays bound for goroutines of the cell.
func (*BasicPlugin) End(*Cell) {}

// Names: BasicPlugin adds no functions beyond the display API.
func (*BasicPlugin) Names() []string { return nil }

// Keywords: none.
func (*BasicPlugin) Keywords(string) []string { return nil }

// Doc has no DSL names to document.
func (*BasicPlugin) Doc(string) (string, bool) { return "", false }

type lineError struct {
	line, col int
	msg       string
}

func (e lineError) Error() string             { return e.msg }
func (e lineError) Position() (line, col int) { return e.line, e.col }
