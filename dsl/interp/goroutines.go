package interp

import (
	"fmt"
	"go/ast"
	"strconv"
	"sync"
)

// A panic in a goroutine that a cell started would end the whole process:
// nothing above the goroutine recovers it. The engine rewrites every
// statement `go func(...) {...}(...)` of a cell so that the literal's body
// starts with a deferred recovery that reports the panic instead (as
// stderr text of the running cell, or of the next cell when none runs);
// the goroutine stops, the session and its variables survive. The rewrite
// adds a statement inside the literal only, so the arguments are still
// evaluated by the go statement and the goroutine runs the same code. yaegi
// implements recover in deferred function literals (it runs a frame's
// deferred calls from its own recovery, with the panic value available to
// recover), which is what makes this sound; a deferred compiled function
// could not recover, hence the literal.
//
// Not covered: `go f(x)` with any other callee (wrapping it in a literal
// would move the evaluation of f and x into the goroutine), and stack
// overflows or out-of-memory, which Go cannot recover. Those still end the
// process, and the kernel's worker supervision restarts it.

// goPanicName is the compiled function the rewritten goroutines call.
const goPanicName = "__pni_gopanic"

// goEdits returns the insertions that make the function-literal goroutines
// of the chunk recover their panics.
func goEdits(c *chunk, cellName string) []edit {
	var root ast.Node
	switch {
	case c.body != nil:
		root = c.body
	case c.file != nil:
		root = c.file
	default:
		return nil
	}
	var edits []edit
	ast.Inspect(root, func(n ast.Node) bool {
		g, ok := n.(*ast.GoStmt)
		if !ok {
			return true
		}
		if lit, ok := g.Call.Fun.(*ast.FuncLit); ok && lit.Body != nil {
			text := fmt.Sprintf("defer func(){%s(recover(),%s)}();", goPanicName, strconv.Quote(cellName))
			edits = append(edits, edit{c.off(lit.Body.Lbrace) + 1, text, 0})
		}
		return true
	})
	return edits
}

// goPanics holds the reports of goroutine panics until a cell can show
// them.
type goPanics struct {
	mu      sync.Mutex
	running bool     // a cell is executing: report on its output
	pending []string // reports waiting for the next cell
}

// goPanic is called by a rewritten goroutine's deferred recovery with the
// value recover returned (nil when the goroutine did not panic, or was
// ended by runtime.Goexit from a guard).
func (e *Engine) goPanic(r any, cell string) {
	if r == nil {
		return
	}
	var msg string
	switch v := r.(type) {
	case NamedError:
		msg = v.ErrorName() + ": " + v.Error()
	case error:
		msg = v.Error()
	default:
		msg = fmt.Sprint(v)
	}
	text := fmt.Sprintf("panic in a goroutine started by %s: %s\n(the goroutine stopped; the session and its variables are kept)\n", cell, msg)
	e.gp.mu.Lock()
	defer e.gp.mu.Unlock()
	if e.gp.running {
		e.router.write("stderr", []byte(text))
		return
	}
	e.gp.pending = append(e.gp.pending, text)
}

// startCell marks a cell as running and shows the reports that waited.
func (e *Engine) startCell() {
	e.gp.mu.Lock()
	defer e.gp.mu.Unlock()
	e.gp.running = true
	for _, t := range e.gp.pending {
		e.router.write("stderr", []byte(t))
	}
	e.gp.pending = nil
}

// endCell marks the end of a cell: later reports wait for the next one.
func (e *Engine) endCell() {
	e.gp.mu.Lock()
	e.gp.running = false
	e.gp.mu.Unlock()
}
