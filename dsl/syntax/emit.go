package syntax

// Emitting: applying the edits and mapping the Go back to the cell.

import (
	"sort"
	"strings"
	"unicode/utf8"
)

type edit struct {
	off, end int
	repl     string
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
