package main

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"
)

// Mutant is one entry of the mutant list: a privacy-critical change to a
// source file and the package tests that must notice it.
type Mutant struct {
	ID   string
	File string // slash-separated, relative to the repository root
	Why  string // the privacy property the change breaks, one line
	// Tests are run in order; the first that fails kills the mutant, so
	// the package expected to catch it goes first.
	Tests []TestSpec
	// Original must occur exactly once in File; Mutated replaces it.
	Original, Mutated string
	// Timeout bounds each go test run of this mutant (0: the default).
	Timeout time.Duration
	// Line is where the entry starts in the list file, for messages.
	Line int
}

// TestSpec is one `go test -run Run Pkgs...` invocation.
type TestSpec struct {
	Pkgs []string // "./mechanisms/noise", always relative to the root
	Run  string
}

func (s TestSpec) String() string { return strings.Join(s.Pkgs, " ") + " -run " + s.Run }

// The list format, chosen so that Go source can be pasted verbatim (tabs,
// backquotes and all) and the file diffs well:
//
//	# comment
//	mutant:  noise/laplace-scale
//	file:    mechanisms/noise/lattice.go
//	why:     Laplace noise must have scale Δ₁/ε: half of it doubles ε
//	test:    ./mechanisms/noise ^TestScaleCalibration$
//	timeout: 3m
//	--- original
//	<lines, verbatim>
//	--- mutant
//	<lines, verbatim; none deletes the snippet>
//	--- end
//
// A test line holds one or more packages and a -run regex (the last
// field, so it cannot contain blanks: use \s). The snippets are the lines
// between the markers joined by newlines, without a final newline, and
// are matched byte for byte.
const (
	markOriginal = "--- original"
	markMutant   = "--- mutant"
	markEnd      = "--- end"
)

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*$`)

// ParseList reads a mutant list. name labels errors.
func ParseList(r io.Reader, name string) ([]*Mutant, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	const (
		outside = iota
		header
		original
		mutated
	)
	state := outside
	var ms []*Mutant
	var cur *Mutant
	var body []string
	seen := map[string]int{}
	lineNo := 0
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch state {
		case outside, header:
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			if line == markOriginal {
				if state != header {
					return nil, fail("%q outside a mutant entry", markOriginal)
				}
				state, body = original, nil
				continue
			}
			key, value, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fail("want \"key: value\" or %q, got %q", markOriginal, line)
			}
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if key == "mutant" {
				if state == header {
					return nil, fail("mutant %q has no %q section", cur.ID, markOriginal)
				}
				if !idPattern.MatchString(value) {
					return nil, fail("mutant id %q: use lower-case letters, digits and . _ / -", value)
				}
				if at, dup := seen[value]; dup {
					return nil, fail("mutant id %q already used at line %d", value, at)
				}
				seen[value] = lineNo
				cur = &Mutant{ID: value, Line: lineNo}
				state = header
				continue
			}
			if state != header {
				return nil, fail("%q before the first \"mutant: ID\" line", key)
			}
			if err := cur.set(key, value); err != nil {
				return nil, fail("mutant %s: %v", cur.ID, err)
			}
		case original:
			if line == markMutant {
				cur.Original = strings.Join(body, "\n")
				state, body = mutated, nil
				continue
			}
			if line == markEnd {
				return nil, fail("mutant %s: %q before %q", cur.ID, markEnd, markMutant)
			}
			body = append(body, line)
		case mutated:
			if line == markEnd {
				cur.Mutated = strings.Join(body, "\n")
				if err := cur.check(); err != nil {
					return nil, fmt.Errorf("%s:%d: mutant %s: %v", name, cur.Line, cur.ID, err)
				}
				ms = append(ms, cur)
				state, cur = outside, nil
				continue
			}
			if line == markOriginal || line == markMutant {
				return nil, fail("mutant %s: %q inside the mutant section", cur.ID, line)
			}
			body = append(body, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	switch state {
	case header:
		return nil, fail("mutant %s: the list ends before its %q section", cur.ID, markOriginal)
	case original, mutated:
		return nil, fail("mutant %s: the list ends inside a snippet (missing %q)", cur.ID, markEnd)
	}
	return ms, nil
}

// set records one header field.
func (m *Mutant) set(key, value string) error {
	if value == "" {
		return fmt.Errorf("%s: empty value", key)
	}
	once := func(dst *string) error {
		if *dst != "" {
			return fmt.Errorf("%s given twice", key)
		}
		*dst = value
		return nil
	}
	switch key {
	case "file":
		return once(&m.File)
	case "why":
		return once(&m.Why)
	case "test":
		fields := strings.Fields(value)
		if len(fields) < 2 {
			return fmt.Errorf("test %q: want one or more packages then a -run regex", value)
		}
		spec := TestSpec{Pkgs: fields[:len(fields)-1], Run: fields[len(fields)-1]}
		for _, p := range spec.Pkgs {
			if !strings.HasPrefix(p, "./") || strings.Contains(p, "..") {
				return fmt.Errorf("test package %q: use a path relative to the root, like ./mechanisms/noise", p)
			}
		}
		if _, err := regexp.Compile(spec.Run); err != nil {
			return fmt.Errorf("test regex %q: %v", spec.Run, err)
		}
		m.Tests = append(m.Tests, spec)
		return nil
	case "timeout":
		if m.Timeout != 0 {
			return fmt.Errorf("timeout given twice")
		}
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return fmt.Errorf("timeout %q: want a positive duration like 5m", value)
		}
		m.Timeout = d
		return nil
	}
	return fmt.Errorf("unknown key %q (want file, why, test or timeout)", key)
}

// check validates a complete entry.
func (m *Mutant) check() error {
	switch {
	case m.File == "":
		return fmt.Errorf("no file")
	case path.IsAbs(m.File) || strings.Contains(m.File, `\`) || path.Clean(m.File) != m.File || strings.HasPrefix(m.File, "../"):
		return fmt.Errorf("file %q: want a clean slash-separated path inside the repository", m.File)
	case !strings.HasSuffix(m.File, ".go") || strings.HasSuffix(m.File, "_test.go"):
		return fmt.Errorf("file %q: mutants change non-test Go files", m.File)
	case m.Why == "":
		return fmt.Errorf("no why: name the privacy property the change breaks")
	case len(m.Tests) == 0:
		return fmt.Errorf("no test line")
	case strings.TrimSpace(m.Original) == "":
		return fmt.Errorf("empty original snippet")
	case m.Original == m.Mutated:
		return fmt.Errorf("the mutant is the original")
	}
	return nil
}

// Select returns the mutants named in only (comma-separated ids), in list
// order, or all of them for an empty only. An unknown id is an error, so
// that a typo cannot silently select nothing.
func Select(ms []*Mutant, only string) ([]*Mutant, error) {
	if strings.TrimSpace(only) == "" {
		return ms, nil
	}
	want := map[string]bool{}
	for _, id := range strings.Split(only, ",") {
		if id = strings.TrimSpace(id); id != "" {
			want[id] = true
		}
	}
	var out []*Mutant
	for _, m := range ms {
		if want[m.ID] {
			out = append(out, m)
			delete(want, m.ID)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for id := range want {
			unknown = append(unknown, id)
		}
		return nil, fmt.Errorf("-only: no mutant %s in the list", strings.Join(sortedStrings(unknown), ", "))
	}
	return out, nil
}
