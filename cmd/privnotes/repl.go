package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
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
	state     string
	images    string
	out       string
	overwrite bool
	servers   serverFlags
}

func (f *cellFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.state, "state", "", "state `DIR` (datasets and ledger; default $PRIVNOTES_STATE, else ~/.local/share/privnotes)")
	fs.StringVar(&f.images, "images", "", "save image displays as PNG files in `DIR` (default: only say that an image was displayed)")
	fs.StringVar(&f.out, "out", ".", "write the files download(res, NAME) saves to `DIR`")
	fs.BoolVar(&f.overwrite, "overwrite", false, "let download() replace a file of the same name in the --out directory (default: keep it and say so)")
	f.servers.register(fs)
}

// textOutput makes the output of a session with these flags.
func (f *cellFlags) textOutput(stdout, stderr io.Writer) *textOutput {
	o := newTextOutput(stdout, stderr, f.images)
	o.outDir, o.overwrite = f.out, f.overwrite
	return o
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
	fs := newFlags("repl", "repl [--state DIR] [--history FILE] [--images DIR] [--out DIR]", `Cells are Go plus the privacy DSL; a cell runs when it is complete (brackets closed).
Ctrl-C interrupts a running cell or discards the input; Ctrl-D quits.
download(res, NAME) writes NAME into --out DIR.
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
	r := &repl{eng: eng, out: cf.textOutput(stdout, stderr), stderr: stderr, color: colorTerminal(stderr), stateDir: dir}
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
	return "privnotes REPL: Go cells with the privacy DSL. help or %help NAME for help, Ctrl-D or exit to quit.\n" +
		"State directory: " + stateDir + " (the registered datasets and the privacy ledger; --state DIR for another)\n"
}

// pythonism matches what a Python user types at a prompt to get help or
// to leave: help, help(), help(NAME), ?, exit, exit(), exit(N), quit,
// quit(), quit(N).
var pythonism = regexp.MustCompile(`^(?:(\?)|(help|exit|quit)(?:\(\s*([A-Za-z_][\w.]*|\d{1,3})?\s*\))?)$`)

// replCmd is what a line of the REPL asks that is not a cell: help (with
// its topic) or leaving (with the exit status).
type replCmd struct {
	help   bool
	topic  string
	exit   bool
	status int
}

// replCommand recognises a Pythonism (see pythonism) in a cell. They are
// not Go: run as cells they fail with a NameError or SyntaxError that
// tells a newcomer nothing. A name the session defines itself (help :=
// ...) keeps its meaning: defined reports whether it does.
func replCommand(code string, defined func(name string) bool) (replCmd, bool) {
	m := pythonism.FindStringSubmatch(strings.TrimSpace(code))
	if m == nil {
		return replCmd{}, false
	}
	if m[1] == "?" {
		return replCmd{help: true}, true
	}
	name, arg := m[2], m[3]
	if defined(name) {
		return replCmd{}, false
	}
	if name == "help" {
		if arg != "" && arg[0] >= '0' && arg[0] <= '9' {
			return replCmd{}, false // help(3): let the cell say what is wrong
		}
		return replCmd{help: true, topic: arg}, true
	}
	status := 0
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil {
			return replCmd{}, false // exit(x): not a status
		}
		status = n
	}
	return replCmd{exit: true, status: status}, true
}

// defined reports whether the session defines name itself (a variable, a
// function): completion of the name offers it.
func (r *repl) defined(name string) bool {
	for _, m := range r.eng.Complete(name, len(name)).Matches {
		if m == name {
			return true
		}
	}
	return false
}

// enter runs what the user entered: a cell, help, or leaving, which it
// reports with the exit status.
func (r *repl) enter(code string) (quit bool, status int) {
	if c, ok := replCommand(code, r.defined); ok {
		if c.exit {
			return true, c.status
		}
		r.run(strings.TrimSpace("%help " + c.topic))
		if c.topic == "" {
			fmt.Fprintln(r.out.stdout, "exit, quit() or Ctrl-D leaves the REPL; NAME? or help(NAME) shows the help of NAME.")
		}
		return false, 0
	}
	r.run(code)
	return false, 0
}

// run executes one cell; Ctrl-C (SIGINT) while it runs interrupts it.
func (r *repl) run(code string) {
	r.count++
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	unwritten := r.out.unwrittenFiles()
	res := r.eng.Execute(ctx, engine.ExecuteRequest{Code: code, StoreHistory: true, CellID: "repl:" + strconv.Itoa(r.count), ExecutionCount: r.count}, r.out)
	r.out.finish()
	r.failed = res.Error != nil || r.out.unwrittenFiles() > unwritten
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
	quit, status := false, 0
	flush := func() {
		code := strings.Join(buf, "\n")
		buf = buf[:0]
		if strings.TrimSpace(code) != "" {
			quit, status = r.enter(code)
		}
	}
	for !quit && sc.Scan() {
		line := sc.Text()
		if len(buf) == 0 && strings.TrimSpace(line) == "" {
			continue
		}
		buf = append(buf, line)
		if ok, _ := r.complete(strings.Join(buf, "\n"), strings.TrimSpace(line) == ""); ok {
			flush()
		}
	}
	if quit {
		return status
	}
	flush()
	if quit {
		return status
	}
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
		if quit, status := r.enter(code); quit {
			saveHistory(ln, histPath)
			return status
		}
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
	// files a cell offers (download) go to outDir ("" or "." is the
	// current directory); unwritten counts those that could not be
	// written, which makes a session's exit status 1
	outDir    string
	overwrite bool
	unwritten int
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
	if d.File != nil {
		o.lastID = ""
		o.saveFileLocked(d.File)
		return
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

// unwrittenFiles is how many files offered by cells could not be written.
func (o *textOutput) unwrittenFiles() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unwritten
}

// saveFileLocked writes a file a cell offered (download) to the --out
// directory and says where on stdout. A file that is there already is
// kept unless --overwrite was given: the directory is the user's (the
// current one by default), and a name such as data.csv may be their own
// file. What was not written is said on stderr.
func (o *textOutput) saveFileLocked(f *engine.File) {
	path, replaced, err := writeFile(o.outDir, f, o.overwrite)
	if err != nil {
		o.unwritten++
		fmt.Fprintf(o.stderr, "%s: not written: %v\n", f.Name, err)
		return
	}
	note := ""
	if replaced {
		note = " (replaced the file that was there: --overwrite)"
	}
	fmt.Fprintf(o.stdout, "%s: %d bytes written to %s%s\n", f.Name, len(f.Data), path, note)
}

// writeFile writes f into dir and returns its absolute path, and whether
// it replaced a file (only with overwrite).
func writeFile(dir string, f *engine.File, overwrite bool) (path string, replaced bool, err error) {
	// The runtime allows plain names only; a front end that writes files
	// checks again rather than trust a display.
	if f.Name == "" || f.Name == "." || f.Name == ".." || strings.ContainsAny(f.Name, `/\`) {
		return "", false, fmt.Errorf("%q is not a plain file name", f.Name)
	}
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	path = filepath.Join(dir, f.Name)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if !overwrite {
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return "", false, fmt.Errorf("%s exists and was kept (--overwrite replaces it; or give download another name, or --out another directory)", path)
		}
		if err != nil {
			return "", false, err
		}
		_, werr := fh.Write(f.Data)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return "", false, werr
		}
		return path, false, nil
	}
	_, statErr := os.Lstat(path)
	// Whole or not at all: a temporary file renamed over the old one.
	tmp, err := os.CreateTemp(dir, "."+f.Name+".*")
	if err != nil {
		return "", false, err
	}
	_, werr := tmp.Write(f.Data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", false, werr
	}
	return path, statErr == nil, nil
}
