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
	prefix := identBefore(code, off)
	res := engine.Completion{Matches: []string{}, CursorStart: cursor - utf8.RuneCountInString(prefix), CursorEnd: cursor, Metadata: map[string]any{}}
	var cands []string
	before := off - len(prefix)
	if before > 0 && code[before-1] == '.' {
		// Member completion: pkg.Name, or a user value's methods and fields.
		recv := identBefore(code, before-1)
		if syms, ok := packages[recv]; ok {
			for n := range syms {
				cands = append(cands, n)
			}
		} else {
			e.symMu.RLock()
			v, ok := e.globals[recv]
			e.symMu.RUnlock()
			if ok {
				cands = members(v)
			}
		}
	} else {
		if fn := enclosingCall(code[:off]); fn != "" {
			for _, k := range e.plugin.Keywords(fn) {
				cands = append(cands, k+"=")
			}
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

// members lists the exported methods and fields of a value.
func members(v reflect.Value) []string {
	if !v.IsValid() {
		return nil
	}
	var l []string
	t := v.Type()
	for i := 0; i < t.NumMethod(); i++ {
		l = append(l, t.Method(i).Name)
	}
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
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

// enclosingCall returns the name of the function whose argument list
// contains the end of s ("" when none), skipping strings and comments.
func enclosingCall(s string) string {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(s))
	var sc scanner.Scanner
	sc.Init(f, []byte(s), func(token.Position, string) {}, 0)
	type open struct {
		tok  token.Token
		name string
	}
	var stack []open
	prevIdent := ""
	for {
		_, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		switch t {
		case token.LPAREN, token.LBRACE, token.LBRACK:
			stack = append(stack, open{t, prevIdent})
		case token.RPAREN, token.RBRACE, token.RBRACK:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		if t == token.IDENT {
			prevIdent = lit
		} else {
			prevIdent = ""
		}
	}
	if n := len(stack); n > 0 && stack[n-1].tok == token.LPAREN {
		return stack[n-1].name
	}
	return ""
}

// Inspect documents the name at the cursor.
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
	if name == "" {
		// the cursor right after a call's "(": document the function
		name = enclosingCall(code[:off])
	}
	qual := ""
	if start := end - len(name); start > 0 && code[start-1] == '.' {
		qual = identBefore(code, start-1)
	}
	text, ok := e.doc(qual, name)
	if !ok {
		return engine.Inspection{Found: false, Data: engine.MIMEBundle{}}
	}
	return engine.Inspection{Found: true, Data: engine.MIMEBundle{"text/plain": text}}
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
		return fmt.Sprintf("%s %s\n\n%s", name, v.Type(), s), true
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
