package syntax

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a translation error at the user's line and column (1-based;
// the column counts Unicode code points).
type Error struct {
	Line, Col int
	Msg       string
	// Incomplete is set when more input could make the text valid (an
	// unclosed budget block, call or raw string): a REPL reads another line.
	Incomplete bool
}

// Error formats as "line 3:14: msg", the prefix the engine uses for
// positions in a cell.
func (e *Error) Error() string { return fmt.Sprintf("line %d:%d: %s", e.Line, e.Col, e.Msg) }

// Position returns the user's line and column (dsl/interp's Positioned).
func (e *Error) Position() (line, col int) { return e.Line, e.Col }

// Program is a translated cell.
type Program struct {
	// Go is the cell as Go for the interpreter.
	Go string
	// Lines maps positions in Go back to the cell.
	Lines LineMap
	// Blocks are the budget blocks in source order (a %%budget cell is one
	// block with Cell set).
	Blocks []Block
	// Calls are the private calls outside any budget block.
	Calls []Call
	// Magics are the line and cell magics in source order.
	Magics []Magic
	// Keywords holds, for each private call (in Calls or in a block), every
	// keyword the call gives, mapped to its value when that is a literal (a
	// string, an int, a float64 or a bool; numbers possibly signed) and to
	// nil when it is an expression.
	Keywords map[CallPos]map[string]any
}

// Block is one budget block.
type Block struct {
	Eps, Delta float64 // the declared cap
	Line, Col  int     // position of `budget` (or of %%budget)
	Cell       bool    // a %%budget cell
	// Repeated is set when the block is inside braces (a loop, branch or
	// function body): it may run any number of times, so its calls are
	// not static.
	Repeated bool
	Calls    []Call
}

// Call is one call of a private DSL function.
type Call struct {
	Func string
	// Dataset is the dataset name when statically known, else "".
	Dataset string
	// DatasetVar is set when Dataset is "" and the dataset argument is a
	// plain identifier that nothing in the cell before the call can have
	// rebound: its value comes from an earlier cell, and the runtime's
	// pre-check may resolve it to the handle it holds when the cell
	// starts (interp.Cell.Lookup). It is "" when the identifier is
	// assigned, declared, has its address taken or is passed to anything
	// but a DSL function before the call, or when a function that is not
	// a DSL function or a Go builtin is called before it (it could assign
	// the variable): the call is then left to the run-time charge.
	DatasetVar string
	Eps, Delta float64
	// Static: Eps and Delta are literals and the call runs exactly once per
	// execution of the cell. Otherwise Eps and Delta are the literals that
	// could be read (0 if none) and the run-time charge decides.
	Static    bool
	Line, Col int
}

// CallPos is the position of a private call in its cell.
type CallPos struct{ Line, Col int }

// Magic is a line magic (%ledger ...) or the %%budget cell magic.
type Magic struct {
	Name string // "ledger", "budget", "datasets", "help"; "%budget" for the cell magic
	Args string // the rest of the line, trimmed
	Line int
}

// LineMagics lists the line magics with their one-line description.
var LineMagics = map[string]string{
	"ledger":   "%ledger [DATASET]: the ledger records (all datasets, or one)",
	"budget":   "%budget [DATASET]: spent and remaining budget per dataset, and the open budget block",
	"datasets": "%datasets: the registered datasets and their public schema",
	"help":     "%help [NAME]: help on a DSL function, or the list of functions and magics",
}

// HelpTopics are the names %help accepts besides the DSL functions.
var HelpTopics = []string{"budget", "magics", "keywords"}

// Translate translates one cell (or script). cellID names the cell in the
// positions passed to __pn_budget_begin ("cellID:line:col", e.g.
// "script.pn:3:1"); with an empty cellID they are "line:col".
// Program.Lines.Map has the signature of dsl/interp's Program.Pos.
func Translate(cellID, src string) (*Program, error) {
	t := &translator{cellID: cellID, src: src, prog: &Program{}, dsVars: map[string]string{}}
	if err := t.run(); err != nil {
		return nil, err
	}
	return t.prog, nil
}

type tok struct {
	t        token.Token
	lit      string
	off, end int
}

type edit struct {
	off, end int
	repl     string
}

type braceKind int

const (
	braceOther braceKind = iota
	braceFunc
	braceBudget
)

type bracket struct {
	t      token.Token // LPAREN, LBRACK or LBRACE
	kind   braceKind   // for LBRACE
	callee string      // for LPAREN: the DSL function called, or "" / "?" (some other call)
	off    int
}

type magicLine struct {
	off, end int // the line without its newline
	name     string
	args     string
	cell     bool
}

type translator struct {
	cellID string
	src    string
	lines  []int // offsets of line starts
	toks   []tok
	edits  []edit
	prog   *Program
	dsVars map[string]string // variable -> dataset name, from x := dataset("name")

	magics    []magicLine
	cellBlock bool
	stack     []bracket
	block     *Block // the open block
	blockOff  int
	// blockWhere is the open block's position as __pn_budget_begin gets
	// it; it names the block to the runtime.
	blockWhere string
	blockIdx   int // index in stack of the open block's brace, -1 for a %%budget cell
}

func (t *translator) run() error {
	for i := 0; i < len(t.src); i++ {
		if i == 0 || t.src[i-1] == '\n' {
			t.lines = append(t.lines, i)
		}
	}
	if len(t.src) == 0 || t.src[len(t.src)-1] == '\n' {
		t.lines = append(t.lines, len(t.src))
	}
	blanked, err := t.findMagics()
	if err != nil {
		return err
	}
	if err := t.scan(blanked); err != nil {
		return err
	}
	if err := t.walk(); err != nil {
		return err
	}
	t.emit()
	return nil
}

// pos converts a byte offset of src into the user's line and code-point
// column.
func (t *translator) pos(off int) (int, int) {
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	if off > len(t.src) {
		off = len(t.src)
	}
	return i + 1, utf8.RuneCountInString(t.src[t.lines[i]:off]) + 1
}

func (t *translator) errAt(off int, format string, args ...any) *Error {
	l, c := t.pos(off)
	return &Error{Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
}

// findMagics finds the magic lines: a line whose first token is % at the
// line's first non-blank character. Scanning stops at each magic line and
// resumes after it, so strings and comments before a line are always read
// correctly and a magic's text never confuses the scanner; the scan stays
// linear. It returns the cell with magic lines blanked.
func (t *translator) findMagics() (string, error) {
	b := []byte(t.src)
	from := 0
	for from < len(b) {
		var s scanner.Scanner
		fset := token.NewFileSet()
		file := fset.AddFile("", fset.Base(), len(b)-from)
		s.Init(file, b[from:], func(token.Position, string) {}, 0)
		found := -1
		for {
			p, tk, _ := s.Scan()
			if tk == token.EOF {
				break
			}
			if tk != token.REM && tk != token.REM_ASSIGN {
				continue
			}
			off := file.Offset(p) + from
			ls := t.lineStart(off)
			if strings.TrimLeft(string(b[ls:off]), " \t") == "" {
				found = ls
				break
			}
		}
		if found < 0 {
			break
		}
		end := strings.IndexByte(t.src[found:], '\n')
		if end < 0 {
			end = len(t.src)
		} else {
			end += found
		}
		line := strings.TrimRight(strings.TrimSpace(t.src[found:end]), "\r")
		m := magicLine{off: found, end: end}
		if strings.HasPrefix(line, "%%") {
			m.cell = true
			line = line[2:]
		} else {
			line = line[1:]
		}
		name, args, _ := strings.Cut(line, " ")
		if i := strings.IndexAny(name, "\t"); i >= 0 {
			name, args = name[:i], name[i+1:]+" "+args
		}
		m.name, m.args = name, strings.TrimSpace(args)
		t.magics = append(t.magics, m)
		for i := found; i < end; i++ {
			if b[i] != '\r' {
				b[i] = ' '
			}
		}
		from = end
	}
	sort.Slice(t.magics, func(i, j int) bool { return t.magics[i].off < t.magics[j].off })
	for _, m := range t.magics {
		if err := t.checkMagic(m, b); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

func (t *translator) lineStart(off int) int {
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	if i < 0 {
		return 0
	}
	return t.lines[i]
}

func (t *translator) checkMagic(m magicLine, blanked []byte) error {
	col := strings.IndexByte(t.src[m.off:m.end], '%') + m.off
	if m.cell {
		if m.name != "budget" {
			return t.errAt(col, "unknown cell magic %%%%%s; the only cell magic is %%%%budget eps=<number> delta=<number>", m.name)
		}
		if strings.TrimSpace(string(blanked[:m.off])) != "" {
			return t.errAt(col, "%%%%budget must be the first line of the cell")
		}
		eps, delta, err := parseBudgetParams(m.args)
		if err != nil {
			return t.errAt(col, "malformed %%%%budget: %s; expected \"%%%%budget eps=<number> delta=<number>\"", err)
		}
		l, c := t.pos(col)
		t.cellBlock = true
		t.prog.Blocks = append(t.prog.Blocks, Block{Eps: eps, Delta: delta, Line: l, Col: c, Cell: true})
		t.block = &t.prog.Blocks[len(t.prog.Blocks)-1]
		t.blockIdx = -1
		t.blockOff = col
		t.edits = append(t.edits, edit{m.off, m.end, t.beginCall(eps, delta, col)})
		l, _ = t.pos(m.off)
		t.prog.Magics = append(t.prog.Magics, Magic{Name: "%budget", Args: m.args, Line: l})
		return nil
	}
	if _, ok := LineMagics[m.name]; !ok {
		if m.name == "" {
			return t.errAt(col, "a magic needs a name: %s", magicList())
		}
		return t.errAt(col, "unknown magic %%%s; magics are %s", m.name, magicList())
	}
	if m.name == "help" && m.args != "" {
		if _, ok := Lookup(m.args); !ok && !contains(HelpTopics, m.args) {
			return t.errAt(col, "no help for %q; %%help takes a DSL function (%s) or a topic (%s)",
				m.args, strings.Join(Names(), ", "), strings.Join(HelpTopics, ", "))
		}
	}
	if m.name == "datasets" && m.args != "" {
		return t.errAt(col, "%%datasets takes no arguments")
	}
	l, _ := t.pos(m.off)
	t.prog.Magics = append(t.prog.Magics, Magic{Name: m.name, Args: m.args, Line: l})
	t.edits = append(t.edits, edit{m.off, m.end,
		"__pn_magic(" + strconv.Quote(m.name) + ", " + strconv.Quote(m.args) + ")"})
	return nil
}

func magicList() string {
	names := make([]string, 0, len(LineMagics))
	for n := range LineMagics {
		names = append(names, "%"+n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ") + " (and the cell magic %%budget)"
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (t *translator) beginCall(eps, delta float64, off int) string {
	l, c := t.pos(off)
	where := fmt.Sprintf("%d:%d", l, c)
	if t.cellID != "" {
		where = t.cellID + ":" + where
	}
	t.blockWhere = where
	return fmt.Sprintf("__pn_budget_begin(%s, %s, %s);", fmtFloat(eps), fmtFloat(delta), strconv.Quote(where))
}

func fmtFloat(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// parseBudgetParams parses "eps=E, delta=D" (comma optional, delta
// optional, either order).
func parseBudgetParams(s string) (eps, delta float64, err error) {
	var sc scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(s))
	var scanErr error
	sc.Init(file, []byte(s), func(_ token.Position, msg string) {
		if scanErr == nil {
			scanErr = fmt.Errorf("%s", msg)
		}
	}, 0)
	var toks []tok
	for {
		p, tk, lit := sc.Scan()
		if tk == token.EOF {
			break
		}
		if tk == token.SEMICOLON && lit == "\n" {
			continue
		}
		toks = append(toks, tok{t: tk, lit: lit, off: file.Offset(p)})
	}
	if scanErr != nil {
		return 0, 0, scanErr
	}
	eps, delta, n, err := parseParamToks(toks)
	if err != nil {
		return 0, 0, err
	}
	if n != len(toks) {
		return 0, 0, fmt.Errorf("unexpected %s", tokText(toks[n]))
	}
	return eps, delta, nil
}

// parseParamToks parses `eps = E [,] delta = D` from the start of toks and
// returns how many tokens it used.
func parseParamToks(toks []tok) (eps, delta float64, n int, err error) {
	seen := map[string]bool{}
	i := 0
	for i < len(toks) && toks[i].t == token.IDENT {
		name := toks[i].lit
		if name != "eps" && name != "delta" {
			return 0, 0, 0, fmt.Errorf("unknown parameter %q (a budget takes eps and delta)", name)
		}
		if seen[name] {
			return 0, 0, 0, fmt.Errorf("%s given twice", name)
		}
		seen[name] = true
		if i+1 >= len(toks) || toks[i+1].t != token.ASSIGN {
			return 0, 0, 0, fmt.Errorf("expected = after %s", name)
		}
		v, used, ok := literalNumber(toks[i+2:])
		if !ok {
			return 0, 0, 0, fmt.Errorf("%s must be a number literal", name)
		}
		i += 2 + used
		if name == "eps" {
			eps = v
		} else {
			delta = v
		}
		if i < len(toks) && toks[i].t == token.COMMA {
			i++
		}
	}
	if !seen["eps"] {
		return 0, 0, 0, fmt.Errorf("missing eps")
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, 0, 0, fmt.Errorf("eps must be a finite number > 0, not %v", eps)
	}
	if !(delta >= 0 && delta < 1) {
		return 0, 0, 0, fmt.Errorf("delta must be in [0, 1), not %v", delta)
	}
	return eps, delta, i, nil
}

// literalNumber reads an optionally signed number literal from the start
// of toks.
func literalNumber(toks []tok) (v float64, used int, ok bool) {
	sign := 1.0
	if len(toks) > 0 && (toks[0].t == token.SUB || toks[0].t == token.ADD) {
		if toks[0].t == token.SUB {
			sign = -1
		}
		used = 1
	}
	if used >= len(toks) || (toks[used].t != token.INT && toks[used].t != token.FLOAT) {
		return 0, 0, false
	}
	// strconv is the fast path; go/constant reads every Go literal form
	// (1_000.5, 0x1p-3, 0o17).
	if f, err := strconv.ParseFloat(toks[used].lit, 64); err == nil {
		return sign * f, used + 1, true
	}
	c := constant.MakeFromLiteral(toks[used].lit, toks[used].t, 0)
	if c.Kind() == constant.Unknown {
		return 0, 0, false
	}
	f, _ := constant.Float64Val(c)
	return sign * f, used + 1, true
}

// literalValue reads a keyword value that is a single literal: "x", 3,
// -2.5, true. Ints beyond 2³¹ are left to the runtime.
func literalValue(toks []tok) (any, bool) {
	signed, neg := false, false
	if len(toks) == 2 && (toks[0].t == token.SUB || toks[0].t == token.ADD) {
		signed, neg, toks = true, toks[0].t == token.SUB, toks[1:]
	}
	if len(toks) != 1 {
		return nil, false
	}
	k := toks[0]
	switch k.t {
	case token.STRING:
		if signed {
			return nil, false
		}
		v, err := strconv.Unquote(k.lit)
		return v, err == nil
	case token.INT:
		v, err := strconv.ParseInt(k.lit, 0, 64)
		if err != nil || v > 1<<31 {
			return nil, false
		}
		if neg {
			v = -v
		}
		return int(v), true
	case token.FLOAT:
		v, err := strconv.ParseFloat(k.lit, 64)
		if err != nil {
			return nil, false
		}
		if neg {
			v = -v
		}
		return v, true
	case token.IDENT:
		if !signed && (k.lit == "true" || k.lit == "false") {
			return k.lit == "true", true
		}
	}
	return nil, false
}

func tokText(k tok) string {
	if k.lit != "" && k.t != token.SEMICOLON {
		return strconv.Quote(k.lit)
	}
	if k.t == token.SEMICOLON {
		return "end of line"
	}
	return strconv.Quote(k.t.String())
}

// scan tokenizes the blanked cell.
func (t *translator) scan(src string) error {
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var first *Error
	s.Init(file, []byte(src), func(p token.Position, msg string) {
		if first == nil {
			first = t.errAt(p.Offset, "%s", msg)
			if strings.Contains(msg, "not terminated") {
				first.Incomplete = strings.Contains(msg, "raw string") || strings.Contains(msg, "comment")
			}
		}
	}, 0)
	for {
		p, tk, lit := s.Scan()
		if tk == token.EOF {
			break
		}
		off := file.Offset(p)
		k := tok{t: tk, lit: lit, off: off}
		switch {
		case tk == token.SEMICOLON && lit == "\n":
			k.end = off
		case tk == token.STRING && strings.HasPrefix(lit, "`"):
			if e := strings.IndexByte(src[off+1:], '`'); e >= 0 {
				k.end = off + 1 + e + 1
			} else {
				k.end = len(src)
			}
		case lit != "":
			k.end = off + len(lit)
		default:
			k.end = off + len(tk.String())
		}
		t.toks = append(t.toks, k)
	}
	if first != nil {
		return first
	}
	return nil
}

// at returns the i-th token or an EOF token.
func (t *translator) at(i int) tok {
	if i >= 0 && i < len(t.toks) {
		return t.toks[i]
	}
	return tok{t: token.EOF, off: len(t.src), end: len(t.src)}
}

// stmtStart reports whether token i starts a statement.
func (t *translator) stmtStart(i int) bool {
	if i == 0 {
		return true
	}
	switch t.at(i - 1).t {
	case token.SEMICOLON, token.LBRACE, token.RBRACE, token.COLON:
		return true
	}
	return false
}

// funcBraceAbove reports whether a function body brace is open above
// stack index i.
func (t *translator) funcBraceAbove(i int) bool {
	for j := i + 1; j < len(t.stack); j++ {
		if t.stack[j].t == token.LBRACE && t.stack[j].kind == braceFunc {
			return true
		}
	}
	return false
}

func (t *translator) braceDepth() int {
	n := 0
	for _, b := range t.stack {
		if b.t == token.LBRACE {
			n++
		}
	}
	return n
}

func (t *translator) walk() error {
	pendingFunc := -1 // paren depth at which a func keyword waits for its body brace
	magic := 0
	for i := 0; i < len(t.toks); i++ {
		k := t.toks[i]
		for magic < len(t.magics) && t.magics[magic].off < k.off {
			if err := t.magicAt(t.magics[magic], t.at(i-1)); err != nil {
				return err
			}
			magic++
		}
		switch k.t {
		case token.IDENT:
			if strings.HasPrefix(k.lit, "__pn") {
				return t.errAt(k.off, "%s: names starting with __pn are reserved for privnotes", k.lit)
			}
			if k.lit == "budget" && t.stmtStart(i) && t.budgetAhead(i) {
				n, err := t.budgetHeader(i)
				if err != nil {
					return err
				}
				i = n // the LBRACE
				continue
			}
			if f, ok := Lookup(k.lit); ok {
				if err := t.dslName(i, f); err != nil {
					return err
				}
			} else if next := t.at(i + 1); (next.t == token.DEFINE || next.t == token.ASSIGN) && t.parenDepth() == 0 {
				t.trackDatasetVar(i)
			}
			if t.at(i+1).t == token.ASSIGN && len(t.stack) > 0 {
				top := t.stack[len(t.stack)-1]
				prev := t.at(i - 1).t
				if top.t == token.LPAREN && (prev == token.LPAREN || prev == token.COMMA) && top.callee == "call" {
					return t.errAt(k.off, "%s=...: keyword arguments are only for DSL functions (%s)", k.lit, strings.Join(Names(), ", "))
				}
			}
		case token.FUNC:
			pendingFunc = t.parenDepth()
		case token.RETURN, token.GOTO:
			if t.block != nil && !t.funcBraceAbove(t.blockIdx) {
				return t.errAt(k.off, "%s inside a budget block would skip the block's end; move the code out of the block or into a function", k.t)
			}
		case token.LPAREN:
			// callee: a DSL function's name, "call" for any other call,
			// "" for grouping parentheses and type assertions.
			callee := ""
			switch prev := t.at(i - 1); prev.t {
			case token.IDENT, token.RPAREN, token.RBRACK, token.FUNC, token.RBRACE:
				callee = "call"
				if _, ok := Lookup(prev.lit); ok && prev.t == token.IDENT && t.at(i-2).t != token.PERIOD {
					callee = prev.lit
				}
			}
			t.stack = append(t.stack, bracket{t: token.LPAREN, callee: callee, off: k.off})
		case token.LBRACK:
			t.stack = append(t.stack, bracket{t: token.LBRACK, off: k.off})
		case token.LBRACE:
			kind := braceOther
			if pendingFunc >= 0 && pendingFunc == t.parenDepth() {
				if p := t.at(i - 1).t; p != token.STRUCT && p != token.INTERFACE {
					kind = braceFunc
					pendingFunc = -1
				}
			}
			t.stack = append(t.stack, bracket{t: token.LBRACE, kind: kind, off: k.off})
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if len(t.stack) == 0 {
				return t.errAt(k.off, "unexpected %s", k.t)
			}
			top := t.stack[len(t.stack)-1]
			if want := closer(top.t); want != k.t {
				return t.errAt(k.off, "unexpected %s: the %s at %s is not closed", k.t, top.t, t.posString(top.off))
			}
			t.stack = t.stack[:len(t.stack)-1]
			if top.t == token.LBRACE && top.kind == braceBudget {
				t.closeBlock(i)
			}
		}
	}
	for ; magic < len(t.magics); magic++ {
		if err := t.magicAt(t.magics[magic], t.at(len(t.toks)-1)); err != nil {
			return err
		}
	}
	if len(t.stack) > 0 {
		top := t.stack[len(t.stack)-1]
		for _, b := range t.stack {
			if b.kind == braceBudget && b.t == token.LBRACE {
				e := t.errAt(b.off, "budget block is not closed: missing }")
				e.Incomplete = true
				return e
			}
		}
		e := t.errAt(top.off, "%s is not closed", top.t)
		e.Incomplete = true
		return e
	}
	from, to, ok := t.lastStmt()
	if !ok {
		if t.cellBlock {
			t.edits = append(t.edits, edit{len(t.src), len(t.src), "\n__pn_budget_end()"})
		}
		return nil
	}
	text := t.rewritten(t.toks[from].off, t.toks[to].end)
	if err := t.checkEnd(text, to); err != nil {
		return err
	}
	if t.cellBlock {
		t.endCellBlock(text, from, to)
	}
	return nil
}

// lastStmt returns the token range [from, to] of the cell's last
// top-level statement, when no magic line follows it.
func (t *translator) lastStmt() (from, to int, ok bool) {
	to = len(t.toks) - 1
	for to >= 0 && t.toks[to].t == token.SEMICOLON {
		to--
	}
	if to < 0 {
		return 0, 0, false
	}
	if n := len(t.magics); n > 0 && t.magics[n-1].off > t.toks[to].off {
		return 0, 0, false // the cell ends with a magic, a statement of its own
	}
	depth := 0
	for i, k := range t.toks[:to] {
		switch k.t {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
		case token.SEMICOLON:
			if depth == 0 {
				from = i + 1
			}
		}
	}
	return from, to, true
}

// rewritten returns src[from:to] with the edits inside it applied.
func (t *translator) rewritten(from, to int) string {
	var b strings.Builder
	in := from
	for _, e := range t.sortedEdits() {
		if e.off < from || e.end > to || (e.off == to && e.end == to) {
			continue
		}
		b.WriteString(t.src[in:e.off])
		b.WriteString(e.repl)
		in = e.end
	}
	b.WriteString(t.src[in:to])
	return b.String()
}

// stmtPrefix wraps a statement for go/parser as dsl/interp wraps a chunk
// of statements.
const stmtPrefix = "package p;func _(){\n"

// checkEnd reports a last statement that the end of the cell cuts short
// (`y := 1 +`, `x.`, `if x`). Go would report it at the interpreter's
// wrapper, a line after the cell's end; it is reported here after the
// statement's last token. Other syntax errors are left to the engine,
// which sees the whole cell (text may be a declaration, which does not
// parse as a statement).
func (t *translator) checkEnd(text string, to int) error {
	_, err := parser.ParseFile(token.NewFileSet(), "", stmtPrefix+text+"\n}", parser.SkipObjectResolution)
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 || list[0].Pos.Offset < len(stmtPrefix)+len(text) {
		return nil
	}
	e := t.errAt(t.toks[to].end, "unexpected end of input after %s: the statement is not complete", tokText(t.toks[to]))
	e.Incomplete = true
	return e
}

// endCellBlock closes a %%budget cell after its last statement. When that
// statement is an expression with a value, the engine must still see it
// as the cell's final expression (it displays that value), so the value
// is computed inside the block and shown after the end:
//
//	__pn_last := EXPR
//	__pn_budget_end(); __pn_last
//
// The expression is not moved out of the block: it may call a private
// function, which must run under the block's cap. A call is rewritten
// only when it certainly has one value (a DSL function with a result):
// any other call may have none, or several, and stays where it is (its
// value is then not displayed; the cell can assign it, or show it).
func (t *translator) endCellBlock(text string, from, to int) {
	x, err := parser.ParseExpr(text)
	if err != nil || !singleValue(x) {
		t.edits = append(t.edits, edit{len(t.src), len(t.src), "\n__pn_budget_end()"})
		return
	}
	t.edits = append(t.edits,
		edit{t.toks[from].off, t.toks[from].off, lastName + " := "},
		edit{len(t.src), len(t.src), "\n__pn_budget_end(); " + lastName})
}

// lastName holds the final expression's value of a %%budget cell.
const lastName = "__pn_last"

// singleValue reports whether the expression x, as an expression
// statement, certainly has exactly one value.
func singleValue(x ast.Expr) bool {
	x = ast.Unparen(x)
	call, ok := x.(*ast.CallExpr)
	if !ok {
		switch x.(type) {
		case *ast.BadExpr, *ast.ArrayType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType, *ast.MapType, *ast.StructType, *ast.Ellipsis:
			return false // not a value (a type); the engine reports it
		}
		return true
	}
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	f, ok := Lookup(id.Name)
	return ok && f.Result != ""
}

func (t *translator) posString(off int) string {
	l, c := t.pos(off)
	return fmt.Sprintf("%d:%d", l, c)
}

func closer(open token.Token) token.Token {
	switch open {
	case token.LPAREN:
		return token.RPAREN
	case token.LBRACK:
		return token.RBRACK
	}
	return token.RBRACE
}

func (t *translator) parenDepth() int {
	n := 0
	for _, b := range t.stack {
		if b.t != token.LBRACE {
			n++
		}
	}
	return n
}

// magicAt checks that a line magic sits at statement level; prev is the
// last token before it.
func (t *translator) magicAt(m magicLine, prev tok) error {
	if m.cell {
		return nil
	}
	col := strings.IndexByte(t.src[m.off:m.end], '%') + m.off
	if len(t.stack) > 0 && t.stack[len(t.stack)-1].t != token.LBRACE {
		return t.errAt(col, "a magic must be on its own line between statements, not inside an expression")
	}
	switch prev.t {
	case token.EOF, token.SEMICOLON, token.LBRACE, token.COLON:
	default:
		// The line before ends in an operator: Go would continue the
		// statement with the magic's call.
		return t.errAt(col, "a magic must be on its own line between statements: the statement before it is not complete (it ends with %s)", tokText(prev))
	}
	return nil
}

// budgetAhead reports whether `budget` at token i, at the start of a
// statement, starts a block header: followed by an identifier (budget eps
// is never Go), or by { on the same line or the next (budget { and a
// `budget` statement followed by a block are never meant as Go, so they
// are reported as a header that lacks its parameters rather than as an
// undefined name).
func (t *translator) budgetAhead(i int) bool {
	switch next := t.at(i + 1); {
	case next.t == token.IDENT, next.t == token.LBRACE:
		return true
	case next.t == token.SEMICOLON && next.lit == "\n":
		return t.at(i+2).t == token.LBRACE
	}
	return false
}

// budgetHeader parses `budget eps=E, delta=D {` starting at token i and
// returns the index of the brace.
func (t *translator) budgetHeader(i int) (int, error) {
	start := t.toks[i]
	malformed := func(why string) error {
		return t.errAt(start.off, "malformed budget block: %s; expected \"budget eps=<number>, delta=<number> {\"", why)
	}
	var params []tok
	j := i + 1
	for ; j < len(t.toks); j++ {
		if t.toks[j].t == token.LBRACE || t.toks[j].t == token.SEMICOLON {
			break
		}
		params = append(params, t.toks[j])
	}
	eps, delta, n, err := parseParamToks(params)
	if err != nil {
		return 0, malformed(err.Error())
	}
	if n != len(params) {
		return 0, malformed("unexpected " + tokText(params[n]))
	}
	if t.at(j).t != token.LBRACE {
		return 0, malformed("missing { on the same line")
	}
	if t.block != nil {
		if t.block.Cell {
			return 0, t.errAt(start.off, "budget blocks cannot be nested: this cell is already a %%%%budget block")
		}
		return 0, t.errAt(start.off, "budget blocks cannot be nested: the block at %d:%d is still open", t.block.Line, t.block.Col)
	}
	brace := t.toks[j]
	l, c := t.pos(start.off)
	// the bracket's offset is the block's start, for error messages
	t.prog.Blocks = append(t.prog.Blocks, Block{Eps: eps, Delta: delta, Line: l, Col: c, Repeated: t.braceDepth() > 0})
	t.block = &t.prog.Blocks[len(t.prog.Blocks)-1]
	t.stack = append(t.stack, bracket{t: token.LBRACE, kind: braceBudget, off: start.off})
	t.blockIdx = len(t.stack) - 1
	t.blockOff = start.off
	t.edits = append(t.edits, edit{start.off, brace.end, t.beginCall(eps, delta, start.off)})
	return j, nil
}

func (t *translator) closeBlock(i int) {
	k := t.toks[i]
	repl := "__pn_budget_end()"
	if ls := t.lineStart(k.off); strings.TrimSpace(t.src[ls:k.off]) != "" {
		repl = "; " + repl
	}
	t.edits = append(t.edits, edit{k.off, k.end, repl})
	t.block = nil
}

// trackDatasetVar records `x := dataset("name")` (and forgets x on any
// other assignment).
func (t *translator) trackDatasetVar(i int) {
	name := t.toks[i].lit
	if t.at(i-1).t == token.COMMA || t.at(i+2).lit != "dataset" || t.at(i+3).t != token.LPAREN ||
		t.at(i+4).t != token.STRING || t.at(i+5).t != token.RPAREN {
		delete(t.dsVars, name)
		return
	}
	if s, err := strconv.Unquote(t.at(i + 4).lit); err == nil {
		t.dsVars[name] = s
	}
}

// dslName handles an identifier that names a DSL function.
func (t *translator) dslName(i int, f *Func) error {
	k := t.toks[i]
	prev, next := t.at(i-1), t.at(i+1)
	if prev.t == token.PERIOD {
		return nil // a field or method of some value
	}
	redefine := func() error {
		return t.errAt(k.off, "cannot redefine %s: it is a privnotes DSL function; choose another name", k.lit)
	}
	switch prev.t {
	case token.FUNC, token.VAR, token.CONST, token.TYPE:
		return redefine()
	}
	switch next.t {
	case token.DEFINE, token.ASSIGN:
		return redefine()
	case token.COMMA:
		// a, private_pca := ... at statement level
		if t.stmtStart(i) || prev.t == token.COMMA {
			for j := i + 1; j < len(t.toks) && t.toks[j].t != token.SEMICOLON; j++ {
				if t.toks[j].t == token.DEFINE || t.toks[j].t == token.ASSIGN {
					return redefine()
				}
				if t.toks[j].t != token.IDENT && t.toks[j].t != token.COMMA {
					break
				}
			}
		}
	case token.LPAREN:
		return t.call(i, f)
	}
	return nil
}

type arg struct {
	from, to int // token range [from, to)
	kw       string
}

// call checks and rewrites the call of DSL function f whose name is token i.
func (t *translator) call(i int, f *Func) error {
	name := t.toks[i]
	// Split the arguments at top-level commas.
	var args []arg
	depth := 0
	start := i + 2
	j := i + 1
scan:
	for ; ; j++ {
		k := t.at(j)
		if k.t == token.EOF {
			e := t.errAt(t.toks[i+1].off, "( of the %s call is not closed", f.Name)
			e.Incomplete = true
			return e
		}
		switch k.t {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
			continue
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
			if depth > 0 {
				continue
			}
		case token.COMMA:
			if depth != 1 {
				continue
			}
		default:
			continue
		}
		// end of an argument
		from, to := start, j
		for from < to && t.toks[from].t == token.SEMICOLON {
			from++
		}
		for to > from && t.toks[to-1].t == token.SEMICOLON {
			to--
		}
		if from == to {
			if k.t == token.COMMA {
				return t.errAt(k.off, "missing argument before , in the %s call", f.Name)
			}
		} else {
			a := arg{from: from, to: to}
			if t.toks[from].t == token.IDENT && from+1 < to && t.toks[from+1].t == token.ASSIGN {
				a.kw = t.toks[from].lit
			}
			args = append(args, a)
		}
		start = j + 1
		if depth == 0 {
			break scan
		}
	}
	// Check the arguments.
	seen := map[string]bool{}
	npos := 0
	values := map[string][]tok{}
	for _, a := range args {
		first := t.toks[a.from]
		last := t.toks[a.to-1]
		if last.t == token.ELLIPSIS {
			return t.errAt(last.off, "%s does not take a spread argument (...)", f.Name)
		}
		if a.kw == "" {
			if len(seen) > 0 {
				return t.errAt(first.off, "positional argument after keyword arguments in the %s call; write %s", f.Name, f.Signature())
			}
			npos++
			if npos > len(f.Positional) {
				return t.errAt(first.off, "too many positional arguments for %s; it takes %s", f.Name, positionalDesc(f))
			}
			continue
		}
		p, ok := f.Keyword(a.kw)
		if !ok {
			if contains(paramNames(f.Positional), a.kw) {
				return t.errAt(first.off, "%s of %s is positional: write it without %s=", a.kw, f.Name, a.kw)
			}
			if len(f.Keywords) == 0 {
				return t.errAt(first.off, "unknown keyword %q for %s; it takes no keywords", a.kw, f.Name)
			}
			return t.errAt(first.off, "unknown keyword %q for %s; valid keywords: %s", a.kw, f.Name, strings.Join(f.KeywordNames(), ", "))
		}
		if seen[a.kw] {
			return t.errAt(first.off, "keyword %s given twice in the %s call", a.kw, f.Name)
		}
		seen[a.kw] = true
		val := t.toks[a.from+2 : a.to]
		if len(val) == 0 {
			return t.errAt(t.toks[a.from+1].off, "missing value after %s=", a.kw)
		}
		if err := t.checkLiteral(f, p, val); err != nil {
			return err
		}
		values[a.kw] = val
	}
	if npos < len(f.Positional) {
		return t.errAt(name.off, "%s needs %s", f.Name, positionalDesc(f))
	}
	for _, p := range f.Keywords {
		if p.Required && !seen[p.Name] {
			if f.Private && p.Name == "delta" {
				return t.errAt(name.off, "%s needs delta > 0, e.g. delta=1e-6: its noise is Gaussian, which has no guarantee at δ = 0", f.Name)
			}
			return t.errAt(name.off, "%s needs %s=<%s>: %s", f.Name, p.Name, p.Type, p.Doc)
		}
	}
	// Rewrite the keywords.
	for _, a := range args {
		if a.kw == "" {
			continue
		}
		kt, eq, last := t.toks[a.from], t.toks[a.from+1], t.toks[a.to-1]
		sep := ""
		if eq.end < len(t.src) && t.src[eq.end] != ' ' && t.src[eq.end] != '\t' && t.src[eq.end] != '\n' {
			sep = " "
		}
		t.edits = append(t.edits,
			edit{kt.off, kt.end, "__pn_kw(" + strconv.Quote(a.kw) + ","},
			edit{eq.off, eq.end, sep},
			edit{last.end, last.end, ")"})
	}
	if f.Private {
		t.recordCall(i, f, args, values)
		t.tagBlock(j)
	}
	return nil
}

// tagBlock passes the open budget block to the private call whose closing
// parenthesis is token j, as a last argument __pn_block("where"). The
// runtime attributes the call to that block wherever and whenever it runs:
// a deferred call runs after the block's end, a goroutine's call may run
// after it, and both must still count against the block's cap.
func (t *translator) tagBlock(j int) {
	if t.block == nil {
		return
	}
	sep := ", "
	prev := j - 1
	for prev > 0 && t.toks[prev].t == token.SEMICOLON {
		prev--
	}
	if k := t.toks[prev].t; k == token.COMMA || k == token.LPAREN { // a trailing comma, or no arguments
		sep = ""
	}
	t.edits = append(t.edits, edit{t.toks[j].off, t.toks[j].off, sep + BlockFunc + "(" + strconv.Quote(t.blockWhere) + ")"})
}

// BlockFunc is the runtime function that names a call's budget block.
const BlockFunc = "__pn_block"

func positionalDesc(f *Func) string {
	if len(f.Positional) == 0 {
		return "no positional arguments (keywords only: " + f.Signature() + ")"
	}
	return fmt.Sprintf("%d positional argument(s) (%s): %s", len(f.Positional), strings.Join(paramNames(f.Positional), ", "), f.Signature())
}

func paramNames(ps []Param) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// checkLiteral checks a keyword value that is a single literal against
// the parameter's type and choices; expressions are left to the runtime.
func (t *translator) checkLiteral(f *Func, p *Param, val []tok) error {
	if v, used, ok := literalNumber(val); ok && used == len(val) {
		switch p.Type {
		case "string", "[]string", "bool":
			return t.errAt(val[0].off, "%s=%s: %s of %s takes a %s", p.Name, val[len(val)-1].lit, p.Name, f.Name, p.Type)
		case "int":
			if val[len(val)-1].t == token.FLOAT {
				return t.errAt(val[0].off, "%s=%s: %s of %s takes an int", p.Name, val[len(val)-1].lit, p.Name, f.Name)
			}
		}
		if f.Private && p.Name == "eps" && (!(v > 0) || math.IsInf(v, 0)) {
			return t.errAt(val[0].off, "eps=%v: eps must be a finite number > 0", v)
		}
		if f.Private && p.Name == "delta" && !(v >= 0 && v < 1) {
			return t.errAt(val[0].off, "delta=%v: delta must be in [0, 1)", v)
		}
		if f.Private && p.Name == "delta" && p.Required && v == 0 {
			return t.errAt(val[0].off, "delta=0: delta must be > 0 for %s, e.g. delta=1e-6: its noise is Gaussian, which has no guarantee at δ = 0", f.Name)
		}
		return nil
	}
	if len(val) == 1 && val[0].t == token.STRING {
		switch p.Type {
		case "string", "any":
		default:
			return t.errAt(val[0].off, "%s=%s: %s of %s takes a %s, not a string", p.Name, val[0].lit, p.Name, f.Name, p.Type)
		}
		s, err := strconv.Unquote(val[0].lit)
		if err == nil && len(p.Choices) > 0 && !contains(p.Choices, s) {
			var cs []string
			for _, c := range p.Choices {
				if c != "" {
					cs = append(cs, strconv.Quote(c))
				}
			}
			return t.errAt(val[0].off, "%s=%s is not a valid %s for %s; valid values: %s", p.Name, val[0].lit, p.Name, f.Name, strings.Join(cs, ", "))
		}
	}
	return nil
}

// recordCall records a private call's static cost.
func (t *translator) recordCall(i int, f *Func, args []arg, values map[string][]tok) {
	l, c := t.pos(t.toks[i].off)
	call := Call{Func: f.Name, Line: l, Col: c}
	kws := make(map[string]any, len(values))
	for name, val := range values {
		kws[name], _ = literalValue(val)
	}
	if t.prog.Keywords == nil {
		t.prog.Keywords = map[CallPos]map[string]any{}
	}
	t.prog.Keywords[CallPos{l, c}] = kws
	static := true
	if v, used, ok := literalNumber(values["eps"]); ok && used == len(values["eps"]) {
		call.Eps = v
	} else {
		static = false
	}
	if val, ok := values["delta"]; ok {
		if v, used, ok := literalNumber(val); ok && used == len(val) {
			call.Delta = v
		} else {
			static = false
		}
	}
	for _, a := range args {
		if a.kw != "" {
			continue
		}
		call.Dataset = t.staticDataset(t.toks[a.from:a.to])
		if call.Dataset == "" && a.to-a.from == 1 && t.toks[a.from].t == token.IDENT && !t.mayRebind(t.toks[a.from].lit, i) {
			call.DatasetVar = t.toks[a.from].lit
		}
		break
	}
	// Runs exactly once per cell: no brace between the call and its block
	// (or the cell), and the block itself at the top level.
	base := 0
	if t.block != nil {
		base = t.blockIdx + 1
		if t.block.Repeated {
			static = false
		}
	}
	for _, b := range t.stack[base:] {
		if b.t == token.LBRACE {
			static = false
		}
	}
	call.Static = static
	if t.block != nil {
		t.block.Calls = append(t.block.Calls, call)
	} else {
		t.prog.Calls = append(t.prog.Calls, call)
	}
}

// mayRebind reports whether code of the cell before token end could give
// the variable name another value than the one it has when the cell
// starts. It errs on the side of yes: any mention of name other than as
// the first argument of a DSL function or before a selector (name.Method),
// any dereference (a pointer from an earlier cell may alias the variable)
// and any call of a function that is not a DSL function or a builtin (it
// might assign the variable) count. Methods called on values and
// goroutines of earlier cells are not seen (see docs/dsl.md).
func (t *translator) mayRebind(name string, end int) bool {
	if types.Universe.Lookup(name) != nil || isDSLName(name) {
		return true // predeclared or a DSL name: not a user variable
	}
	for j := 0; j < end; j++ {
		k := t.toks[j]
		prev, next := t.at(j-1), t.at(j+1)
		if k.t == token.MUL {
			switch prev.t {
			case token.IDENT, token.INT, token.FLOAT, token.IMAG, token.CHAR, token.STRING, token.RPAREN, token.RBRACK, token.RBRACE:
				// a product (or a pointer type after ]): no write
			default:
				return true // a dereference: *p = v may write through an alias
			}
		}
		if k.t != token.IDENT {
			continue
		}
		if prev.t == token.PERIOD {
			continue // a field or method of some value, or a package member
		}
		if k.lit == name {
			if next.t == token.PERIOD {
				continue // name.Method(...): a method cannot rebind the variable
			}
			if prev.t == token.LPAREN && isDSLName(t.at(j-2).lit) && t.at(j-2).t == token.IDENT && t.at(j-3).t != token.PERIOD &&
				(next.t == token.COMMA || next.t == token.RPAREN) {
				continue // the first argument of a DSL function (compiled code)
			}
			return true
		}
		if next.t == token.LPAREN && !isDSLName(k.lit) && types.Universe.Lookup(k.lit) == nil && !strings.HasPrefix(k.lit, "__pn") {
			return true // a user function (or conversion): it may assign name
		}
	}
	return false
}

func isDSLName(s string) bool {
	_, ok := Lookup(s)
	return ok
}

func (t *translator) staticDataset(a []tok) string {
	if len(a) == 1 && a[0].t == token.IDENT {
		return t.dsVars[a[0].lit]
	}
	if len(a) == 4 && a[0].lit == "dataset" && a[1].t == token.LPAREN && a[2].t == token.STRING && a[3].t == token.RPAREN {
		if s, err := strconv.Unquote(a[2].lit); err == nil {
			return s
		}
	}
	return ""
}

// sortedEdits sorts the edits in source order and returns them.
func (t *translator) sortedEdits() []edit {
	sort.SliceStable(t.edits, func(i, j int) bool {
		a, b := t.edits[i], t.edits[j]
		if a.off != b.off {
			return a.off < b.off
		}
		return (a.off == a.end) && (b.off != b.end) // insertions before replacements
	})
	return t.edits
}

// emit applies the edits and builds the line map.
func (t *translator) emit() {
	t.sortedEdits()
	var out strings.Builder
	lm := LineMap{src: t.src, lineStarts: t.lines}
	outLine, outCol := 0, 1 // outCol: byte column of the next output byte
	lm.lines = append(lm.lines, nil)
	inOff := 0
	anchor := func(exact bool, in int) {
		l, _ := t.posBytes(in)
		lm.lines[outLine] = append(lm.lines[outLine], anchor{outCol: outCol, inLine: l, inOff: in, exact: exact})
	}
	write := func(s string, exact bool, in int) {
		// s may contain newlines only when it is verbatim source or the
		// appended end of a %%budget cell.
		for len(s) > 0 {
			nl := strings.IndexByte(s, '\n')
			seg := s
			if nl >= 0 {
				seg = s[:nl]
			}
			if len(seg) > 0 {
				anchor(exact, in)
				out.WriteString(seg)
				outCol += len(seg)
				if exact {
					in += len(seg)
				}
			}
			if nl < 0 {
				break
			}
			out.WriteByte('\n')
			if exact {
				in++
			}
			s = s[nl+1:]
			outLine++
			outCol = 1
			lm.lines = append(lm.lines, nil)
		}
	}
	for _, e := range t.edits {
		if e.off > inOff {
			write(t.src[inOff:e.off], true, inOff)
		}
		write(e.repl, false, e.off)
		inOff = e.end
	}
	write(t.src[inOff:], true, inOff)
	t.prog.Go = out.String()
	t.prog.Lines = lm
}

func (t *translator) posBytes(off int) (line, byteCol int) {
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	return i + 1, off - t.lines[i] + 1
}

// LineMap maps positions in the translated Go back to the cell.
type LineMap struct {
	src        string
	lineStarts []int
	lines      [][]anchor // per output line (0-based)
}

type anchor struct {
	outCol int // 1-based byte column in the output line
	inLine int
	inOff  int
	exact  bool // verbatim text: columns advance together
}

// Map returns the cell's (line, column in code points) of the output
// position (line, byte column), as the Go parser and the interpreter
// report them. Positions past the end of the cell's text (trailing blank
// lines, what the translation appends to a %%budget cell, the wrapper a
// parser puts around it) map to the end of the cell's last non-blank
// line.
func (m LineMap) Map(line, col int) (int, int) {
	if len(m.lines) == 0 {
		return line, col
	}
	l, c := m.mapIn(line, col)
	end := len(strings.TrimRight(m.src, " \t\r\n"))
	if end == 0 || end == len(m.src) {
		return l, c
	}
	if lastLine := 1 + strings.Count(m.src[:end], "\n"); l > lastLine {
		ls := strings.LastIndexByte(m.src[:end], '\n') + 1
		return lastLine, utf8.RuneCountInString(m.src[ls:end]) + 1
	}
	return l, c
}

func (m LineMap) mapIn(line, col int) (int, int) {
	if line < 1 {
		line = 1
	}
	if line > len(m.lines) {
		line = len(m.lines)
	}
	as := m.lines[line-1]
	if len(as) == 0 {
		// an empty output line comes from the same (empty) input line
		if line > len(m.lineStarts) {
			line = len(m.lineStarts)
		}
		return line, 1
	}
	k := sort.Search(len(as), func(i int) bool { return as[i].outCol > col }) - 1
	if k < 0 {
		k = 0
	}
	a := as[k]
	in := a.inOff
	if a.exact {
		in += col - a.outCol
	}
	ls := m.lineStarts[a.inLine-1]
	if in > len(m.src) {
		in = len(m.src)
	}
	if in < ls {
		in = ls
	}
	return a.inLine, utf8.RuneCountInString(m.src[ls:in]) + 1
}

// AllCalls returns every private call of the cell, in blocks or not, in
// source order.
func (p *Program) AllCalls() []Call {
	var all []Call
	all = append(all, p.Calls...)
	for _, b := range p.Blocks {
		all = append(all, b.Calls...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Line != all[j].Line {
			return all[i].Line < all[j].Line
		}
		return all[i].Col < all[j].Col
	})
	return all
}
