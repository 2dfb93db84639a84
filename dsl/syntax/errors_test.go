package syntax

// The translator's error cases, read from testdata/errors/*.pn.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// An error-case file (testdata/errors/*.pn) holds cases, each
//
//	-- name --
//	ERROR "a substring of the message"
//	the cell, with «» where the error is reported
//
// INCOMPLETE in place of ERROR expects an Incomplete error (more input
// could make the cell valid). The message is a Go string literal (quoted
// or backquoted). The cell runs from the line after ERROR to the next
// header line or the end of the file, without its final newline: an empty
// last line stands for a cell ending in a newline. The marker is removed
// before translation; the expected line and column (in code points) are
// the marker's. Lines before the first header are comments.

// errorMarker marks where a case's error is expected.
const errorMarker = "«»"

var caseHeader = regexp.MustCompile(`^-- (.+) --$`)

type errorCase struct {
	name       string
	src        string
	line, col  int
	msg        string // substring of the message
	incomplete bool
}

// parseErrorCases reads the cases of an error-case file.
func parseErrorCases(text string) ([]errorCase, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("the file does not end with a newline")
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var cases []errorCase
	for i := 0; i < len(lines); {
		m := caseHeader.FindStringSubmatch(strings.TrimSuffix(lines[i], "\n"))
		if m == nil {
			i++ // a comment before the first case
			continue
		}
		c := errorCase{name: m[1]}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("line %d: case %q has no ERROR line", i+1, c.name)
		}
		verb, lit, _ := strings.Cut(strings.TrimSuffix(lines[i+1], "\n"), " ")
		switch verb {
		case "ERROR":
		case "INCOMPLETE":
			c.incomplete = true
		default:
			return nil, fmt.Errorf("line %d: case %q: want ERROR or INCOMPLETE, not %q", i+2, c.name, verb)
		}
		msg, err := strconv.Unquote(lit)
		if err != nil || msg == "" {
			return nil, fmt.Errorf("line %d: case %q: the message must be a non-empty Go string literal: %s", i+2, c.name, lit)
		}
		c.msg = msg
		j := i + 2
		for j < len(lines) && !caseHeader.MatchString(strings.TrimSuffix(lines[j], "\n")) {
			j++
		}
		body := strings.TrimSuffix(strings.Join(lines[i+2:j], ""), "\n")
		at := strings.Index(body, errorMarker)
		if at < 0 || strings.Count(body, errorMarker) != 1 {
			return nil, fmt.Errorf("line %d: case %q needs exactly one %s", i+1, c.name, errorMarker)
		}
		c.src = body[:at] + body[at+len(errorMarker):]
		ls := strings.LastIndexByte(body[:at], '\n') + 1
		c.line = strings.Count(body[:at], "\n") + 1
		c.col = utf8.RuneCountInString(body[ls:at]) + 1
		cases = append(cases, c)
		i = j
	}
	return cases, nil
}

// unwritableErrorCases are cases whose cell cannot be written plainly in
// a case file (its meaning lies in trailing blanks).
var unwritableErrorCases = []errorCase{
	{"end of input with trailing blank lines", "a := 1\ny := 1 +\n\n  \n", 2, 9, "unexpected end of input", true},
}

func TestTranslateErrors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.pn"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no error-case files in testdata/errors")
	}
	run := func(t *testing.T, tc errorCase) {
		_, err := Translate("c", tc.src)
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("Translate(%q) = %v, want a *syntax.Error", tc.src, err)
		}
		if se.Line != tc.line || se.Col != tc.col || !strings.Contains(se.Msg, tc.msg) || se.Incomplete != tc.incomplete {
			t.Errorf("Translate(%q) error = %d:%d %q (incomplete %v), want %d:%d containing %q (incomplete %v)",
				tc.src, se.Line, se.Col, se.Msg, se.Incomplete, tc.line, tc.col, tc.msg, tc.incomplete)
		}
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := parseErrorCases(string(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(cases) == 0 {
			t.Errorf("%s: no cases", file)
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".pn"), func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { run(t, tc) })
			}
		})
	}
	for _, tc := range unwritableErrorCases {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}
}

func TestParseErrorCases(t *testing.T) {
	cases, err := parseErrorCases("a comment\n-- one --\nERROR \"m\"\nx := «»1\n-- two --\nINCOMPLETE `say \"x\"`\né\n  y«»\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []errorCase{
		{"one", "x := 1", 1, 6, "m", false},
		{"two", "é\n  y\n", 2, 4, `say "x"`, true},
	}
	if fmt.Sprint(cases) != fmt.Sprint(want) {
		t.Errorf("parseErrorCases = %+v, want %+v", cases, want)
	}
	for _, bad := range []string{
		"-- no marker --\nERROR \"m\"\nx := 1\n",
		"-- two markers --\nERROR \"m\"\n«»x«»\n",
		"-- no verb --\nx := «»1\n",
		"-- no message --\nERROR\n«»\n",
		"-- no newline --\nERROR \"m\"\n«»",
	} {
		if _, err := parseErrorCases(bad); err == nil {
			t.Errorf("parseErrorCases(%q) succeeded, want an error", bad)
		}
	}
}
