package interp

import (
	"fmt"
	"go/constant"
	"go/scanner"
	"go/token"
	"path"
	"reflect"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/stdlib"
)

// packages maps a package's name in cells (the last element of its path)
// to its symbols.
var packages = func() map[string]map[string]reflect.Value {
	m := map[string]map[string]reflect.Value{}
	for key, syms := range stdlib.Symbols {
		m[path.Base(key)] = syms
	}
	return m
}()

var goKeywords = []string{"break", "case", "chan", "const", "continue", "default", "defer", "else",
	"fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range",
	"return", "select", "struct", "switch", "type", "var",
	"append", "cap", "close", "complex", "copy", "delete", "imag", "len", "make", "new", "panic",
	"print", "println", "real", "recover", "true", "false", "nil", "iota",
	"bool", "byte", "complex128", "float32", "float64", "int", "int64", "rune", "string", "uint", "any", "error"}

func isIdentRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// byteOffset converts a cursor in code points to a byte offset, clamped.
func byteOffset(s string, cursor int) int {
	if cursor < 0 {
		return 0
	}
	off := 0
	for i := 0; i < cursor && off < len(s); i++ {
		_, n := utf8.DecodeRuneInString(s[off:])
		off += n
	}
	return off
}

// identBefore returns the identifier that ends at off.
func identBefore(s string, off int) string {
	start := off
	for start > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:start])
		if !isIdentRune(r) {
			break
		}
		start -= n
	}
	return s[start:off]
}

// Complete answers a completion request at cursor (code points).
func (e *Engine) Complete(code string, cursor int) engine.Completion {
	off := byteOffset(code, cursor)
	if lit, ok := literalAt(code[:off]); ok {
		// Inside a string or a comment no identifier fits; inside the
		// string argument of a DSL call its choices, and the strings the
		// DSL lists for it (dataset and column names), do.
		res := engine.Completion{Matches: []string{}, CursorStart: cursor, CursorEnd: cursor, Metadata: map[string]any{}}
		if lit.fn == "" {
			return res
		}
		var cands []string
		if cl, ok := e.plugin.(ChoiceLister); ok && lit.keyword != "" {
			cands = cl.Choices(lit.fn, lit.keyword)
		}
		if sl, ok := e.plugin.(StringLister); ok {
			var first any
			if lit.first != "" {
				first, _ = e.lookup(lit.first)
			}
			cands = append(cands, sl.Strings(lit.fn, lit.keyword, lit.pos, first)...)
		}
		res.CursorStart = cursor - utf8.RuneCountInString(lit.partial)
		seen := map[string]bool{}
		for _, c := range cands {
			if c != "" && strings.HasPrefix(c, lit.partial) && !seen[c] {
				seen[c] = true
				res.Matches = append(res.Matches, c)
			}
		}
		return res
	}
	prefix := identBefore(code, off)
	res := engine.Completion{Matches: []string{}, CursorStart: cursor - utf8.RuneCountInString(prefix), CursorEnd: cursor, Metadata: map[string]any{}}
	var cands []string
	before := off - len(prefix)
	if before > 0 && code[before-1] == '.' {
		// Member completion: pkg.Name, or the methods and fields of the
		// type of a value, a field or a call's result (r.Components.).
		cands = e.memberNames(chainBefore(code[:before-1]))
	} else {
		if ci := callAt(code[:before]); ci.name != "" && ci.qual == "" && ci.argStart {
			// At the start of an argument of a DSL call: its keywords not
			// given yet. After the first argument (the dataset or result,
			// positional) a prefix that some keyword starts with means a
			// keyword: offering every Go name too (complex, const, ...)
			// would hide the few that fit.
			var kws []string
			for _, k := range e.plugin.Keywords(ci.name) {
				if !ci.given[k] && strings.HasPrefix(k, prefix) {
					kws = append(kws, k+"=")
				}
			}
			if ci.arg > 0 && prefix != "" && len(kws) > 0 {
				sort.Strings(kws)
				res.Matches = kws
				return res
			}
			cands = append(cands, kws...)
		}
		cands = append(cands, e.names()...)
		cands = append(cands, goKeywords...)
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) && !strings.HasPrefix(c, "__") && !seen[c] {
			seen[c] = true
			res.Matches = append(res.Matches, c)
		}
	}
	sort.Slice(res.Matches, func(i, j int) bool {
		// keywords of the call first, then alphabetical
		ki, kj := strings.HasSuffix(res.Matches[i], "="), strings.HasSuffix(res.Matches[j], "=")
		if ki != kj {
			return ki
		}
		return res.Matches[i] < res.Matches[j]
	})
	return res
}

// literal describes the string or comment that the text before the
// cursor ends in.
type literal struct {
	fn, keyword string // the call and keyword of fn(..., keyword="partial
	pos         int    // or, with keyword "", the positional argument: fn("partial is 0
	first       string // the call's first argument, when it is a lone identifier
	partial     string // the string's text before the cursor
}

// literalAt reports whether s ends inside a string literal or a comment,
// and for a string that is a keyword argument (fn(..., kw="ab), which.
func literalAt(s string) (literal, bool) {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(s))
	var sc scanner.Scanner
	open := -1 // offset of an unterminated string or comment
	sc.Init(f, []byte(s), func(p token.Position, msg string) {
		if strings.Contains(msg, "not terminated") {
			open = p.Offset
		}
	}, scanner.ScanComments)
	type tok struct {
		t   token.Token
		lit string
		off int
	}
	var toks []tok
	for {
		pos, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		if t == token.SEMICOLON && lit == "\n" {
			continue
		}
		toks = append(toks, tok{t, lit, f.Offset(pos)})
	}
	if len(toks) == 0 {
		return literal{}, false
	}
	last := toks[len(toks)-1]
	switch {
	case last.t == token.COMMENT:
		// A line comment runs to the end of its line; a general one was
		// left open.
		if strings.HasPrefix(last.lit, "//") && !strings.Contains(s[last.off:], "\n") || open == last.off {
			return literal{}, true
		}
		return literal{}, false
	case last.t == token.STRING || last.t == token.CHAR:
		if open != last.off || last.off+len(last.lit) != len(s) {
			return literal{}, false
		}
	default:
		return literal{}, false
	}
	var lit literal
	if last.t == token.STRING {
		lit.partial = last.lit[1:]
	}
	n := len(toks)
	switch {
	case n >= 3 && toks[n-2].t == token.ASSIGN && toks[n-3].t == token.IDENT:
		if ci := callAt(s[:toks[n-3].off]); ci.qual == "" && ci.argStart {
			lit.fn, lit.keyword, lit.first = ci.name, toks[n-3].lit, ci.first
		}
	case n >= 2 && (toks[n-2].t == token.LPAREN || toks[n-2].t == token.COMMA):
		// a positional string argument: dataset("wi
		if ci := callAt(s[:last.off]); ci.qual == "" {
			lit.fn, lit.pos, lit.first = ci.name, ci.arg, ci.first
		}
	}
	return lit, true
}

// callInfo describes the innermost call whose argument list the end of a
// text is in.
type callInfo struct {
	qual, name string // the function: "math", "Sqrt"; name "" when none
	arg        int    // which argument (from 0) the text ends in
	argStart   bool   // the text ends where an argument starts: after ( or ,
	first      string // the first argument, when it is a lone identifier
	given      map[string]bool
}

// callAt scans s (strings and comments skipped) for the innermost open
// call at its end: which argument the end is in, the first argument and
// the keywords (name=) already given at the call's level.
func callAt(s string) callInfo {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(s))
	var sc scanner.Scanner
	sc.Init(f, []byte(s), func(token.Position, string) {}, 0)
	type frame struct {
		tok   token.Token
		info  callInfo
		first int // tokens of the first argument
	}
	var stack []*frame
	var prev [3]struct {
		t   token.Token
		lit string
	}
	for {
		_, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		if t == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line end inside the parentheses
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top != nil && top.tok == token.LPAREN && top.info.arg == 0 && t != token.COMMA && t != token.RPAREN {
			top.first++
			if t == token.IDENT {
				top.info.first = lit
			}
		}
		switch t {
		case token.LPAREN, token.LBRACE, token.LBRACK:
			fr := &frame{tok: t, info: callInfo{given: map[string]bool{}}}
			if t == token.LPAREN && prev[0].t == token.IDENT {
				fr.info.name = prev[0].lit
				if prev[1].t == token.PERIOD && prev[2].t == token.IDENT {
					fr.info.qual = prev[2].lit
				}
			}
			stack = append(stack, fr)
		case token.RPAREN, token.RBRACE, token.RBRACK:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case token.COMMA:
			if top != nil && top.tok == token.LPAREN {
				top.info.arg++
			}
		case token.ASSIGN:
			if top != nil && top.tok == token.LPAREN && prev[0].t == token.IDENT && (prev[1].t == token.LPAREN || prev[1].t == token.COMMA) {
				top.info.given[prev[0].lit] = true
			}
		}
		prev[2], prev[1] = prev[1], prev[0]
		prev[0].t, prev[0].lit = t, lit
	}
	n := len(stack)
	if n == 0 || stack[n-1].tok != token.LPAREN {
		return callInfo{}
	}
	top := stack[n-1]
	ci := top.info
	if top.first != 1 {
		ci.first = ""
	}
	ci.argStart = prev[0].t == token.LPAREN || prev[0].t == token.COMMA
	return ci
}

// names lists every bare identifier a cell can use.
func (e *Engine) names() []string {
	var l []string
	e.symMu.RLock()
	for n := range e.globals {
		l = append(l, n)
	}
	for n := range e.decls {
		l = append(l, n)
	}
	for n := range e.exports {
		l = append(l, n)
	}
	e.symMu.RUnlock()
	l = append(l, e.plugin.Names()...)
	for n := range packages {
		l = append(l, n)
	}
	l = append(l, extraImports...)
	return l
}

// segment is one element of a selector chain: a name, called or not.
type segment struct {
	name string
	call bool
}

// chainBefore parses the selector chain that ends s, such as
// "r.Components" or "mat.NewDense(2, 2, nil).T()"; nil when s does not
// end in one.
func chainBefore(s string) []segment {
	var chain []segment
	end := len(s)
	for {
		call := false
		if end > 0 && s[end-1] == ')' {
			open := matchingOpen(s[:end])
			if open < 0 {
				return nil
			}
			end, call = open, true
		}
		name := identBefore(s, end)
		if name == "" {
			return nil
		}
		chain = append(chain, segment{name, call})
		end -= len(name)
		if end == 0 || s[end-1] != '.' {
			break
		}
		end--
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}

// matchingOpen returns the offset of the "(" that the final ")" of s
// closes, or -1. Brackets inside string literals are skipped.
func matchingOpen(s string) int {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(s))
	var sc scanner.Scanner
	sc.Init(f, []byte(s), func(token.Position, string) {}, 0)
	var stack []int
	last := -1
	for {
		pos, t, _ := sc.Scan()
		if t == token.EOF {
			break
		}
		switch t {
		case token.LPAREN:
			stack = append(stack, f.Offset(pos))
		case token.RPAREN:
			if len(stack) == 0 {
				return -1
			}
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if f.Offset(pos) == len(s)-1 {
				return last
			}
		}
	}
	return -1
}

// memberNames lists what can follow "chain." in a cell: a package's
// symbols, or the exported methods and fields of the chain's static type.
// Only types are looked at: no value is read, no code is run.
func (e *Engine) memberNames(chain []segment) []string {
	if len(chain) == 0 {
		return nil
	}
	var names []string
	if len(chain) == 1 && !chain[0].call {
		if syms, ok := packages[chain[0].name]; ok {
			for n := range syms {
				names = append(names, n)
			}
			return names
		}
	}
	t := e.chainType(chain)
	if t == nil {
		return nil
	}
	return typeMembers(t)
}

// chainType returns the static type of a selector chain, or nil.
func (e *Engine) chainType(chain []segment) reflect.Type {
	first, rest := chain[0], chain[1:]
	var t reflect.Type
	if syms, ok := packages[first.name]; ok && !first.call && len(rest) > 0 {
		v, ok := syms[rest[0].name]
		if !ok {
			return nil
		}
		t = symbolType(v, rest[0].call)
		rest = rest[1:]
	} else {
		e.symMu.RLock()
		v, ok := e.globals[first.name]
		if !ok {
			v, ok = e.exports[first.name]
		}
		e.symMu.RUnlock()
		if !ok || !v.IsValid() {
			return nil
		}
		t = symbolType(v, first.call)
	}
	for _, s := range rest {
		if t == nil {
			return nil
		}
		t = memberType(t, s)
	}
	return t
}

// symbolType is the type of a symbol's value, or of its call's first
// result.
func symbolType(v reflect.Value, call bool) reflect.Type {
	t := v.Type()
	if !call {
		return t
	}
	return resultType(t)
}

func resultType(fn reflect.Type) reflect.Type {
	if fn.Kind() != reflect.Func || fn.NumOut() == 0 {
		return nil
	}
	return fn.Out(0)
}

// memberType is the type of field s of t, or of the result of its
// method s.
func memberType(t reflect.Type, s segment) reflect.Type {
	if m, ok := methodOf(t, s.name); ok {
		if !s.call {
			return nil // a method value: nothing useful follows
		}
		return resultType(m.Type)
	}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct || s.call {
		return nil
	}
	f, ok := st.FieldByName(s.name)
	if !ok || !f.IsExported() {
		return nil
	}
	return f.Type
}

// methodOf finds an exported method of t, or of *t for an addressable
// struct or named value.
func methodOf(t reflect.Type, name string) (reflect.Method, bool) {
	if m, ok := t.MethodByName(name); ok {
		return m, true
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		return reflect.PointerTo(t).MethodByName(name)
	}
	return reflect.Method{}, false
}

// typeMembers lists the exported methods and fields of t.
func typeMembers(t reflect.Type) []string {
	var l []string
	mt := t
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		mt = reflect.PointerTo(t)
	}
	for i := 0; i < mt.NumMethod(); i++ {
		if m := mt.Method(i); m.IsExported() {
			l = append(l, m.Name)
		}
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				l = append(l, f.Name)
			}
		}
	}
	return l
}

// enclosingCallQ returns the name of the function whose argument list
// contains the end of s ("" when none), skipping strings and comments, and
// the package or receiver that qualifies it ("math" for math.Sqrt(), "" for
// a bare name).
func enclosingCallQ(s string) (qual, name string) {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(s))
	var sc scanner.Scanner
	sc.Init(f, []byte(s), func(token.Position, string) {}, 0)
	type open struct {
		tok        token.Token
		qual, name string
	}
	var stack []open
	var prev [3]struct {
		t   token.Token
		lit string
	}
	for {
		_, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		switch t {
		case token.LPAREN, token.LBRACE, token.LBRACK:
			o := open{tok: t}
			if prev[0].t == token.IDENT {
				o.name = prev[0].lit
				if prev[1].t == token.PERIOD && prev[2].t == token.IDENT {
					o.qual = prev[2].lit
				}
			}
			stack = append(stack, o)
		case token.RPAREN, token.RBRACE, token.RBRACK:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		prev[2], prev[1] = prev[1], prev[0]
		prev[0].t, prev[0].lit = t, lit
	}
	if n := len(stack); n > 0 && stack[n-1].tok == token.LPAREN {
		return stack[n-1].qual, stack[n-1].name
	}
	return "", ""
}

// Inspect documents the name at the cursor. As in IPython, a call's
// function is documented wherever the cursor is inside its parentheses
// (private_pca(bc, k=2| documents private_pca), unless the cursor is on
// the name of a call itself.
func (e *Engine) Inspect(code string, cursor int, detail int) engine.Inspection {
	off := byteOffset(code, cursor)
	end := off
	for end < len(code) {
		r, n := utf8.DecodeRuneInString(code[end:])
		if !isIdentRune(r) {
			break
		}
		end += n
	}
	name := identBefore(code, end)
	qual := ""
	if start := end - len(name); start > 0 && code[start-1] == '.' {
		qual = identBefore(code, start-1)
	}
	found := func(text string) engine.Inspection {
		return engine.Inspection{Found: true, Data: engine.MIMEBundle{"text/plain": text}}
	}
	callee := name != "" && strings.HasPrefix(strings.TrimLeft(code[end:], " \t"), "(")
	if !callee {
		if cq, cn := enclosingCallQ(code[:off]); cn != "" {
			if text, ok := e.doc(cq, cn); ok {
				return found(text)
			}
		}
	}
	if text, ok := e.doc(qual, name); ok {
		return found(text)
	}
	return engine.Inspection{Found: false, Data: engine.MIMEBundle{}}
}

// doc documents qual.name (qual may be empty).
func (e *Engine) doc(qual, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if qual != "" {
		if syms, ok := packages[qual]; ok {
			if v, ok := syms[name]; ok {
				return symbolDoc(qual, name, v), true
			}
		}
		return "", false
	}
	if t, ok := e.plugin.Doc(name); ok {
		return t, true
	}
	if t, ok := displayDocs[name]; ok {
		return t, true
	}
	e.symMu.RLock()
	v, isGlobal := e.globals[name]
	kind, isDecl := e.decls[name]
	e.symMu.RUnlock()
	if isGlobal && v.IsValid() {
		s := "<unprintable>"
		if v.CanInterface() {
			s = plainText(v.Interface())
		}
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		return fmt.Sprintf("%s %s\n\n%s", name, TypeName(v.Type()), s), true
	}
	if isDecl {
		return fmt.Sprintf("%s %s (defined in a cell)", kind, name), true
	}
	return helpText(name)
}

// helpText documents a display function or an allowlisted package.
func helpText(name string) (string, bool) {
	if t, ok := displayDocs[name]; ok {
		return t, true
	}
	if pkg, member, ok := strings.Cut(name, "."); ok {
		if syms, ok := packages[pkg]; ok {
			if v, ok := syms[member]; ok {
				return symbolDoc(pkg, member, v), true
			}
		}
		return "", false
	}
	syms, ok := packages[name]
	if !ok {
		return "", false
	}
	var names []string
	for n := range syms {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("package %s: %d symbols\n\n%s", name, len(names), strings.Join(names, " ")), true
}

// symbolDoc describes a symbol of a symbol table by its Go type.
func symbolDoc(pkg, name string, v reflect.Value) string {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Func:
		return fmt.Sprintf("func %s.%s%s", pkg, name, strings.TrimPrefix(t.String(), "func"))
	case t.Kind() == reflect.Pointer && v.IsNil():
		// a type, represented as a nil pointer to it
		et := t.Elem()
		var ms []string
		pt := reflect.PointerTo(et)
		for i := 0; i < pt.NumMethod(); i++ {
			m := pt.Method(i)
			ms = append(ms, m.Name+strings.TrimPrefix(m.Type.String(), "func("+pt.String()+", ")+"")
		}
		s := fmt.Sprintf("type %s.%s (%s)", pkg, name, et.Kind())
		if len(ms) > 0 {
			s += "\n\nmethods:\n  " + strings.Join(ms, "\n  ")
		}
		return s
	default:
		if c, ok := v.Interface().(constant.Value); ok {
			return fmt.Sprintf("const %s.%s = %s", pkg, name, c.String())
		}
		if v.CanInterface() {
			return fmt.Sprintf("%s.%s %s = %v", pkg, name, t, v.Interface())
		}
		return fmt.Sprintf("%s.%s %s", pkg, name, t)
	}
}

// IsComplete says whether code is ready to run.
func (e *Engine) IsComplete(code string) engine.Completeness {
	if strings.TrimSpace(code) == "" {
		return engine.Completeness{Status: "complete"}
	}
	// A cell magic (%%budget ...) takes the following lines as its body
	// and ends at an empty line, as in IPython's console.
	if strings.HasPrefix(strings.TrimSpace(code), "%%") && !strings.HasSuffix(strings.TrimRight(code, " \t"), "\n\n") {
		return engine.Completeness{Status: "incomplete"}
	}
	// Open brackets, strings or comments on the user's text (DSL forms
	// included: "budget eps=1 {" opens a brace).
	depth, last, unterminated := bracketDepth(code)
	if unterminated || depth > 0 {
		return engine.Completeness{Status: "incomplete", Indent: strings.Repeat("    ", max(depth, 0))}
	}
	if depth < 0 {
		return engine.Completeness{Status: "invalid"}
	}
	switch last {
	case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.AND, token.OR, token.XOR,
		token.SHL, token.SHR, token.AND_NOT, token.LAND, token.LOR, token.EQL, token.NEQ, token.LSS,
		token.GTR, token.LEQ, token.GEQ, token.ASSIGN, token.DEFINE, token.COMMA, token.PERIOD,
		token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.QUO_ASSIGN, token.ARROW, token.COLON:
		return engine.Completeness{Status: "incomplete"}
	}
	prog, err := e.plugin.Rewrite(code)
	if err != nil {
		return engine.Completeness{Status: "invalid"}
	}
	chunks := splitItems(prog.Go)
	for i := range chunks {
		if err := parseChunk(prog.Go, &chunks[i]); err != nil {
			return engine.Completeness{Status: "invalid"}
		}
	}
	return engine.Completeness{Status: "complete"}
}

// bracketDepth scans Go (or DSL) text: the bracket depth at the end, the
// last token, and whether a string or comment is left open.
func bracketDepth(s string) (depth int, last token.Token, unterminated bool) {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(s))
	var sc scanner.Scanner
	sc.Init(f, []byte(s), func(_ token.Position, msg string) {
		if strings.Contains(msg, "not terminated") {
			unterminated = true
		}
	}, scanner.ScanComments)
	for {
		_, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		switch t {
		case token.LPAREN, token.LBRACE, token.LBRACK:
			depth++
		case token.RPAREN, token.RBRACE, token.RBRACK:
			depth--
		case token.COMMENT:
			continue
		case token.SEMICOLON:
			if lit == "\n" {
				continue
			}
		}
		last = t
	}
	return depth, last, unterminated
}
