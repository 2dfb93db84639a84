package worker

import (
	"bytes"
	"log"
	"regexp"
	"strings"
	"sync"
)

// Crash reports and private data.
//
// When the worker dies, the Go runtime writes a crash report to its stderr:
// the panic value, then the stack of the goroutine, with the raw words of
// each frame's arguments. If the goroutine was inside a private
// computation (a mechanism, the runtime's charged section, the ledger
// loading rows), both may depend on private data: a panic "index out of
// range [137]" names a row count, and frame arguments may be the bits of a
// row's values. The supervisor therefore never forwards a crash report line
// by line: it holds the report until the worker has exited and then
// classifies it. A report whose goroutine trace shows a frame of a
// privnotes package that handles private data (anything but the public
// packages in publicPackages), or that has no goroutine trace to judge by,
// or was cut at reportMax, is withheld: the cell and the kernel's log get
// the fixed withheldReason, and the report itself goes nowhere (the
// kernel's stderr may be shown to the analyst by a Jupyter front end).
// Other reports (a cell's goroutine that panicked in user code, a stack
// overflow in the interpreter) are logged and their first line is shown.

// withheldReason replaces a withheld crash report in errors and logs.
const withheldReason = "it crashed inside a private computation; the crash report is withheld because it may depend on the data"

// modulePath prefixes the frames of privnotes' own packages.
const modulePath = "github.com/privnotes/privnotes/"

// publicPackages are the privnotes packages whose frames never hold
// private data: the interpreter, the front end and the worker. Every
// other privnotes package (mechanisms/..., dsl/runtime, dsl/ledger,
// dsl/dataset, and any added later) counts as private, so a new package
// fails safe.
var publicPackages = []string{"dsl/interp", "dsl/syntax", "dsl/engine", "kernel", "stdlib"}

// reportStart matches the first line of a Go crash report (or of the
// lines the runtime writes just before one).
var reportStart = regexp.MustCompile(`^(panic: |fatal error: |runtime: |goroutine \d+ |SIG[A-Z]+: |unexpected (fault address|signal)|\[signal )`)

// goroutineHeader starts a goroutine's trace in a report: "goroutine 7
// [running]:", or for fatal errors "goroutine 7 gp=0x… m=4 mp=0x… [running]:".
var goroutineHeader = regexp.MustCompile(`(?m)^goroutine \d+ [^\n]*\[`)

// reportMax bounds the report kept in memory; a longer one is withheld.
const reportMax = 1 << 20

// privateFrames reports whether a stack trace (a crash report or
// debug.Stack) shows a frame, or a goroutine creator, of a privnotes
// package that handles private data.
func privateFrames(trace string) bool {
	for _, line := range strings.Split(trace, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "created by ")
		rest, ok := strings.CutPrefix(line, modulePath)
		if !ok {
			continue
		}
		// rest is "pkg/path.Func(...)": the package ends at the first dot
		// after the last slash.
		fn := rest
		if i := strings.IndexAny(fn, "( "); i >= 0 {
			fn = fn[:i]
		}
		pkg := fn
		slash := strings.LastIndexByte(fn, '/')
		if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
			pkg = fn[:slash+1+dot]
		}
		if !isPublicPackage(pkg) {
			return true
		}
	}
	return false
}

func isPublicPackage(pkg string) bool {
	for _, p := range publicPackages {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// mustWithhold reports whether a crash report must not be shown or logged:
// it shows a private frame, or it cannot be judged (no goroutine trace, as
// under GOTRACEBACK=none, or cut short).
func mustWithhold(report string, truncated bool) bool {
	if report == "" {
		return false
	}
	return truncated || !goroutineHeader.MatchString(report) || privateFrames(report)
}

// crashReason says in one line why a worker ended, from the Go runtime's
// crash report on its stderr and its exit status.
func crashReason(report string, withheld bool, waitErr, protoErr error) string {
	var parts []string
	if withheld {
		parts = append(parts, withheldReason)
	} else {
		for _, line := range strings.Split(report, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "fatal error: ") ||
				strings.HasPrefix(line, "runtime: out of memory") ||
				strings.HasPrefix(line, "panic: ") {
				if len(line) > 200 {
					line = line[:200] + "…"
				}
				parts = append(parts, line)
				break
			}
		}
	}
	if protoErr != nil {
		parts = append(parts, protoErr.Error())
	}
	if waitErr != nil {
		parts = append(parts, waitErr.Error())
	} else {
		parts = append(parts, "exit status 0")
	}
	return strings.Join(parts, "; ")
}

// ReportSplitter cuts the output of a Go process into lines and tells the
// lines written before a Go crash report from the lines of the report. The
// kernel's supervisor and the crash guard of "privnotes repl" and "run"
// both read a child's stderr with it, so they agree on where a report
// starts. Its zero value is ready; it is not safe for concurrent use.
type ReportSplitter struct {
	line     []byte // the partial last line
	inReport bool
}

// Feed appends b and calls take for each line it completes, newline
// included; inReport is true from the first line of a crash report on.
// The line is only valid during the call.
func (s *ReportSplitter) Feed(b []byte, take func(line []byte, inReport bool)) {
	s.line = append(s.line, b...)
	start := 0
	for {
		i := bytes.IndexByte(s.line[start:], '\n')
		if i < 0 {
			break
		}
		s.takeLine(s.line[start:start+i+1], take)
		start += i + 1
	}
	// Keep the partial line at the front so the buffer is reused.
	s.line = s.line[:copy(s.line, s.line[start:])]
}

// Flush takes the last partial line, if any, with a newline added; call
// it once the process has exited.
func (s *ReportSplitter) Flush(take func(line []byte, inReport bool)) {
	if len(s.line) > 0 {
		s.takeLine(append(s.line, '\n'), take)
		s.line = s.line[:0]
	}
}

// InReport reports whether a crash report has started.
func (s *ReportSplitter) InReport() bool { return s.inReport }

func (s *ReportSplitter) takeLine(line []byte, take func([]byte, bool)) {
	if !s.inReport && reportStart.Match(line) {
		s.inReport = true
	}
	take(line, s.inReport)
}

// tailWriter logs what a worker writes to fd 1 or 2, line by line, until
// a Go crash report starts (stderr only): from then on it keeps the lines
// unlogged for the supervisor to classify once the worker has exited.
type tailWriter struct {
	log     *log.Logger
	prefix  string
	reports bool // detect crash reports (the worker's stderr)

	mu        sync.Mutex
	lines     ReportSplitter
	report    []byte
	truncated bool
}

// Write logs whole lines; a partial line that starts a report is held
// like any partial line, so nothing of it is logged before its newline
// (the process may die first) and finish classifies it.
func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines.Feed(b, w.take)
	return len(b), nil
}

// take handles one line, newline included.
func (w *tailWriter) take(line []byte, inReport bool) {
	if !w.reports || !inReport {
		w.log.Printf("%s%s", w.prefix, bytes.TrimSuffix(line, []byte("\n")))
		return
	}
	if len(w.report)+len(line) > reportMax {
		w.truncated = true
		return
	}
	w.report = append(w.report, line...)
}

// finish is called once the worker has exited: it takes the last partial
// line, decides whether the crash report must be withheld, logs the report
// if not (or a fixed line if so), and returns the worker's reason to end.
func (w *tailWriter) finish(pid int, waitErr, protoErr error) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines.Flush(w.take)
	report := string(w.report)
	withheld := mustWithhold(report, w.truncated)
	switch {
	case withheld:
		w.log.Printf("%sworker %d: %s", w.prefix, pid, withheldReason)
	case report != "":
		for _, l := range strings.Split(strings.TrimSuffix(report, "\n"), "\n") {
			w.log.Printf("%s%s", w.prefix, l)
		}
	}
	return crashReason(report, withheld, waitErr, protoErr)
}
