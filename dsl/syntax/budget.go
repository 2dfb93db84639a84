package syntax

// Budget blocks: headers, parameters, begin and end calls, block tags.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"strconv"
	"strings"
)

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
