package syntax

// Static costs: the private calls' budgets and datasets.

import (
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
)

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
	} else if BlockDelta(f, func(k string) bool { _, ok := values[k]; return ok }) && t.block != nil && t.block.Delta > 0 {
		// The call is calibrated to its block's δ, which the runtime
		// passes it too: static costs and plans use the same δ.
		call.Delta, call.DeltaFromBlock = t.block.Delta, true
		kws["delta"] = t.block.Delta
	}
	for _, a := range args {
		if a.kw != "" {
			continue
		}
		if f.DatasetFrom == catalog.DatasetFromQuery {
			if q, ok := literalValue(t.toks[a.from:a.to]); ok {
				call.Query, _ = q.(string)
			}
			break
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
