package engine

import (
	"regexp"
	"strings"
)

// ANSI colours of tracebacks, as IPython's default scheme uses them: the
// error name red (here also bold), places green, function names cyan.
const (
	ansiErrName = "\x1b[1;31m"
	ansiPlace   = "\x1b[0;32m"
	ansiFunc    = "\x1b[0;36m"
	ansiCaret   = "\x1b[1;31m"
	ansiReset   = "\x1b[0m"
)

var (
	// "line 3:14" and "cell line 3:14" in a message or a frame.
	placeRe = regexp.MustCompile(`(?:cell )?line \d+:\d+`)
	// A frame: "  in f" or "  in f (defined in cell [2])".
	frameRe = regexp.MustCompile(`^  in (\S+)(?: \(defined in (.+)\))?$`)
	// The caret under a source line.
	caretRe = regexp.MustCompile(`^(\s*)\^$`)
)

// ColoredTraceback returns the traceback of e with ANSI colours, for a
// front end that shows them (Jupyter renders them; a terminal does): the
// error name red and bold, positions ("line 3:14") and the cells that
// define functions green, function names cyan, the caret under the
// failing column red. The source lines quoted in a traceback are left as
// they are, and so are lines of a shape it does not know. An empty
// traceback becomes "Name: Value". Error.Name and Error.Value stay plain:
// programs compare them.
func ColoredTraceback(e *Error) []string {
	tb := e.Traceback
	if len(tb) == 0 {
		tb = []string{e.Name + ": " + e.Value}
	}
	out := make([]string, len(tb))
	for i, line := range tb {
		switch {
		case i == 0 && e.Name != "" && strings.HasPrefix(line, e.Name+":"):
			rest := line[len(e.Name):]
			out[i] = ansiErrName + e.Name + ansiReset + colorPlaces(rest)
		case caretRe.MatchString(line):
			m := caretRe.FindStringSubmatch(line)
			out[i] = m[1] + ansiCaret + "^" + ansiReset
		case frameRe.MatchString(line):
			m := frameRe.FindStringSubmatch(line)
			s := "  in " + ansiFunc + m[1] + ansiReset
			if m[2] != "" {
				s += " (defined in " + ansiPlace + m[2] + ansiReset + ")"
			}
			out[i] = s
		case strings.HasPrefix(line, "  cell line "):
			out[i] = colorPlaces(line)
		default:
			out[i] = line
		}
	}
	return out
}

// colorPlaces colours the positions in a message line. Only the first
// one: a later "line 2:3" may be the user's own text inside a message.
func colorPlaces(s string) string {
	loc := placeRe.FindStringIndex(s)
	if loc == nil {
		return s
	}
	return s[:loc[0]] + ansiPlace + s[loc[0]:loc[1]] + ansiReset + s[loc[1]:]
}
