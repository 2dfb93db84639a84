package interp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"reflect"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"
	"unicode/utf8"

	yaegi "github.com/traefik/yaegi/interp"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/stdlib"
)

// Config configures an Engine.
type Config struct {
	// StateDir is the privnotes state directory (datasets and ledger). The
	// engine itself keeps no state there; it is handed to the plugin
	// factory registered with RegisterPlugin when Plugin is nil.
	StateDir string
	// Plugin is the DSL. Nil means the registered factory's plugin, or
	// BasicPlugin (plain Go cells with %help) when none is registered.
	Plugin Plugin
	// InterruptWait bounds how long Execute waits, after its context is
	// cancelled, for the cell's goroutines to stop (default 500ms).
	InterruptWait time.Duration
}

var (
	factoryMu sync.Mutex
	factory   func(stateDir string) (Plugin, error)
)

// RegisterPlugin sets the function New uses to build the DSL plugin when
// Config.Plugin is nil. The DSL runtime calls it from an init function, so
// that a binary linking the runtime gets the DSL everywhere (kernel worker,
// REPL, script runner). Like sql.Register, it panics if f is nil or if a
// plugin is already registered: two DSLs linked into one binary would make
// which one a cell gets depend on init order.
func RegisterPlugin(f func(stateDir string) (Plugin, error)) {
	if f == nil {
		panic("interp: RegisterPlugin with a nil factory")
	}
	factoryMu.Lock()
	defer factoryMu.Unlock()
	if factory != nil {
		panic("interp: RegisterPlugin called twice")
	}
	factory = f
}

// unregisterPlugin clears the registration, for this package's tests.
func unregisterPlugin() {
	factoryMu.Lock()
	factory = nil
	factoryMu.Unlock()
}

// Engine runs cells; it implements engine.Engine.
type Engine struct {
	cfg    Config
	plugin Plugin
	yi     *yaegi.Interpreter
	router *router

	mu       sync.Mutex      // one Execute at a time
	imported map[string]bool // "name path" of imports done
	chunkSeq atomic.Uint64   // the chunk allowed past guards
	stmtOff  atomic.Int64    // 1 + offset (translated cell) of the top-level statement running; 0: none
	chunkCtx atomic.Pointer[context.Context]
	nextSeq  uint64            // guarded by mu
	label    string            // pprof label value prefix of this engine
	funcs    map[string]string // user func name -> cell label, for tracebacks
	result   []any             // values of the final expression (set by __pni_result)
	busy     bool              // an interrupted chunk's goroutine outlived the wait
	gp       goPanics          // panics recovered in goroutines of cells
	cells    cellLabels        // label sets of the running cell's chunks

	// completion state, readable while a cell runs
	symMu    sync.RWMutex
	globals  map[string]reflect.Value // user vars and consts
	decls    map[string]string        // user funcs and types -> "func" or "type"
	exports  map[string]reflect.Value // bare names (display API + plugin)
	dotNames map[string]bool          // members of packages the user dot-imported
}

var _ engine.Engine = (*Engine)(nil)

// dotPath is the import path under which the display API and the plugin's
// exports are registered and dot-imported into every cell.
const dotPath = "privnotes/dsl"

// resultName receives the value(s) of a cell's final expression.
const resultName = "__pni_result"

// guardName is the compiled guard inserted between top-level statements.
const guardName = "__pni_guard"

// extraImports are importable packages that yaegi compiles from source
// (generic stdlib parts), in addition to stdlib.Allowlist.
var extraImports = []string{"cmp", "maps", "slices"}

var engineCount atomic.Uint64

// New creates an engine with the allowlisted packages and the plugin's
// exports loaded.
func New(cfg Config) (*Engine, error) {
	if cfg.InterruptWait <= 0 {
		cfg.InterruptWait = 500 * time.Millisecond
	}
	p := cfg.Plugin
	if p == nil {
		factoryMu.Lock()
		f := factory
		factoryMu.Unlock()
		if f != nil {
			var err error
			if p, err = f(cfg.StateDir); err != nil {
				return nil, fmt.Errorf("interp: starting the DSL: %w", err)
			}
		} else {
			p = &BasicPlugin{}
		}
	}
	e := &Engine{
		cfg:      cfg,
		plugin:   p,
		router:   &router{},
		imported: map[string]bool{},
		label:    "e" + strconv.FormatUint(engineCount.Add(1), 10),
		funcs:    map[string]string{},
		globals:  map[string]reflect.Value{},
		decls:    map[string]string{},
		dotNames: map[string]bool{},
	}
	e.yi = yaegi.New(yaegi.Options{
		Stdin:                strings.NewReader(""),
		Stdout:               streamWriter{e.router, "stdout"},
		Stderr:               streamWriter{e.router, "stderr"},
		SourcecodeFilesystem: fstest.MapFS{},
		Env:                  []string{},
		Args:                 []string{"privnotes"},
	})
	if err := e.yi.Use(stdlib.Symbols); err != nil {
		return nil, fmt.Errorf("interp: loading the standard library symbols: %w", err)
	}
	exports := e.displayExports()
	for name, v := range p.Exports() {
		exports[name] = v
	}
	exports[guardName] = reflect.ValueOf(e.guard)
	exports[resultName] = reflect.ValueOf(func(vs ...any) { e.result = vs })
	exports[goPanicName] = reflect.ValueOf(e.goPanic)
	if err := e.yi.Use(yaegi.Exports{dotPath + "/dsl": exports}); err != nil {
		return nil, fmt.Errorf("interp: loading the DSL symbols: %w", err)
	}
	e.yi.ImportUsed()
	e.exports = exports
	if _, err := e.yi.EvalWithContext(context.Background(), `import . "`+dotPath+`"`); err != nil {
		return nil, fmt.Errorf("interp: importing the DSL: %w", err)
	}
	return e, nil
}

// guard ends the calling goroutine when it runs a chunk that is no longer
// the current one: a cancelled chunk that yaegi resumed (see the package
// doc). It is the only code that calls runtime.Goexit on yaegi's goroutine,
// which unwinds it through yaegi's own deferred recovery.
//
// It also ends a chunk whose context is already cancelled: when the cancel
// comes before yaegi starts executing (while it compiles), yaegi's Execute
// resets the run id after the stop and would run the whole chunk as if
// nothing happened.
func (e *Engine) guard(seq, off int) {
	if uint64(seq) != e.chunkSeq.Load() {
		runtime.Goexit()
	}
	if ctx := e.chunkCtx.Load(); ctx != nil && (*ctx).Err() != nil {
		runtime.Goexit()
	}
	e.stmtOff.Store(int64(off) + 1)
}

// Execute runs one cell.
func (e *Engine) Execute(ctx context.Context, req engine.ExecuteRequest, out engine.Output) engine.ExecuteResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.router.setOutput(out)
	defer e.router.flush()
	e.startCell()
	defer e.endCell()
	e.busy = false
	res := e.execute(ctx, req)
	if res.Error != nil {
		res.Error.Value = bareTypes(res.Error.Value)
		for i, l := range res.Error.Traceback {
			res.Error.Traceback[i] = bareTypes(l)
		}
	}
	if !e.busy {
		// Not while a goroutine of an interrupted cell may still run
		// inside yaegi: Globals reads the frame it may resize.
		e.snapshot()
	}
	return res
}

// cellState is what Execute knows of the cell being run.
type cellState struct {
	user string // the user's source
	prog Program
	name string // how tracebacks name the cell: "cell [3]"
}

func (e *Engine) execute(ctx context.Context, req engine.ExecuteRequest) engine.ExecuteResult {
	cs := &cellState{user: req.Code, name: "cell " + req.CellID}
	if req.ExecutionCount > 0 {
		cs.name = fmt.Sprintf("cell [%d]", req.ExecutionCount)
	}
	if strings.TrimSpace(req.Code) == "" {
		return engine.ExecuteResult{}
	}
	if off := strings.Index(req.Code, "__pn"); off >= 0 && isIdentAt(req.Code, off) {
		return e.errorAtUser(cs, "SyntaxError", off, "identifiers starting with __pn are reserved for privnotes")
	}
	prog, err := e.plugin.Rewrite(req.Code)
	if err != nil {
		return engine.ExecuteResult{Error: rewriteError(req.Code, err)}
	}
	cs.prog = prog
	src := prog.Go

	chunks := splitItems(src)
	for i := range chunks {
		if err := parseChunk(src, &chunks[i]); err != nil {
			return e.errorResult(cs, err)
		}
	}
	// The final expression runs as a chunk of its own: yaegi's result of
	// a chunk is reliable only for a lone expression statement.
	if n := len(chunks); n > 0 {
		if c := &chunks[n-1]; finalExpr(c) != nil && len(c.body.List) > 1 {
			last := c.body.List[len(c.body.List)-1]
			split := c.off(last.Pos())
			tail := chunk{kind: stmtChunk, start: split, end: c.end}
			c.end = split
			if err := parseChunk(src, c); err != nil {
				return e.errorResult(cs, err)
			}
			if err := parseChunk(src, &tail); err != nil {
				return e.errorResult(cs, err)
			}
			chunks = append(chunks, tail)
		}
	}
	if req.Transcript && !req.Silent {
		var err error
		if chunks, err = isolateShown(src, chunks); err != nil {
			return e.errorResult(cs, err)
		}
	}
	// Static checks of the whole cell before anything runs.
	for i := range chunks {
		c := &chunks[i]
		if c.kind == importChunk {
			if err := checkImports(c); err != nil {
				return e.errorResult(cs, err)
			}
		}
		if err := goSubsetCheck(c, e.isIntExpr); err != nil {
			return e.errorResult(cs, err)
		}
	}

	if c, id := undefinedName(chunks, e.known); id != nil {
		return e.errorResult(cs, &posError{name: nameError, off: c.off(id.Pos()), msg: explainUndefined("undefined: " + id.Name)})
	}

	cell := &Cell{ID: req.CellID, ExecutionCount: req.ExecutionCount, Source: req.Code, Program: prog, Out: cellOutput{e.router}, Lookup: e.lookup, InCell: e.cells.has}
	e.cells.reset()
	defer e.cells.reset()
	if err := e.plugin.Begin(ctx, cell); err != nil {
		name := "Refused"
		var ne NamedError
		if errors.As(err, &ne) {
			name = ne.ErrorName()
		}
		return engine.ExecuteResult{Error: &engine.Error{Name: name, Value: err.Error(), Traceback: []string{name + ": " + err.Error()}}}
	}
	defer e.plugin.End(cell)

	var result engine.ExecuteResult
	for i := range chunks {
		c := &chunks[i]
		wrap := i == len(chunks)-1 && !req.Silent && finalExpr(c) != nil
		if req.Transcript && !req.Silent {
			// isolateShown made each shown statement a chunk of its own.
			wrap = c.kind == stmtChunk && len(c.body.List) == 1 && shownStmt(c.body.List[0])
		}
		e.result = nil
		_, failed := e.runChunk(ctx, cs, src, c, wrap)
		if failed != nil && wrap && failed.Name == "CompileError" && strings.Contains(failed.Value, "as type ()") {
			// The final expression has no value (a call of a function
			// without results): run it as a plain statement.
			wrap = false
			_, failed = e.runChunk(ctx, cs, src, c, false)
		}
		if failed != nil {
			return engine.ExecuteResult{Error: failed}
		}
		if wrap && e.result != nil && !(displayCall(finalExpr(c)) && allNil(e.result)) {
			var d engine.Display
			if len(e.result) == 1 {
				d = Render(e.result[0])
			} else {
				d = renderTuple(e.result)
			}
			if req.Transcript {
				// In order with what the statements printed.
				e.router.display(d)
			} else {
				result.Value = &d
			}
		}
	}
	return result
}

// runChunk evaluates one chunk; a non-nil Error means the cell stops.
func (e *Engine) runChunk(ctx context.Context, cs *cellState, src string, c *chunk, wrap bool) (reflect.Value, *engine.Error) {
	e.nextSeq++
	seq := e.nextSeq
	text := blank(src, c.start, c.end)
	var edits []edit
	switch c.kind {
	case importChunk:
		var keep bool
		edits, keep = e.dedupImports(c)
		if !keep {
			return reflect.Value{}, nil
		}
	case declChunk:
		e.recordDecls(c, cs.name)
		edits = goEdits(c, cs.name)
	case stmtChunk:
		k := 0
		guard := func(off int) string {
			return fmt.Sprintf("%s(%d,%d)", guardName, seq, off)
		}
		edits = stmtEdits(c, guard, func() string {
			k++
			return fmt.Sprintf("__pni_f%d_%d", seq, k)
		}, map[bool]string{true: resultName}[wrap])
		edits = append(edits, goEdits(c, cs.name)...)
	}
	gen, back := applyEdits(text, edits)
	// The leading newline keeps yaegi's own wrapper ("package main; func
	// main() {") on a line of its own, so our columns are never shifted.
	gen = "\n" + gen
	toCell := func(line, col int) int { // yaegi position -> cell offset
		if line < 2 {
			return c.start
		}
		return back(lineColOffset(gen, line, col) - 1)
	}

	if ctx.Err() != nil {
		return reflect.Value{}, e.interrupted("")
	}
	e.chunkSeq.Store(seq)
	e.chunkCtx.Store(&ctx)
	e.stmtOff.Store(0)
	label := e.label + "/" + strconv.FormatUint(seq, 10)
	var v reflect.Value
	var err error
	pprof.Do(context.Background(), pprof.Labels(goroutineLabel, label), func(context.Context) {
		e.cells.add()
		v, err = e.yi.EvalWithContext(ctx, gen)
	})
	if err == nil {
		if c.kind == stmtChunk {
			e.recordVars(c)
		}
		return v, nil
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return reflect.Value{}, e.interrupted(label)
	}
	return reflect.Value{}, e.evalError(cs, src, c, err, gen, toCell)
}

const goroutineLabel = "privnotes-cell"

// interrupted waits for the goroutines of the cancelled chunk and builds
// the error.
func (e *Engine) interrupted(label string) *engine.Error {
	// No guard may let the cancelled chunk through any more.
	e.nextSeq++
	e.chunkSeq.Store(e.nextSeq)
	if label == "" { // cancelled before the chunk started
		msg := "the cell was interrupted; variables defined before the interrupt are kept"
		return &engine.Error{Name: "Interrupted", Value: msg, Traceback: []string{"Interrupted: " + msg}}
	}
	deadline := time.Now().Add(e.cfg.InterruptWait)
	left := countGoroutines(label + `"`)
	for left > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		left = countGoroutines(label + `"`)
	}
	msg := "the cell was interrupted; variables defined before the interrupt are kept"
	if left > 0 {
		e.busy = true
		// No count: goroutines a DSL mechanism starts inherit the cell's
		// label, and their number follows the private row count.
		msg += "; the cell is still inside a compiled call (such as time.Sleep or a private computation) and stops when it returns, without running anything else of the cell"
	}
	return &engine.Error{Name: "Interrupted", Value: msg, Traceback: []string{"Interrupted: " + msg}}
}

// countGoroutines counts the live goroutines whose pprof label value
// starts with prefix (a chunk's label and a closing quote for one chunk):
// the chunk's eval goroutine and every goroutine it started.
func countGoroutines(prefix string) int {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return 0
	}
	want := `"` + goroutineLabel + `":"` + prefix
	n, count := 0, 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if line != "" && line[0] >= '0' && line[0] <= '9' {
			if i := strings.IndexByte(line, ' '); i > 0 {
				count, _ = strconv.Atoi(line[:i])
			}
			continue
		}
		if strings.HasPrefix(line, "# labels:") && strings.Contains(line, want) {
			n += count
		}
	}
	return n
}

// evalError turns a yaegi error into the user's error.
func (e *Engine) evalError(cs *cellState, src string, c *chunk, err error, gen string, toCell func(line, col int) int) *engine.Error {
	var p yaegi.Panic
	if errors.As(err, &p) {
		return e.panicError(cs, c, p, gen, toCell)
	}
	msg := err.Error()
	// yaegi errors start with "line:col: " (compile) or "_.go:line:col: " (parse).
	msg = strings.TrimPrefix(msg, "_.go:")
	if line, col, rest, ok := splitPos(msg); ok {
		off := toCell(line, col)
		if rest == "constant definition loop" {
			// yaegi's message for an undefined name on the right of a
			// top-level := ; compiling the right-hand sides alone
			// gives the real error.
			if poff, prest, ok := e.probeRHS(src, c, off); ok {
				off, rest = poff, prest
			}
		}
		name := "CompileError"
		if strings.HasPrefix(rest, "undefined: ") {
			name = nameError
		}
		rest = explainUndefined(rest)
		return e.errorAtUser(cs, name, off, rest).Error
	}
	return &engine.Error{Name: "CompileError", Value: msg, Traceback: []string{"CompileError: " + msg}}
}

// probeRHS compiles (without running) the right-hand sides of the
// assignment or declaration at off, each alone, and returns the first
// error with its offset in the cell.
func (e *Engine) probeRHS(src string, c *chunk, off int) (int, string, bool) {
	if c.kind != stmtChunk {
		return 0, "", false
	}
	var rhs []ast.Expr
	for _, st := range c.body.List {
		if c.off(st.Pos()) > off || c.off(st.End()) < off {
			continue
		}
		switch st := st.(type) {
		case *ast.AssignStmt:
			rhs = st.Rhs
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok {
				for _, sp := range g.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						rhs = append(rhs, vs.Values...)
					}
				}
			}
		}
	}
	for _, x := range rhs {
		start := c.off(x.Pos())
		text := "\n" + blank(src, start, c.off(x.End()))
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			_, err = e.yi.Compile(text)
		}()
		if err == nil {
			continue
		}
		if line, col, rest, ok := splitPos(strings.TrimPrefix(err.Error(), "_.go:")); ok && line >= 2 {
			return lineColOffset(text, line, col) - 1, rest, true
		}
	}
	return 0, "", false
}

func hasRange(c *chunk) bool {
	var root ast.Node = c.body
	if c.file != nil {
		root = c.file
	}
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if _, ok := n.(*ast.RangeStmt); ok {
			found = true
		}
		return !found
	})
	return found
}

// nameError is the error name of an undefined name, as Python names it
// (NameError) and not a compile or syntax error: the name is misspelt or
// not defined yet, the code around it is fine. The message keeps Go's
// wording ("undefined: x") and any did-you-mean.
const nameError = "NameError"

func explainUndefined(msg string) string {
	switch msg {
	case "undefined: min", "undefined: max":
		return msg + " (the Go 1.21 builtins min and max are not supported by the interpreter; use math.Min/math.Max for float64, or an if)"
	case "undefined: clear":
		return msg + " (the Go 1.21 builtin clear is not supported by the interpreter; assign a new map or slice, or delete keys in a loop)"
	}
	return msg
}

// splitPos parses "line:col: rest".
func splitPos(msg string) (line, col int, rest string, ok bool) {
	parts := strings.SplitN(msg, ":", 3)
	if len(parts) != 3 {
		return 0, 0, "", false
	}
	l, err1 := strconv.Atoi(parts[0])
	c, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return 0, 0, "", false
	}
	return l, c, strings.TrimSpace(parts[2]), true
}

// userPos maps an offset of the translated cell to the user's line and
// column (code points).
func (e *Engine) userPos(cs *cellState, off int) (int, int) {
	line, col := offsetLineCol(cs.prog.Go, off)
	if cs.prog.Pos != nil {
		return cs.prog.Pos(line, col)
	}
	return line, byteColToRune(cs.user, line, col)
}

func byteColToRune(src string, line, col int) int {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return col
	}
	l := lines[line-1]
	if col-1 > len(l) {
		return col
	}
	return utf8.RuneCountInString(l[:col-1]) + 1
}

func (e *Engine) errorResult(cs *cellState, err error) engine.ExecuteResult {
	var pe *posError
	if errors.As(err, &pe) {
		return e.errorAtCell(cs, pe.name, pe.off, pe.msg)
	}
	return engine.ExecuteResult{Error: &engine.Error{Name: "Error", Value: err.Error(), Traceback: []string{err.Error()}}}
}

// errorAtCell builds an error at an offset of the translated cell.
func (e *Engine) errorAtCell(cs *cellState, name string, off int, msg string) engine.ExecuteResult {
	line, col := e.userPos(cs, off)
	return positioned(cs.user, name, line, col, msg)
}

// errorAtUser builds an error at an offset of the user's source.
func (e *Engine) errorAtUser(cs *cellState, name string, off int, msg string) engine.ExecuteResult {
	if cs.prog.Go != "" && cs.prog.Pos != nil {
		return e.errorAtCell(cs, name, off, msg)
	}
	line, col := offsetLineCol(cs.user, off)
	return positioned(cs.user, name, line, byteColToRune(cs.user, line, col), msg)
}

// positioned formats "line L:C: msg" with the source line and a caret.
func positioned(user, name string, line, col int, msg string) engine.ExecuteResult {
	value := fmt.Sprintf("line %d:%d: %s", line, col, msg)
	tb := []string{name + ": " + value}
	if lines := strings.Split(user, "\n"); line >= 1 && line <= len(lines) {
		tb = append(tb, caretLines(lines[line-1], col, "    ")...)
	}
	return engine.ExecuteResult{Error: &engine.Error{Name: name, Value: value, Traceback: tb}}
}

func rewriteError(user string, err error) *engine.Error {
	name := "SyntaxError"
	var ne NamedError
	if errors.As(err, &ne) {
		name = ne.ErrorName()
	}
	msg := err.Error()
	var pe Positioned
	if errors.As(err, &pe) {
		l, c := pe.Position()
		msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d:%d: ", l, c))
		return positioned(user, name, l, c, msg).Error
	}
	return &engine.Error{Name: name, Value: msg, Traceback: []string{name + ": " + msg}}
}

func isIdentAt(s string, off int) bool {
	if off == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:off])
	return !(r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
}

// allowed reports whether a cell may import path.
func allowed(path string) bool {
	i := sort.SearchStrings(stdlib.Allowlist, path)
	if i < len(stdlib.Allowlist) && stdlib.Allowlist[i] == path {
		return true
	}
	for _, p := range extraImports {
		if p == path {
			return true
		}
	}
	return false
}

// AllowedImports lists the packages a cell may import.
func AllowedImports() []string {
	l := append(append([]string(nil), stdlib.Allowlist...), extraImports...)
	sort.Strings(l)
	return l
}

func checkImports(c *chunk) error {
	for _, spec := range c.file.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		if !allowed(path) {
			return &posError{name: "ImportError", off: c.off(spec.Path.Pos()),
				msg: fmt.Sprintf("package %q cannot be imported in a privnotes cell; allowed: %s", path, strings.Join(AllowedImports(), ", "))}
		}
	}
	return nil
}

// dedupImports blanks imports already done in this session; keep is false
// when nothing is left.
func (e *Engine) dedupImports(c *chunk) (edits []edit, keep bool) {
	// Imports are evaluated once: a second import of the same package
	// under the same name is redundant, and yaegi rejects it.
	var fresh []string
	for _, spec := range c.file.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := ""
		if spec.Name != nil {
			name = spec.Name.Name
		}
		key := name + " " + path
		if e.imported[key] {
			continue
		}
		fresh = append(fresh, key)
	}
	if len(fresh) == 0 {
		return nil, false
	}
	if len(fresh) < len(c.file.Imports) {
		// Evaluate only the fresh ones: rewrite the chunk as its own
		// import list, keeping positions by commenting out the rest.
		for _, spec := range c.file.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			name := ""
			if spec.Name != nil {
				name = spec.Name.Name
			}
			if e.imported[name+" "+path] {
				edits = append(edits, edit{c.off(spec.Pos()), "/*", 0}, edit{c.off(spec.End()), "*/", 0})
			}
		}
	}
	for _, k := range fresh {
		e.imported[k] = true
		name, path, _ := strings.Cut(k, " ")
		if name != "" && name != "." && name != "_" {
			e.symMu.Lock()
			e.dotNames[name] = true // an import alias, known from now on
			e.symMu.Unlock()
		}
		if name == "." {
			e.symMu.Lock()
			for key, syms := range stdlib.Symbols {
				if key == path+"/"+pathBase(path) {
					for n := range syms {
						e.dotNames[n] = true
					}
				}
			}
			e.symMu.Unlock()
		}
	}
	return edits, true
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// recordDecls remembers the names a declaration chunk defines, for
// completion and tracebacks.
func (e *Engine) recordDecls(c *chunk, cell string) {
	e.symMu.Lock()
	defer e.symMu.Unlock()
	for _, d := range c.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				e.decls[d.Name.Name] = "func"
				e.funcs[d.Name.Name] = cell
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					e.decls[sp.Name.Name] = "type"
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						if id.Name != "_" {
							e.decls[id.Name] = d.Tok.String()
						}
					}
				}
			}
		}
	}
}

// recordVars remembers the names a statement chunk that ran defined at
// its top level, so the undefined-name check knows them even when yaegi's
// Globals cannot be read (see snapshot).
func (e *Engine) recordVars(c *chunk) {
	e.symMu.Lock()
	defer e.symMu.Unlock()
	for _, st := range c.body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" && !strings.HasPrefix(id.Name, "__") {
						if _, ok := e.decls[id.Name]; !ok {
							e.decls[id.Name] = "var"
						}
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok {
				for _, sp := range g.Specs {
					switch sp := sp.(type) {
					case *ast.ValueSpec:
						for _, id := range sp.Names {
							if _, ok := e.decls[id.Name]; !ok && id.Name != "_" {
								e.decls[id.Name] = "var"
							}
						}
					case *ast.TypeSpec:
						e.decls[sp.Name.Name] = "type"
					}
				}
			}
		}
	}
}

// isIntExpr reports whether x is statically an integer: a literal, len or
// cap, an integer global, or arithmetic of those.
func (e *Engine) isIntExpr(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.BasicLit:
		return x.Kind == token.INT
	case *ast.ParenExpr:
		return e.isIntExpr(x.X)
	case *ast.BinaryExpr:
		return e.isIntExpr(x.X) && e.isIntExpr(x.Y)
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "len" || id.Name == "cap") {
			return true
		}
		if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "int" {
			return true
		}
	case *ast.Ident:
		e.symMu.RLock()
		v, ok := e.globals[x.Name]
		e.symMu.RUnlock()
		if ok && v.IsValid() {
			switch v.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				return true
			}
		}
	}
	return false
}

// snapshot records the user's globals for completion and inspection.
// lookup reads a global of the session from the snapshot taken after the
// previous cell (the slots it holds are the variables' storage, so the
// value is the current one); it runs no user code. Values of interface
// type that yaegi wraps in its own types are not handed out.
func (e *Engine) lookup(name string) (value any, ok bool) {
	e.symMu.RLock()
	v, found := e.globals[name]
	e.symMu.RUnlock()
	if !found || !v.IsValid() || !v.CanInterface() {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			value, ok = nil, false
		}
	}()
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Type().PkgPath() == "github.com/traefik/yaegi/interp" {
		return nil, false
	}
	return v.Interface(), true
}

func (e *Engine) snapshot() {
	var g map[string]reflect.Value
	func() {
		// yaegi's Globals indexes past the frame when a failed
		// compilation declared a symbol that never got storage; the
		// next successful cell fixes the frame, so keep the old view.
		defer func() { _ = recover() }()
		g = e.yi.Globals()
	}()
	if g == nil {
		return
	}
	e.symMu.Lock()
	e.globals = g
	e.symMu.Unlock()
}
