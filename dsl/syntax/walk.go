package syntax

// Walking the tokens: bracket tracking, DSL names and the cell's end.

import (
	"errors"
	"go/parser"
	"go/scanner"
	"go/token"
	"strconv"
	"strings"
)

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
	name   string      // for LPAREN after a plain identifier: that identifier
	off    int
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
			if k.lit != "budget" && t.stmtStart(i) && t.at(i+1).t == token.IDENT && (t.at(i+1).lit == "eps" || t.at(i+1).lit == "delta") && t.at(i+2).t == token.ASSIGN {
				if near, ok := Closest(k.lit, []string{"budget"}); ok {
					return t.errAt(k.off, "undefined: %s — did you mean %s? (a budget block: %s eps=<number>, delta=<number> { … })", k.lit, near, near)
				}
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
					if near, ok := Closest(top.name, Names()); ok {
						return t.errAt(top.off-len(top.name), "undefined: %s — did you mean %s?", top.name, near)
					}
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
			callee, name := "", ""
			switch prev := t.at(i - 1); prev.t {
			case token.IDENT, token.RPAREN, token.RBRACK, token.FUNC, token.RBRACE:
				callee = "call"
				if prev.t == token.IDENT && t.at(i-2).t != token.PERIOD {
					name = prev.lit
					if _, ok := Lookup(prev.lit); ok {
						callee = prev.lit
					}
				}
			}
			t.stack = append(t.stack, bracket{t: token.LPAREN, callee: callee, name: name, off: k.off})
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
