package interp

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"sort"
	"strings"
)

// chunkKind says how yaegi must see a chunk: a file of imports, a file of
// other declarations, or statements (wrapped in main by yaegi).
type chunkKind int

const (
	importChunk chunkKind = iota
	declChunk
	stmtChunk
)

func (k chunkKind) String() string {
	return [...]string{"import", "decl", "stmt"}[k]
}

// A chunk is a run of consecutive top-level items of one kind.
type chunk struct {
	kind       chunkKind
	start, end int // byte offsets in the translated cell

	file  *ast.File      // parsed chunk (decls), or
	body  *ast.BlockStmt // parsed chunk (statements)
	fset  *token.FileSet
	shift int // AST offset minus cell offset (the parse prefix)
}

// statement kinds as the first tokens tell them.
func itemKind(first, second, afterParen, afterParen2 token.Token) chunkKind {
	switch first {
	case token.IMPORT:
		return importChunk
	case token.TYPE, token.VAR, token.CONST:
		return declChunk
	case token.FUNC:
		// func name(...), func (recv) name(...) are declarations;
		// func(...) {...}() is a statement.
		// (a literal's result type follows its parameters: func() int {)
		if second == token.IDENT || (second == token.LPAREN && afterParen == token.IDENT && afterParen2 == token.LPAREN) {
			return declChunk
		}
	}
	return stmtChunk
}

// splitItems cuts Go source into top-level items at semicolons (explicit
// or inserted at line ends) outside brackets, and groups consecutive items
// of one kind into chunks. It does not parse: parse errors are found when
// chunks are parsed.
func splitItems(src string) []chunk {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(f, []byte(src), func(token.Position, string) {}, 0)

	type tok struct {
		off int
		t   token.Token
		lit string
	}
	var toks []tok
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		toks = append(toks, tok{f.Offset(pos), t, lit})
	}

	var chunks []chunk
	depth := 0
	itemStart := -1
	add := func(kind chunkKind, start, end int) {
		if n := len(chunks); n > 0 && chunks[n-1].kind == kind {
			chunks[n-1].end = end
			return
		}
		chunks = append(chunks, chunk{kind: kind, start: start, end: end})
	}
	kindAt := func(i int) chunkKind {
		get := func(j int) token.Token {
			if j < len(toks) {
				return toks[j].t
			}
			return token.EOF
		}
		after, after2 := token.EOF, token.EOF
		if get(i) == token.FUNC && get(i+1) == token.LPAREN {
			// find the matching paren and look at what follows
			d := 0
			for j := i + 1; j < len(toks); j++ {
				switch toks[j].t {
				case token.LPAREN:
					d++
				case token.RPAREN:
					d--
				}
				if d == 0 {
					after, after2 = get(j+1), get(j+2)
					break
				}
			}
		}
		return itemKind(get(i), get(i+1), after, after2)
	}
	var curKind chunkKind
	for i, t := range toks {
		if itemStart < 0 {
			if t.t == token.SEMICOLON {
				continue
			}
			itemStart = t.off
			curKind = kindAt(i)
		}
		switch t.t {
		case token.LPAREN, token.LBRACE, token.LBRACK:
			depth++
		case token.RPAREN, token.RBRACE, token.RBRACK:
			if depth > 0 {
				depth--
			}
		case token.SEMICOLON:
			if depth == 0 {
				end := t.off
				if t.lit == ";" {
					end++
				}
				add(curKind, itemStart, end)
				itemStart = -1
			}
		}
	}
	if itemStart >= 0 {
		add(curKind, itemStart, len(src))
	}
	return chunks
}

// blank returns src with every byte outside [start, end) replaced by a
// space, except newlines: positions inside the range are unchanged.
func blank(src string, start, end int) string {
	b := []byte(src)
	for i := range b {
		if (i < start || i >= end) && b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

const (
	stmtPrefix = "package p;func _(){\n"
	declPrefix = "package p\n"
)

// parseChunk parses the chunk's text (other chunks blanked) and records
// the AST. Errors are returned with offsets in the translated cell.
func parseChunk(src string, c *chunk) error {
	text := blank(src, c.start, c.end)
	c.fset = token.NewFileSet()
	var err error
	if c.kind == stmtChunk {
		c.shift = len(stmtPrefix)
		var f *ast.File
		f, err = parser.ParseFile(c.fset, "", stmtPrefix+text+"\n}", parser.SkipObjectResolution)
		if err == nil {
			c.body = f.Decls[0].(*ast.FuncDecl).Body
		}
	} else {
		c.shift = len(declPrefix)
		c.file, err = parser.ParseFile(c.fset, "", declPrefix+text, parser.SkipObjectResolution)
	}
	if err == nil {
		return nil
	}
	if list, ok := err.(scanner.ErrorList); ok && len(list) > 0 {
		e := list[0]
		return &posError{name: "SyntaxError", off: lineColOffset(stmtOrDeclPrefixed(c, text), e.Pos.Line, e.Pos.Column) - c.shift, msg: e.Msg}
	}
	return &posError{name: "SyntaxError", off: c.start, msg: err.Error()}
}

func stmtOrDeclPrefixed(c *chunk, text string) string {
	if c.kind == stmtChunk {
		return stmtPrefix + text + "\n}"
	}
	return declPrefix + text
}

// off converts a token.Pos of the chunk's AST to an offset in the cell.
func (c *chunk) off(p token.Pos) int {
	return c.fset.Position(p).Offset - c.shift
}

// lineColOffset returns the byte offset of 1-based (line, col) in s,
// clamped to s.
func lineColOffset(s string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		off += i + 1
	}
	off += col - 1
	if off > len(s) {
		off = len(s)
	}
	if off < 0 {
		off = 0
	}
	return off
}

// offsetLineCol is the inverse of lineColOffset (byte column).
func offsetLineCol(s string, off int) (line, col int) {
	off = min(max(off, 0), len(s))
	line = 1 + strings.Count(s[:off], "\n")
	col = off - strings.LastIndexByte(s[:off], '\n')
	return line, col
}

// posError is an error at an offset of the translated cell.
type posError struct {
	name string
	off  int
	msg  string
}

func (e *posError) Error() string { return e.msg }

// An edit inserts text before the byte at off.
type edit struct {
	off  int
	text string
	seq  int // order of edits at the same offset
}

// applyEdits returns src with the insertions made, and a function mapping
// an offset in the result back to src (text inserted maps to the place of
// its insertion).
func applyEdits(src string, edits []edit) (string, func(int) int) {
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].off != edits[j].off {
			return edits[i].off < edits[j].off
		}
		return edits[i].seq < edits[j].seq
	})
	var b strings.Builder
	type seg struct{ outStart, srcStart, n int }
	var segs []seg // inserted segments
	last := 0
	for _, e := range edits {
		b.WriteString(src[last:e.off])
		segs = append(segs, seg{b.Len(), e.off, len(e.text)})
		b.WriteString(e.text)
		last = e.off
	}
	b.WriteString(src[last:])
	back := func(o int) int {
		shift := 0
		for _, s := range segs {
			if o < s.outStart {
				break
			}
			if o < s.outStart+s.n {
				return s.srcStart
			}
			shift += s.n
		}
		return o - shift
	}
	return b.String(), back
}

// stmtEdits rewrites a statement chunk for a safe interrupt: statements
// containing loops run in a function literal (whose frame keeps its own
// run id in yaegi, so a cancelled loop cannot resume), and a guard call
// precedes every top-level statement (it also records which statement
// runs, for tracebacks).
//
// Function literals are bound to a variable before the call because yaegi
// v0.16.1 re-runs a top-level statement "func(){...}()" at every later
// evaluation; "f := func(){...}; f()" runs once. User statements of that
// form get the same treatment.
//
// With result set, the final expression statement is passed to the
// function of that name instead (the cell's value).
func stmtEdits(c *chunk, guard func(off int) string, name func() string, result string) []edit {
	var edits []edit
	for i, s := range c.body.List {
		start, end := c.off(s.Pos()), c.off(s.End())
		edits = append(edits, edit{start, guard(start) + ";", 0})
		if result != "" && i == len(c.body.List)-1 {
			if x := finalExpr(c); x != nil {
				edits = append(edits, edit{c.off(x.Pos()), result + "(", 2}, edit{c.off(x.End()), ")", -2})
				break
			}
		}
		if containsLoop(s) {
			f := name()
			edits = append(edits, edit{start, f + ":=func(){", 1}, edit{end, "};" + f + "()", -1})
			continue
		}
		if es, ok := s.(*ast.ExprStmt); ok {
			if call, ok := es.X.(*ast.CallExpr); ok {
				if lit, ok := call.Fun.(*ast.FuncLit); ok {
					f := name()
					edits = append(edits, edit{c.off(lit.Pos()), f + ":=", 1}, edit{c.off(lit.End()), ";" + f, -1})
				}
			}
		}
	}
	return edits
}

// containsLoop reports whether s runs a loop (or a select, which can
// block) on the frame it executes in, not counting function literals.
func containsLoop(s ast.Stmt) bool {
	if _, ok := s.(*ast.DeclStmt); ok {
		return false
	}
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ForStmt, *ast.RangeStmt, *ast.SelectStmt:
			found = true
		}
		return !found
	})
	return found
}

// finalExpr returns the expression of the chunk's last statement when it
// is an expression statement whose value should be displayed.
func finalExpr(c *chunk) ast.Expr {
	if c.kind != stmtChunk || len(c.body.List) == 0 {
		return nil
	}
	es, ok := c.body.List[len(c.body.List)-1].(*ast.ExprStmt)
	if !ok {
		return nil
	}
	if call, ok := es.X.(*ast.CallExpr); ok {
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			if fn.Name == "print" || fn.Name == "println" {
				return nil
			}
		case *ast.SelectorExpr:
			if x, ok := fn.X.(*ast.Ident); ok && x.Name == "fmt" && strings.HasPrefix(fn.Sel.Name, "Print") {
				return nil
			}
		}
	}
	if u, ok := es.X.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return es.X
	}
	return es.X
}

// isolateShown cuts statement chunks so that every statement whose value
// a transcript shows (finalExpr of a chunk holding it alone) is a chunk of
// its own: yaegi's result is reliable only for a lone expression
// statement, and a call without a value must be run again unwrapped, which
// is safe only when nothing else of the chunk ran (see Execute).
// Consecutive other statements stay together.
func isolateShown(src string, chunks []chunk) ([]chunk, error) {
	var out []chunk
	for _, c := range chunks {
		if c.kind != stmtChunk || len(c.body.List) < 2 {
			out = append(out, c)
			continue
		}
		cuts := []int{c.start}
		for i, st := range c.body.List {
			if !shownStmt(st) {
				continue
			}
			cuts = append(cuts, c.off(st.Pos()))
			if i+1 < len(c.body.List) {
				cuts = append(cuts, c.off(c.body.List[i+1].Pos()))
			}
		}
		cuts = append(cuts, c.end)
		for i := 0; i+1 < len(cuts); i++ {
			if cuts[i] >= cuts[i+1] {
				continue
			}
			piece := chunk{kind: stmtChunk, start: cuts[i], end: cuts[i+1]}
			if err := parseChunk(src, &piece); err != nil {
				return nil, err
			}
			if len(piece.body.List) > 0 {
				out = append(out, piece)
			}
		}
	}
	return out, nil
}

// shownStmt reports whether st is an expression statement whose value a
// transcript shows: not a print (it shows itself) and not a call of the
// DSL's translation (__pn_budget_begin, __pn_magic: they have no value).
func shownStmt(st ast.Stmt) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	if call, ok := es.X.(*ast.CallExpr); ok {
		if id, ok := call.Fun.(*ast.Ident); ok && strings.HasPrefix(id.Name, "__pn") {
			return false
		}
	}
	return finalExpr(&chunk{kind: stmtChunk, body: &ast.BlockStmt{List: []ast.Stmt{st}}}) != nil
}

// goSubsetCheck reports constructs yaegi cannot run (and would crash
// compiling): range over an integer or a function.
func goSubsetCheck(c *chunk, isInt func(ast.Expr) bool) error {
	var root ast.Node = c.body
	if c.file != nil {
		root = c.file
	}
	var err error
	ast.Inspect(root, func(n ast.Node) bool {
		if err != nil {
			return false
		}
		r, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		switch x := r.X.(type) {
		case *ast.FuncLit:
			err = &posError{name: "UnsupportedError", off: c.off(x.Pos()),
				msg: "range over a function (Go 1.23 iterators) is not supported by the interpreter (Go 1.22 subset); call the function with a callback instead"}
		default:
			if isInt(x) {
				err = &posError{name: "UnsupportedError", off: c.off(x.Pos()),
					msg: fmt.Sprintf("range over an integer is not supported by the interpreter (Go 1.22 subset); write: for i := 0; i < %s; i++ { ... }", exprString(x))}
			}
		}
		return err == nil
	})
	return err
}

func exprString(x ast.Expr) string {
	var b strings.Builder
	switch x := x.(type) {
	case *ast.BasicLit:
		return x.Value
	case *ast.Ident:
		return x.Name
	}
	b.WriteString("n")
	return b.String()
}
