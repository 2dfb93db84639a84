package main

import (
	"bytes"
	"context"
	"github.com/peterh/liner"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
)

// refusingDSL stands in for the DSL: cells mentioning overspend() are
// refused by the static pre-check; spend() is a bare DSL function.
type refusingDSL struct{ interp.BasicPlugin }

type refusal struct{}

func (refusal) Error() string     { return "requested ε=5 > remaining ε=1 (spent 0)" }
func (refusal) ErrorName() string { return "BudgetExceeded" }

func (d *refusingDSL) Exports() map[string]reflect.Value {
	ex := d.BasicPlugin.Exports()
	ex["overspend"] = reflect.ValueOf(func() {})
	return ex
}

func (d *refusingDSL) Begin(ctx context.Context, c *interp.Cell) error {
	if strings.Contains(c.Source, "overspend()") {
		return refusal{}
	}
	return d.BasicPlugin.Begin(ctx, c)
}

// withTestEngine makes repl and run use the refusing DSL.
func withTestEngine(t *testing.T) {
	t.Helper()
	old := newCellEngine
	newCellEngine = func(string) (engine.Engine, error) {
		return interp.New(interp.Config{Plugin: &refusingDSL{}})
	}
	t.Cleanup(func() { newCellEngine = old })
}

func TestReplPiped(t *testing.T) {
	withTestEngine(t)
	in := strings.NewReader(`x := 20
func add(a, b int) int {
	return a + b
}

add(x, 1)
for i := 0; i < 2; i++ {
	fmt.Println("line", i)
}
show(mat.NewDense(1, 2, []float64{1, 2}))
%help math.Sqrt
png(image.NewGray(image.Rect(0, 0, 4, 3)))
undefinedThing
x * 2
`)
	var out, errb bytes.Buffer
	code := runRepl([]string{"--state", t.TempDir()}, in, &out, &errb)
	want := []string{"21\n", "line 0\nline 1\n", "1×2\n", "func math.Sqrt(float64) float64", "[image/png display]", "40\n"}
	pos := 0
	for _, w := range want {
		i := strings.Index(out.String()[pos:], w)
		if i < 0 {
			t.Fatalf("stdout lacks %q after offset %d:\n%s", w, pos, out.String())
		}
		pos += i + len(w)
	}
	if !strings.Contains(errb.String(), "NameError: line 1:1: undefined: undefinedThing") {
		t.Errorf("stderr = %q", errb.String())
	}
	if code != 0 {
		t.Errorf("exit status %d: the last cell succeeded", code)
	}
}

func TestReplPipedCellMagicAndFailureStatus(t *testing.T) {
	withTestEngine(t)
	var out, errb bytes.Buffer
	// the last cell fails: status 1; an unterminated brace is submitted
	// at the blank line and reported
	code := runRepl([]string{"--state", t.TempDir()}, strings.NewReader("y := 1\nif y > 0 {\n\n\n"), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "SyntaxError") {
		t.Fatalf("status %d, stderr %q", code, errb.String())
	}
}

func TestReplImagesSaved(t *testing.T) {
	withTestEngine(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	runRepl([]string{"--state", t.TempDir(), "--images", dir}, strings.NewReader("png(image.NewGray(image.Rect(0, 0, 4, 3)))\n"), &out, &errb)
	b, err := os.ReadFile(filepath.Join(dir, "display-001.png"))
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("image not saved as PNG: %v (stdout %q)", err, out.String())
	}
}

func TestRunExitStatus(t *testing.T) {
	withTestEngine(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, src string
		status    int
		stdout    string
		stderr    string
	}{
		{"ok.go", "import \"fmt\"\nfunc sq(x float64) float64 { return x * x }\nfmt.Println(sq(3))", 0, "9\n", ""},
		{"value.go", "s := 0\nfor i := 1; i <= 4; i++ {\n\ts += i\n}\ns", 0, "10\n", ""},
		{"compile.go", "x := 1\n\ny := x + nope", exitError, "", "compile.go: NameError: line 3:10: undefined: nope"},
		{"panic.go", "fmt.Println(\"first\")\nvar a []int\n_ = a[2]\nfmt.Println(\"never\")", exitError, "first\n", "RuntimeError: panic:"},
		{"refused.go", "fmt.Println(\"side effect\")\noverspend()", exitRefused, "", "refused.go: BudgetExceeded: requested ε=5"},
		{"import.go", "import \"os\"\nos.Exit(0)", exitError, "", "ImportError: line 1:8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			p := write(tt.name, tt.src)
			code := runScript([]string{p, "--state", t.TempDir()}, nil, &out, &errb)
			if code != tt.status {
				t.Fatalf("status %d, want %d (stderr %q)", code, tt.status, errb.String())
			}
			if out.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", out.String(), tt.stdout)
			}
			if !strings.Contains(errb.String(), tt.stderr) || (tt.stderr == "" && errb.Len() > 0) {
				t.Errorf("stderr %q, want it to contain %q", errb.String(), tt.stderr)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := runScript([]string{filepath.Join(dir, "missing.go")}, nil, &out, &errb); code != exitError || !strings.Contains(errb.String(), "no such file") {
		t.Errorf("missing file: status %d, %q", code, errb.String())
	}
	if code := runScript(nil, nil, &out, &errb); code != exitUsage {
		t.Errorf("no file: status %d", code)
	}
	if code := runScript([]string{"-"}, strings.NewReader("1 + 2"), &out, &errb); code != 0 || !strings.HasSuffix(out.String(), "3\n") {
		t.Errorf("stdin script: status %d, stdout %q", code, out.String())
	}
}

// TestRunThroughDispatch runs the real command table (and the real
// engine factory, with whatever DSL the binary links).
func TestRunThroughDispatch(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.go")
	if err := os.WriteFile(p, []byte("fmt.Println(strings.ToUpper(\"ok\"))"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"run", "--state", t.TempDir(), p}, &out, &errb); code != 0 || out.String() != "OK\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if _, ok := commands["repl"]; !ok {
		t.Fatal("repl command not registered")
	}
}

// TestRunInterrupted: Ctrl-C stops a script with status 130 and a message
// about the script (not about a session's variables).
func TestRunInterrupted(t *testing.T) {
	withTestEngine(t)
	p := filepath.Join(t.TempDir(), "loop.pn")
	if err := os.WriteFile(p, []byte("for {\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The test's own handler keeps a SIGINT sent before runScript installs
	// its handler from killing the test binary; SIGINT is sent until the
	// script ends.
	keep := make(chan os.Signal, 16)
	signal.Notify(keep, os.Interrupt)
	defer signal.Stop(keep)
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() { done <- runScript([]string{p}, nil, &out, &errb) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case code := <-done:
			if code != exitInterrupted {
				t.Errorf("status %d, want %d", code, exitInterrupted)
			}
			msg := errb.String()
			if !strings.Contains(msg, "Interrupted: the script was stopped") || strings.Contains(msg, "variables") {
				t.Errorf("stderr %q", msg)
			}
			return
		case <-tick.C:
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the script was not interrupted")
		}
	}
}

// The REPL writes its history after every entry (saveHistory), whole or
// not at all, so an abrupt end keeps what was typed.
func TestSaveHistory(t *testing.T) {
	ln := liner.NewLiner()
	defer ln.Close()
	path := filepath.Join(t.TempDir(), "repl_history")
	ln.AppendHistory("x := 1")
	saveHistory(ln, path)
	ln.AppendHistory("y := x + 1")
	saveHistory(ln, path)
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "x := 1\ny := x + 1\n" {
		t.Fatalf("history file %q, %v", b, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file was left: %v", err)
	}
	saveHistory(ln, "") // no file: nothing happens
}

// TestRunTranscript: privnotes run shows the value of every top-level
// bare expression in order, not only the last one: a private call on a
// middle line shows its released result (it was charged, so the user must
// see it), and every image value is saved under --images.
func TestRunTranscript(t *testing.T) {
	state, _ := registeredState(t)
	images := t.TempDir()
	script := "d := dataset(\"d\")\nprivate_count(d, eps=0.1)\nimage.NewGray(image.Rect(0, 0, 4, 3))\nn := 2\n" +
		"budget eps=0.1 {\n\tprivate_count(d, eps=0.1)\n}\nimage.NewGray(image.Rect(0, 0, 2, 2))\nfmt.Println(\"printed\")\nn + 1\n"
	var out, errb bytes.Buffer
	if code := runScript([]string{"-", "--state", state, "--images", images}, strings.NewReader(script), &out, &errb); code != 0 {
		t.Fatalf("status %d, stderr %q", code, errb.String())
	}
	want := []string{
		"private count ≈", "privacy receipt: count/laplace on d",
		"[image/png saved to " + filepath.Join(images, "display-001.png") + "]",
		"private count ≈", "privacy receipt: count/laplace on d",
		"[image/png saved to " + filepath.Join(images, "display-002.png") + "]",
		"printed\n3\n",
	}
	rest := out.String()
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stdout lacks %q (in order) in\n%s", w, out.String())
		}
		rest = rest[i+len(w):]
	}
	if rest != "" {
		t.Errorf("stdout ends in %q after the last value", rest)
	}
	for _, name := range []string{"display-001.png", "display-002.png"} {
		if b, err := os.ReadFile(filepath.Join(images, name)); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s not saved as PNG: %v", name, err)
		}
	}
}

// TestDownloadWritesFile: download(res, NAME) in privnotes run and the
// REPL writes NAME into --out DIR (default: the current directory) and
// says where; a file that is there already is kept and the status is 1,
// unless --overwrite, which says that it replaced the file.
func TestDownloadWritesFile(t *testing.T) {
	const script = "import \"gonum.org/v1/gonum/mat\"\nm := mat.NewDense(1, 2, []float64{1, 2})\ndownload(m, \"m.csv\")\n"
	const csv = "c1,c2\n1,2\n"
	tests := []struct {
		name      string
		repl      bool
		args      []string // after the state directory; OUT stands for the test's directory
		old       string   // content of OUT/m.csv before, if any
		status    int
		stdout    string // what stdout says, OUT for the test's directory
		stderr    string
		file      string // where the file goes, in OUT (default m.csv)
		content   string // of that file after
		inWorkDir bool   // OUT is the working directory and no --out is given
	}{
		{name: "run, default directory", inWorkDir: true, stdout: "m.csv: 10 bytes written to OUT/m.csv\n", content: csv},
		{name: "run, --out", args: []string{"--out", "OUT/sub"}, stdout: "m.csv: 10 bytes written to OUT/sub/m.csv\n", file: "sub/m.csv", content: csv},
		{name: "repl, --out", repl: true, args: []string{"--out", "OUT"}, stdout: "m.csv: 10 bytes written to OUT/m.csv\n", content: csv},
		{name: "run, file exists", args: []string{"--out", "OUT"}, old: "mine\n", status: exitError,
			stderr: "m.csv: not written: OUT/m.csv exists and was kept (--overwrite replaces it; or give download another name, or --out another directory)\n", content: "mine\n"},
		{name: "repl, file exists", repl: true, args: []string{"--out", "OUT"}, old: "mine\n", status: 1,
			stderr: "m.csv: not written: OUT/m.csv exists and was kept", content: "mine\n"},
		{name: "run, --overwrite", args: []string{"--out", "OUT", "--overwrite"}, old: "mine\n",
			stdout: "m.csv: 10 bytes written to OUT/m.csv (replaced the file that was there: --overwrite)\n", content: csv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.inWorkDir {
				t.Chdir(dir)
			}
			if tt.old != "" {
				if err := os.WriteFile(filepath.Join(dir, "m.csv"), []byte(tt.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"--state", t.TempDir()}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "OUT", dir))
			}
			var out, errb bytes.Buffer
			var code int
			if tt.repl {
				code = runRepl(args, strings.NewReader(script), &out, &errb)
			} else {
				code = runScript(append([]string{"-"}, args...), strings.NewReader(script), &out, &errb)
			}
			if code != tt.status {
				t.Errorf("status %d, want %d (stderr %q)", code, tt.status, errb.String())
			}
			if want := strings.ReplaceAll(tt.stdout, "OUT", dir); out.String() != want {
				t.Errorf("stdout %q, want %q", out.String(), want)
			}
			if want := strings.ReplaceAll(tt.stderr, "OUT", dir); !strings.HasPrefix(errb.String(), want) || (want == "" && errb.Len() > 0) {
				t.Errorf("stderr %q, want %q", errb.String(), want)
			}
			path := filepath.Join(dir, "m.csv")
			if tt.file != "" {
				path = filepath.Join(dir, tt.file)
			}
			if b, err := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("%s holds %q (%v), want %q", path, b, err, tt.content)
			}
		})
	}
}

// TestReplPythonisms: what a Python user types to get help or leave works
// in the REPL (TestReplForAPythonUser types it on a terminal), and a name
// the session defines itself keeps its meaning.
func TestReplPythonisms(t *testing.T) {
	tests := []struct {
		name, in string
		status   int
		stdout   string // a substring; "" for no output at all
		not      string
	}{
		{"exit with a status", "x := 1\nexit(3)\nx\n", 3, "", ""},
		{"quit()", "quit()\n1 + 1\n", 0, "", ""},
		{"exit after a failed cell", "nope\nexit\n", 0, "", ""},
		{"help(NAME)", "help(private_count)\n", 0, "private_count(ds, eps=<float>", "leaves the REPL"},
		{"help()", "help()\n", 0, "exit, quit() or Ctrl-D leaves the REPL", ""},
		{"a variable named help", "help := 5\nhelp\n", 0, "5\n", "DSL functions"},
		{"a function named exit", "func exit() { fmt.Println(\"mine\") }\nexit()\n1 + 1\n", 0, "mine\n2\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runRepl([]string{"--state", t.TempDir()}, strings.NewReader(tt.in), &out, &errb)
			if code != tt.status {
				t.Errorf("status %d, want %d (stderr %q)", code, tt.status, errb.String())
			}
			if tt.stdout == "" && out.Len() > 0 || !strings.Contains(out.String(), tt.stdout) || tt.not != "" && strings.Contains(out.String(), tt.not) {
				t.Errorf("stdout %q, want %q and not %q", out.String(), tt.stdout, tt.not)
			}
		})
	}
}
