package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/peterh/liner"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
)

func init() {
	register(&command{
		name:    "repl",
		summary: "interactive privnotes session in the terminal",
		run: func(args []string, stdout, stderr io.Writer) int {
			return guarded("repl", runRepl, args, os.Stdin, stdout, stderr)
		},
	})
}

// newCellEngine makes the in-process engine of the REPL and the script
// runner: the same interpreter (and DSL, when the binary links it) as the
// kernel's worker. Tests replace it.
var newCellEngine = func(stateDir string) (engine.Engine, error) {
	return interp.New(interp.Config{StateDir: stateDir})
}

// cellFlags are the flags shared by repl and run.
type cellFlags struct {
	state   string
	images  string
	servers serverFlags
}

func (f *cellFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.state, "state", "", "state `DIR` (datasets and ledger; default $PRIVNOTES_STATE, else ~/.local/share/privnotes)")
	fs.StringVar(&f.images, "images", "", "save image displays as PNG files in `DIR` (default: only say that an image was displayed)")
	f.servers.register(fs)
}

// parseInterspersed parses flags that may come before or after the
// positional arguments ("run FILE --state DIR").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func runRepl(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("repl", "repl [--state DIR] [--history FILE] [--images DIR]", `Cells are Go plus the privacy DSL; a cell runs when it is complete (brackets closed).
Ctrl-C interrupts a running cell or discards the input; Ctrl-D quits.
A stack overflow or running out of memory ends the session (exit status 4;
the crash report is withheld, the ledger is unaffected).`, stderr)
	var cf cellFlags
	cf.register(fs)
	histFile := fs.String("history", "", "history `FILE` (default STATE/repl_history; \"off\" for none)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "privnotes repl: unexpected arguments %q (to run a script: privnotes run FILE)\n", pos)
		return 2
	}
	if _, err := cf.servers.apply(); err != nil {
		fmt.Fprintf(stderr, "privnotes repl: %v\n", err)
		return 2
	}
	dir, err := cellStateDir(cf.state)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes repl: %v\n", err)
		return 1
	}
	eng, err := newCellEngine(dir)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes repl: %v\n", err)
		return 1
	}
	r := &repl{eng: eng, out: newTextOutput(stdout, stderr, cf.images), stderr: stderr, color: colorTerminal(stderr), stateDir: dir}
	if f, ok := stdin.(*os.File); ok && f == os.Stdin && liner.TerminalSupported() && isTerminal(f) {
		hist := *histFile
		if hist == "" {
			hist = filepath.Join(dir, "repl_history")
		}
		if hist == "off" {
			hist = ""
		}
		return r.interactive(hist)
	}
	return r.piped(stdin)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type repl struct {
	eng    engine.Engine
	out    *textOutput
	stderr io.Writer
	color  bool // colour tracebacks (stderr is a terminal)
	// stateDir is the state directory in use, named in the banner.
	stateDir string
	count    int
	failed   bool // the last cell failed (exit status of a piped session)
}

// colorTerminal reports whether w is a terminal that should get coloured
// tracebacks: not when redirected to a file or pipe, nor with NO_COLOR set
// or TERM=dumb. (privnotes run never colours: its output is for logs.)
func colorTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// replBanner is what the interactive REPL prints first: how to get help
// and out, and which state directory (registry and ledger) it uses.
func replBanner(stateDir string) string {
	return "privnotes REPL: Go cells with the privacy DSL. %help NAME for help, Ctrl-D to quit.\n" +
		"State directory: " + stateDir + " (the registered datasets and the privacy ledger; --state DIR for another)\n"
}

// run executes one cell; Ctrl-C (SIGINT) while it runs interrupts it.
func (r *repl) run(code string) {
	r.count++
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res := r.eng.Execute(ctx, engine.ExecuteRequest{Code: code, StoreHistory: true, CellID: "repl:" + strconv.Itoa(r.count), ExecutionCount: r.count}, r.out)
	r.out.finish()
	r.failed = res.Error != nil
	if res.Value != nil {
		r.out.show(*res.Value)
	}
	if e := res.Error; e != nil {
		if r.color {
			e = &engine.Error{Name: e.Name, Value: e.Value, Traceback: engine.ColoredTraceback(e)}
		}
		printError(r.stderr, e)
	}
}

func printError(w io.Writer, e *engine.Error) {
	if len(e.Traceback) == 0 {
		fmt.Fprintf(w, "%s: %s\n", e.Name, e.Value)
		return
	}
	for _, l := range e.Traceback {
		fmt.Fprintln(w, l)
	}
}

// complete reports whether buf can run; cell magics (%%) run at an empty
// line, and so does an input that stays incomplete after an empty line
// (so a mistake can always be submitted and its error seen).
func (r *repl) complete(buf string, lastEmpty bool) (bool, string) {
	if strings.HasPrefix(strings.TrimSpace(buf), "%%") {
		return lastEmpty, ""
	}
	c := r.eng.IsComplete(buf)
	if c.Status == "incomplete" && !lastEmpty {
		return false, c.Indent
	}
	return true, ""
}

// piped reads cells from a pipe or file: no prompts, no line editing.
// The exit status is 1 when the last cell failed.
func (r *repl) piped(in io.Reader) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var buf []string
	flush := func() {
		code := strings.Join(buf, "\n")
		buf = buf[:0]
		if strings.TrimSpace(code) != "" {
			r.run(code)
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if len(buf) == 0 && strings.TrimSpace(line) == "" {
			continue
		}
		buf = append(buf, line)
		if ok, _ := r.complete(strings.Join(buf, "\n"), strings.TrimSpace(line) == ""); ok {
			flush()
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		fmt.Fprintf(r.stderr, "privnotes repl: reading input: %v\n", err)
		return 1
	}
	if r.failed {
		return 1
	}
	return 0
}

func (r *repl) interactive(histPath string) int {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetMultiLineMode(true)
	ln.SetTabCompletionStyle(liner.TabPrints)
	if histPath != "" {
		if f, err := os.Open(histPath); err == nil {
			_, _ = ln.ReadHistory(f)
			f.Close()
		}
	}
	var buf []string
	ln.SetWordCompleter(func(line string, pos int) (string, []string, string) {
		code := strings.Join(append(append([]string(nil), buf...), line), "\n")
		prefix := len([]rune(strings.Join(buf, "\n")))
		if len(buf) > 0 {
			prefix++
		}
		c := r.eng.Complete(code, prefix+pos)
		rl := []rune(line)
		start := min(max(c.CursorStart-prefix, 0), pos)
		return string(rl[:start]), c.Matches, string(rl[pos:])
	})
	fmt.Fprint(r.out.stdout, replBanner(r.stateDir))
	indent := ""
	for {
		prompt := fmt.Sprintf("[%d]> ", r.count+1)
		if len(buf) > 0 {
			prompt = strings.Repeat(" ", len(prompt)-4) + "... "
		}
		line, err := ln.PromptWithSuggestion(prompt, indent, -1)
		if errors.Is(err, liner.ErrPromptAborted) {
			buf, indent = buf[:0], ""
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			fmt.Fprintln(r.out.stdout)
			break
		}
		if len(buf) == 0 && strings.TrimSpace(line) == "" {
			continue
		}
		buf = append(buf, line)
		code := strings.Join(buf, "\n")
		ok, ind := r.complete(code, strings.TrimSpace(line) == "")
		if !ok {
			indent = ind
			continue
		}
		ln.AppendHistory(strings.TrimRight(code, "\n "))
		// Written after every entry, before the cell runs: a session that
		// ends abruptly (a crash, a closed terminal) keeps its history.
		saveHistory(ln, histPath)
		buf, indent = buf[:0], ""
		r.run(code)
	}
	saveHistory(ln, histPath)
	return 0
}

// saveHistory writes the REPL's history to path (nothing for "").
func saveHistory(ln *liner.State, path string) {
	if path == "" {
		return
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	_, werr := ln.WriteHistory(f)
	if cerr := f.Close(); werr == nil && cerr == nil {
		_ = os.Rename(tmp, path) // whole or not at all
	} else {
		os.Remove(tmp)
	}
}

// textOutput renders a cell's outputs as text: streams as they come,
// displays by their text/plain (images are saved or mentioned).
type textOutput struct {
	mu        sync.Mutex
	stdout    io.Writer
	stderr    io.Writer
	imagesDir string
	images    int
	lastID    string // display being updated in place
	midLine   bool   // stdout does not end with a newline
	// progress lines on stderr: redrawn in place on a terminal, else one
	// line per tenth of the steps
	stderrTTY    bool
	progressLine bool // a progress line is drawn and not ended
	progressTen  map[string]int
}

func newTextOutput(stdout, stderr io.Writer, imagesDir string) *textOutput {
	f, ok := stderr.(*os.File)
	return &textOutput{stdout: stdout, stderr: stderr, imagesDir: imagesDir, stderrTTY: ok && isTerminal(f), progressTen: map[string]int{}}
}

// progressLocked draws a computation's progress on stderr.
func (o *textOutput) progressLocked(id string, p engine.Progress) {
	if o.stderrTTY {
		fmt.Fprintf(o.stderr, "\r\x1b[K%s", p.Text())
		o.progressLine = p.Done < p.Total
		if !o.progressLine {
			io.WriteString(o.stderr, "\n")
		}
		return
	}
	ten := 10 * p.Done / max(p.Total, 1)
	if last, ok := o.progressTen[id]; ok && ten == last {
		return
	}
	o.progressTen[id] = ten
	fmt.Fprintln(o.stderr, p.Text())
}

// endProgressLocked ends a progress line before other output.
func (o *textOutput) endProgressLocked() {
	if o.progressLine {
		io.WriteString(o.stderr, "\n")
		o.progressLine = false
	}
}

func (o *textOutput) Stream(name, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lastID = ""
	o.endProgressLocked()
	if name == "stderr" {
		io.WriteString(o.stderr, text)
		return
	}
	io.WriteString(o.stdout, text)
	o.midLine = !strings.HasSuffix(text, "\n")
}

func (o *textOutput) Display(d engine.Display) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.displayLocked(d)
}

func (o *textOutput) displayLocked(d engine.Display) {
	if d.Progress != nil {
		o.progressLocked(d.DisplayID, *d.Progress)
		return
	}
	o.endProgressLocked()
	if o.midLine {
		io.WriteString(o.stdout, "\n")
		o.midLine = false
	}
	text := o.text(d)
	if d.Update && d.DisplayID != "" && d.DisplayID == o.lastID {
		// an update of the display just above: say so rather than
		// repeating the whole history of a progress display
		fmt.Fprintf(o.stdout, "  ↳ %s\n", text)
		return
	}
	o.lastID = d.DisplayID
	fmt.Fprintln(o.stdout, text)
}

func (o *textOutput) ClearOutput(bool) {}

// finish ends a cell's output on a new line.
func (o *textOutput) finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endProgressLocked()
	if o.midLine {
		io.WriteString(o.stdout, "\n")
		o.midLine = false
	}
	o.lastID = ""
}

// show prints a cell's value.
func (o *textOutput) show(d engine.Display) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.displayLocked(d)
}

// text is the text form of a bundle.
func (o *textOutput) text(d engine.Display) string {
	plain, _ := d.Data["text/plain"].(string)
	for _, mime := range []string{"image/png", "image/svg+xml"} {
		data, ok := d.Data[mime].(string)
		if !ok {
			continue
		}
		note := "[" + mime + " display]"
		if o.imagesDir != "" {
			if path, err := o.save(mime, data); err == nil {
				note = "[" + mime + " saved to " + path + "]"
			} else {
				note = "[" + mime + " display; not saved: " + err.Error() + "]"
			}
		}
		if plain == "" || strings.HasPrefix(plain, "<image") {
			return note
		}
		return plain + "\n" + note
	}
	if plain == "" {
		for mime := range d.Data {
			return "[" + mime + " display]"
		}
	}
	return plain
}

func (o *textOutput) save(mime, data string) (string, error) {
	o.images++
	var b []byte
	ext := ".svg"
	if mime == "image/png" {
		var err error
		if b, err = base64.StdEncoding.DecodeString(data); err != nil {
			return "", err
		}
		ext = ".png"
	} else {
		b = []byte(data)
	}
	if err := os.MkdirAll(o.imagesDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.imagesDir, fmt.Sprintf("display-%03d%s", o.images, ext))
	return path, os.WriteFile(path, b, 0o644)
}
