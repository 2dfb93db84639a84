package interp

import (
	"fmt"
	"go/ast"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaegi "github.com/traefik/yaegi/interp"

	"github.com/privnotes/privnotes/dsl/engine"
)

// Run-time panics of cells. yaegi runs Go through package reflect, so an
// index out of range says "reflect: slice index out of range" instead of
// Go's "runtime error: index out of range [5] with length 0", and its
// position is the first node of the panicking frame, not the failing
// expression. panicError turns the interpreter's wording into Go's, and
// locates the panic in the cell: the top-level statement comes from the
// guards (see Engine.guard); within it, an index or slice expression
// whose operands are literals and globals is evaluated statically, from
// the variables' current values, to name the index, the length and the
// column. Nothing is run to learn them, and only globals of the session
// (user values, never private data) are read.

// yaegiPos is the "line:col: " yaegi puts before some panic values
// (interface conversions), in the coordinates of the evaluated chunk.
var yaegiPos = regexp.MustCompile(`^(\d+):(\d+): `)

// panicKind classifies a panic value the interpreter raised in place of a
// Go run-time error.
type panicKind int

const (
	otherPanic panicKind = iota
	indexPanic           // a[i] out of range
	slicePanic           // a[i:j] or a[i:j:k] out of range
)

// goWording returns Go's message for a panic value of the interpreter, and
// its kind; other values are returned as they are.
func goWording(msg string) (string, panicKind) {
	switch msg {
	case "reflect: slice index out of range", "reflect: array index out of range", "reflect: string index out of range":
		return "runtime error: index out of range", indexPanic
	case "reflect.Value.Slice: slice index out of bounds", "reflect.Value.Slice: string slice index out of bounds",
		"reflect.Value.Slice3: slice index out of bounds":
		return "runtime error: slice bounds out of range", slicePanic
	case "reflect.Value.Call: call of nil function", "reflect: Method on nil interface value":
		return "runtime error: invalid memory address or nil pointer dereference", otherPanic
	case "reflect.MakeSlice: negative len":
		return "runtime error: makeslice: len out of range", otherPanic
	case "reflect.MakeSlice: negative cap", "reflect.MakeSlice: len > cap":
		return "runtime error: makeslice: cap out of range", otherPanic
	}
	if strings.HasPrefix(msg, "reflect: call of reflect.Value.") && strings.HasSuffix(msg, " on zero Value") {
		// yaegi reaches a field or element through a nil pointer.
		return "runtime error: invalid memory address or nil pointer dereference", otherPanic
	}
	return msg, otherPanic
}

// panicError builds the error of a panic raised while the chunk c ran as
// gen; toCell maps gen's positions to the translated cell.
func (e *Engine) panicError(cs *cellState, c *chunk, p yaegi.Panic, gen string, toCell func(line, col int) int) *engine.Error {
	trace := e.router.takeTrace()
	if ne, ok := p.Value.(NamedError); ok {
		return &engine.Error{Name: ne.ErrorName(), Value: ne.Error(), Traceback: []string{ne.ErrorName() + ": " + ne.Error()}}
	}
	if ee, ok := p.Value.(*engine.Error); ok {
		return ee
	}
	msg := fmt.Sprint(p.Value)
	if len(trace) == 0 {
		// A panic without frames comes from yaegi's compiler.
		hint := ""
		if hasRange(c) {
			hint = " (range over an integer or a function is not supported by the interpreter: write a counted for loop)"
		}
		m := "the interpreter could not compile this code: " + msg + hint
		return &engine.Error{Name: "CompileError", Value: m, Traceback: []string{"CompileError: " + m}}
	}
	var stmt ast.Stmt
	so := int(e.stmtOff.Load()) - 1
	if so >= 0 && c.kind == stmtChunk {
		for _, st := range c.body.List {
			if c.off(st.Pos()) == so {
				stmt = st
			}
		}
	}
	type frame struct {
		text   string
		engine bool // a function literal of the running statement (the engine's loop wrapper, or the user's literal called in place)
	}
	var frames []frame
	for _, t := range trace {
		m := panicLine.FindStringSubmatch(strings.TrimSpace(t) + "\n")
		if m == nil {
			continue
		}
		fn := strings.TrimPrefix(m[3], "main.")
		if fn == "main" || strings.HasPrefix(fn, "main.") || strings.HasPrefix(fn, "__pni_") {
			continue
		}
		if where, ok := e.funcs[strings.SplitN(fn, ".", 2)[0]]; ok {
			frames = append(frames, frame{text: fmt.Sprintf("  in %s (defined in %s)", fn, where)})
			continue
		}
		f := frame{text: "  in " + fn}
		if fn == "func" && stmt != nil {
			// A literal of another cell has a position in that cell's
			// text: it may not exist in gen, or fall outside stmt.
			l, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			if inText(gen, l, col) {
				at := toCell(l, col)
				f.engine = at >= c.off(stmt.Pos()) && at < c.off(stmt.End())
			}
		}
		frames = append(frames, f)
	}
	// Drop the outermost frames that are literals of the statement itself.
	for len(frames) > 0 && frames[len(frames)-1].engine {
		frames = frames[:len(frames)-1]
	}
	// The panic happened in the cell's own statement when no function
	// of the user's is on the way: only then do yaegi's position and the
	// statement's expressions describe it.
	inCell := len(frames) == 0

	off := -1 // of the panic, in the translated cell
	if m := yaegiPos.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
		if inCell && c.kind == stmtChunk {
			l, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			off = toCell(l, col)
		}
	}
	msg, kind := goWording(msg)
	if off < 0 && stmt != nil {
		off = so
	}
	if inCell && stmt != nil && kind != otherPanic {
		if detail, at, ok := e.boundsDetail(c, stmt, kind); ok {
			msg += detail
			off = at
		}
	}

	value := "panic: " + msg
	tb := []string{"", "Traceback (innermost first):"}
	for _, f := range frames {
		tb = append(tb, f.text)
	}
	if off >= 0 {
		ul, uc := e.userPos(cs, off)
		value += fmt.Sprintf(" (at line %d:%d)", ul, uc)
		tb = append(tb, fmt.Sprintf("  cell line %d:%d:", ul, uc))
		if lines := strings.Split(cs.user, "\n"); ul >= 1 && ul <= len(lines) {
			tb = append(tb, caretLines(lines[ul-1], uc, "    ")...)
		}
	}
	tb[0] = "RuntimeError: " + value
	return &engine.Error{Name: "RuntimeError", Value: value, Traceback: tb}
}

// inText reports whether 1-based (line, col) is a position of s.
func inText(s string, line, col int) bool {
	lines := strings.Split(s, "\n")
	return line >= 1 && line <= len(lines) && col >= 1 && col <= len(lines[line-1])
}

// caretLines shows a source line and a caret under its column (code
// points), tabs as four spaces.
func caretLines(line string, col int, indent string) []string {
	pad := 0
	for i, r := range []rune(line) {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			pad += 4
		} else {
			pad++
		}
	}
	return []string{indent + strings.ReplaceAll(line, "\t", "    "), indent + strings.Repeat(" ", pad) + "^"}
}

// boundsDetail finds, among the index (or slice) expressions of stmt, the
// one that is out of range, and returns Go's details (" [5] with length
// 0") and its offset. It answers only when every such expression of the
// statement can be evaluated statically and exactly one is out of range;
// otherwise it cannot tell which one failed.
func (e *Engine) boundsDetail(c *chunk, stmt ast.Stmt, kind panicKind) (string, int, bool) {
	g := withoutLocals(e.currentGlobals(), stmt)
	var detail string
	at, found, unknown := -1, 0, false
	ast.Inspect(stmt, func(n ast.Node) bool {
		if unknown || found > 1 {
			return false
		}
		switch x := n.(type) {
		case *ast.IndexExpr:
			if kind != indexPanic {
				return true
			}
			seq, ok := seqOf(x.X, g)
			if ok && seq.Kind() == reflect.Map {
				return true // a map index does not panic this way
			}
			i, iok := intOf(x.Index, g)
			if !ok || !iok {
				unknown = true
				return false
			}
			if i < 0 || i >= int64(seq.Len()) {
				found++
				at = c.off(x.Pos())
				detail = fmt.Sprintf(" [%d] with length %d", i, seq.Len())
				if i < 0 {
					detail = fmt.Sprintf(" [%d]", i)
				}
			}
		case *ast.SliceExpr:
			if kind != slicePanic {
				return true
			}
			seq, ok := seqOf(x.X, g)
			if !ok {
				unknown = true
				return false
			}
			d, bad, ok := sliceBounds(x, seq, g)
			if !ok {
				unknown = true
				return false
			}
			if bad {
				found++
				at = c.off(x.Pos())
				detail = d
			}
		}
		return true
	})
	if unknown || found != 1 {
		return "", 0, false
	}
	return detail, at, true
}

// withoutLocals returns g without the names stmt declares (loop variables,
// parameters of function literals, := inside blocks): in the statement
// they hide the globals of the same name, whose values say nothing about
// them.
func withoutLocals(g map[string]reflect.Value, stmt ast.Stmt) map[string]reflect.Value {
	local := map[string]bool{}
	fields := func(l *ast.FieldList) {
		if l == nil {
			return
		}
		for _, f := range l.List {
			for _, id := range f.Names {
				local[id.Name] = true
			}
		}
	}
	ast.Inspect(stmt, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						local[id.Name] = true
					}
				}
			}
		case *ast.RangeStmt:
			for _, x := range []ast.Expr{n.Key, n.Value} {
				if id, ok := x.(*ast.Ident); ok {
					local[id.Name] = true
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				local[id.Name] = true
			}
		case *ast.FuncType:
			fields(n.Params)
			fields(n.Results)
		case *ast.TypeSwitchStmt:
			if a, ok := n.Assign.(*ast.AssignStmt); ok {
				for _, l := range a.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						local[id.Name] = true
					}
				}
			}
		}
		return true
	})
	if len(local) == 0 {
		return g
	}
	out := make(map[string]reflect.Value, len(g))
	for k, v := range g {
		if !local[k] {
			out[k] = v
		}
	}
	return out
}

// sliceBounds evaluates the bounds of x on seq and returns Go's details
// when they are out of range (bad).
func sliceBounds(x *ast.SliceExpr, seq reflect.Value, g map[string]reflect.Value) (detail string, bad, ok bool) {
	n := int64(seq.Len())
	limit, what := n, "length"
	if seq.Kind() == reflect.Slice {
		limit, what = int64(seq.Cap()), "capacity"
	}
	bound := func(b ast.Expr, def int64) (int64, bool) {
		if b == nil {
			return def, true
		}
		return intOf(b, g)
	}
	lo, ok1 := bound(x.Low, 0)
	hi, ok2 := bound(x.High, n)
	mx, ok3 := bound(x.Max, limit)
	if !ok1 || !ok2 || !ok3 {
		return "", false, false
	}
	if lo < 0 || hi < 0 || mx < 0 {
		return "", true, true // negative bounds: Go's wording varies; the plain message
	}
	if x.Slice3 {
		switch {
		case mx > limit:
			return fmt.Sprintf(" [::%d] with %s %d", mx, what, limit), true, true
		case hi > mx:
			return fmt.Sprintf(" [:%d:%d]", hi, mx), true, true
		case lo > hi:
			return fmt.Sprintf(" [%d:%d:]", lo, hi), true, true
		}
		return "", false, true
	}
	switch {
	case hi > limit:
		return fmt.Sprintf(" [:%d] with %s %d", hi, what, limit), true, true
	case lo > hi:
		return fmt.Sprintf(" [%d:%d]", lo, hi), true, true
	}
	return "", false, true
}

// currentGlobals reads the session's variables as they are now (those of
// the failing cell included), falling back to the last snapshot.
func (e *Engine) currentGlobals() map[string]reflect.Value {
	var g map[string]reflect.Value
	func() {
		defer func() { _ = recover() }() // see snapshot
		g = e.yi.Globals()
	}()
	if g == nil {
		e.symMu.RLock()
		g = e.globals
		e.symMu.RUnlock()
	}
	return g
}

// seqOf returns the value of a global slice, array, string or map named by
// x.
func seqOf(x ast.Expr, g map[string]reflect.Value) (reflect.Value, bool) {
	id, ok := x.(*ast.Ident)
	if !ok {
		return reflect.Value{}, false
	}
	v, ok := g[id.Name]
	if !ok || !v.IsValid() {
		return reflect.Value{}, false
	}
	if v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.String, reflect.Map:
		return v, true
	}
	return reflect.Value{}, false
}

// intOf evaluates an integer expression made of literals, integer
// globals, len and cap of globals, and + - * / % of those.
func intOf(x ast.Expr, g map[string]reflect.Value) (int64, bool) {
	switch x := x.(type) {
	case *ast.BasicLit:
		if x.Kind != token.INT {
			return 0, false
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(x.Value, "_", ""), 0, 64)
		return i, err == nil
	case *ast.ParenExpr:
		return intOf(x.X, g)
	case *ast.UnaryExpr:
		i, ok := intOf(x.X, g)
		switch x.Op {
		case token.SUB:
			return -i, ok
		case token.ADD:
			return i, ok
		}
	case *ast.BinaryExpr:
		a, ok1 := intOf(x.X, g)
		b, ok2 := intOf(x.Y, g)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch x.Op {
		case token.ADD:
			return a + b, true
		case token.SUB:
			return a - b, true
		case token.MUL:
			return a * b, true
		case token.QUO:
			return a / max(b, 1), b != 0
		case token.REM:
			return a % max(b, 1), b != 0
		}
	case *ast.CallExpr:
		fn, ok := x.Fun.(*ast.Ident)
		if !ok || len(x.Args) != 1 || (fn.Name != "len" && fn.Name != "cap") {
			return 0, false
		}
		if _, shadowed := g[fn.Name]; shadowed {
			return 0, false
		}
		v, ok := seqOf(x.Args[0], g)
		if !ok {
			return 0, false
		}
		if fn.Name == "cap" {
			if v.Kind() == reflect.String || v.Kind() == reflect.Map {
				return 0, false
			}
			return int64(v.Cap()), true
		}
		return int64(v.Len()), true
	case *ast.Ident:
		v, ok := g[x.Name]
		if !ok || !v.IsValid() {
			return 0, false
		}
		if v.Kind() == reflect.Interface && !v.IsNil() {
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return v.Int(), true
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return int64(v.Uint()), true
		}
	}
	return 0, false
}
