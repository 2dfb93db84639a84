package syntax

// Scanning: the cell's tokens and their positions.

import (
	"go/scanner"
	"go/token"
	"strconv"
	"strings"
)

type tok struct {
	t        token.Token
	lit      string
	off, end int
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
