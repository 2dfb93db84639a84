package syntax

// DSL calls: arguments, keywords and literal values.

import (
	"fmt"
	"go/constant"
	"go/token"
	"math"
	"strconv"
	"strings"
)

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
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
// -2.5, true, or a []string of string literals ([]string{"a", "b"}), so
// that calls naming their columns that way are priced and validated
// before the cell runs. Ints beyond 2³¹ are left to the runtime.
func literalValue(toks []tok) (any, bool) {
	if ss, ok := literalStrings(toks); ok {
		return ss, true
	}
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

// literalStrings reads []string{"a", "b", …} (a trailing comma allowed;
// []string{} is an empty, non-nil slice).
func literalStrings(toks []tok) ([]string, bool) {
	if len(toks) < 5 || toks[0].t != token.LBRACK || toks[1].t != token.RBRACK || toks[2].t != token.IDENT ||
		toks[2].lit != "string" || toks[3].t != token.LBRACE || toks[len(toks)-1].t != token.RBRACE {
		return nil, false
	}
	out := []string{}
	body := toks[4 : len(toks)-1]
	for i := 0; i < len(body); i += 2 {
		if body[i].t != token.STRING {
			return nil, false
		}
		v, err := strconv.Unquote(body[i].lit)
		if err != nil {
			return nil, false
		}
		out = append(out, v)
		if i+1 < len(body) && body[i+1].t != token.COMMA {
			return nil, false
		}
	}
	return out, true
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
			if npos > len(f.Positional) && !f.Variadic {
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
				if t.block != nil && t.block.Delta > 0 {
					continue // calibrated to the block's δ (see BlockDelta)
				}
				if t.block != nil {
					return t.errAt(name.off, "%s needs delta > 0, e.g. delta=1e-6: its noise is Gaussian, which has no guarantee at δ = 0; give delta= in the call, or add delta= to the block's header (budget eps=%g, delta=1e-6 { … }) and the call takes the block's δ", f.Name, t.block.Eps)
				}
				return t.errAt(name.off, "%s needs delta > 0, e.g. delta=1e-6: its noise is Gaussian, which has no guarantee at δ = 0 (inside a budget block with a δ the call may leave delta out: it takes the block's)", f.Name)
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

// validValues lists a parameter's non-empty choices as "; valid values:
// "a", "b"", or nothing when it has none.
func validValues(p *Param) string {
	var cs []string
	for _, c := range p.Choices {
		if c != "" {
			cs = append(cs, strconv.Quote(c))
		}
	}
	if len(cs) == 0 {
		return ""
	}
	return "; valid values: " + strings.Join(cs, ", ")
}

// checkLiteral checks a keyword value that is a single literal against
// the parameter's type and choices; expressions are left to the runtime.
func (t *translator) checkLiteral(f *Func, p *Param, val []tok) error {
	if v, used, ok := literalNumber(val); ok && used == len(val) {
		switch p.Type {
		case "string", "[]string", "bool":
			return t.errAt(val[0].off, "%s=%v: %s of %s takes a %s%s", p.Name, v, p.Name, f.Name, p.Type, validValues(p))
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
			return t.errAt(val[0].off, "%s=%s is not a valid %s for %s%s", p.Name, val[0].lit, p.Name, f.Name, validValues(p))
		}
	}
	return nil
}
