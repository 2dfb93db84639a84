package syntax

// Magics: finding, checking and rewriting the %magic and %%budget lines.

import (
	"fmt"
	"go/scanner"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// LineMagics lists the line magics with their one-line description.
var LineMagics = map[string]string{
	"ledger":   "%ledger [DATASET]: the ledger records (all datasets, or one)",
	"budget":   "%budget [DATASET]: spent and remaining budget per dataset, and the open budget block",
	"datasets": "%datasets: the registered datasets and their public schema",
	"help":     "%help [NAME]: help on a DSL function, or the list of functions and magics",
}

// HelpTopics are the names %help accepts besides the DSL functions.
var HelpTopics = []string{"budget", "magics", "keywords"}

type magicLine struct {
	off, end int // the line without its newline
	name     string
	args     string
	cell     bool
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
		names := make([]string, 0, len(LineMagics))
		for n := range LineMagics {
			names = append(names, n)
		}
		sort.Strings(names)
		if near, ok := Closest(m.name, names); ok {
			return t.errAt(col, "unknown magic %%%s — did you mean %%%s? Magics are %s", m.name, near, magicList())
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
