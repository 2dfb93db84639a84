package syntax

// Magics: finding, checking and rewriting the %magic and %%budget lines.

import (
	"fmt"
	"go/scanner"
	"go/token"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// LineMagics lists the line magics with their one-line description.
var LineMagics = map[string]string{
	"ledger":   "%ledger [DATASET | --all]: the ledger records of the datasets this session opened (one dataset's, or every dataset's)",
	"budget":   "%budget [DATASET]: spent and remaining budget per dataset, and the open budget block",
	"datasets": "%datasets: the registered datasets and their public schema",
	"help":     "%help [NAME]: help on a DSL function, or the list of functions and magics",
}

// HelpTopics are the names %help accepts besides the DSL functions.
var HelpTopics = []string{"budget", "magics", "keywords"}

// helpQuery is a line asking for help the IPython way: NAME? (also NAME??,
// ?NAME, ??NAME) for a DSL function, a help topic or a magic (%ledger?,
// %%budget?). It runs as %help NAME.
var helpQuery = regexp.MustCompile(`^(\?{0,2})%{0,2}([A-Za-z_][A-Za-z0-9_.]*)(\?{0,2})$`)

// helpQueryName returns the NAME of a help query line.
func helpQueryName(line string) (string, bool) {
	m := helpQuery.FindStringSubmatch(line)
	if m == nil || (m[1] == "") == (m[3] == "") {
		return "", false // no question mark, or on both sides
	}
	return m[2], true
}

type magicLine struct {
	off, end int // the line without its newline
	name     string
	args     string
	cell     bool
}

// col is the offset of the magic's first character (% or ?).
func (m magicLine) col(src string) int {
	return m.off + len(src[m.off:m.end]) - len(strings.TrimLeft(src[m.off:m.end], " \t"))
}

// lineText is the line starting at offset ls, trimmed.
func (t *translator) lineText(ls int) string {
	end := strings.IndexByte(t.src[ls:], '\n')
	if end < 0 {
		end = len(t.src)
	} else {
		end += ls
	}
	return strings.TrimRight(strings.TrimSpace(t.src[ls:end]), "\r")
}

// findMagics finds the magic lines: a line whose first token is % at the
// line's first non-blank character, or a help query (NAME?). Scanning stops at each magic line and
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
			p, tk, lit := s.Scan()
			if tk == token.EOF {
				break
			}
			if tk == token.ILLEGAL && lit == "?" {
				// Go has no ?: a line that is a help query is one.
				ls := t.lineStart(file.Offset(p) + from)
				if _, ok := helpQueryName(t.lineText(ls)); ok {
					found = ls
					break
				}
				continue
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
		line := t.lineText(found)
		m := magicLine{off: found, end: end}
		if name, ok := helpQueryName(line); ok {
			m.name, m.args = "help", name
		} else if strings.HasPrefix(line, "%%") {
			m.cell = true
			line = line[2:]
		} else {
			line = line[1:]
		}
		if m.name == "" {
			name, args, _ := strings.Cut(line, " ")
			if i := strings.IndexAny(name, "\t"); i >= 0 {
				name, args = name[:i], name[i+1:]+" "+args
			}
			m.name, m.args = name, strings.TrimSpace(args)
		}
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
	col := m.col(t.src)
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
		if near, ok := Closest(m.name, magicNamesSorted()); ok {
			return t.errAt(col, "unknown magic %%%s — did you mean %%%s? Magics are %s", m.name, near, magicList())
		}
		return t.errAt(col, "unknown magic %%%s; magics are %s", m.name, magicList())
	}
	if m.name == "help" && m.args != "" {
		_, isMagic := LineMagics[strings.TrimLeft(m.args, "%")]
		if _, ok := Lookup(m.args); !ok && !contains(HelpTopics, m.args) && !isMagic {
			known := append(append(Names(), HelpTopics...), magicNamesSorted()...)
			if near, ok := Closest(m.args, known); ok {
				return t.errAt(col, "no help for %q — did you mean %s?", m.args, near)
			}
			return t.errAt(col, "no help for %q; %%help takes a DSL function (%s), a magic (%s) or a topic (%s); for Go names, inspect with Shift+Tab",
				m.args, strings.Join(Names(), ", "), magicList(), strings.Join(HelpTopics, ", "))
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

func magicNamesSorted() []string {
	names := make([]string, 0, len(LineMagics))
	for n := range LineMagics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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
	col := m.col(t.src)
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
