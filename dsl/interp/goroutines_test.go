package interp

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// goPanicCells run in a child process (a panic that escapes would end the
// test binary): a panic in a goroutine started by a cell is reported on
// the cell's stderr, or on the next cell's when the cell has ended, and
// the session keeps its variables.
func runGoPanicCells(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(code string, count int) *recOutput {
		out := &recOutput{}
		req := engineReq(code)
		req.ExecutionCount = count
		if res := e.Execute(context.Background(), req, out); res.Error != nil {
			t.Fatalf("cell %d failed: %s: %s", count, res.Error.Name, res.Error.Value)
		}
		return out
	}
	stderr := func(o *recOutput) string {
		o.mu.Lock()
		defer o.mu.Unlock()
		var b strings.Builder
		for _, it := range o.items {
			if s, ok := strings.CutPrefix(it, "stderr:"); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	run(`import ("fmt"; "strings"; "time")`, 1)
	run(`x := 42`, 2)

	// A panic in interpreted code, while the cell still runs.
	out := run(`go func() { panic("boom") }()
time.Sleep(300 * time.Millisecond)`, 3)
	if got := stderr(out); !strings.Contains(got, "panic in a goroutine started by cell [3]: boom") {
		t.Errorf("cell 3 stderr %q", got)
	}
	// A panic inside a compiled call in the goroutine, with arguments.
	out = run(`go func(n int) { fmt.Println(strings.Repeat("x", n)) }(-1)
time.Sleep(300 * time.Millisecond)`, 4)
	if got := stderr(out); !strings.Contains(got, "panic in a goroutine started by cell [4]: strings: negative Repeat count") {
		t.Errorf("cell 4 stderr %q", got)
	}
	// A goroutine declared in a function, panicking after its cell ended:
	// reported on the next cell.
	run(`func later(d time.Duration) { go func() { time.Sleep(d); var m map[string]int; m["a"] = 1 }() }`, 5)
	run(`later(50 * time.Millisecond)`, 6)
	time.Sleep(300 * time.Millisecond)
	out = run(`fmt.Println(x)`, 7)
	if got := stderr(out); !strings.Contains(got, "panic in a goroutine started by cell [5]") || !strings.Contains(got, "nil map") {
		t.Errorf("cell 7 stderr %q", got)
	}
	if got := out.stdout(); got != "42\n" {
		t.Errorf("x after the panics = %q, want 42", got)
	}
	// A goroutine that ends normally reports nothing.
	out = run(`ch := make(chan int)
go func() { ch <- 1 }()
fmt.Println(<-ch)
time.Sleep(50 * time.Millisecond)`, 8)
	if got := stderr(out); got != "" || out.stdout() != "1\n" {
		t.Errorf("normal goroutine: stdout %q, stderr %q", out.stdout(), got)
	}
}

const goPanicChildEnv = "PRIVNOTES_TEST_GOPANIC_CHILD"

func TestGoroutinePanicRecovered(t *testing.T) {
	if os.Getenv(goPanicChildEnv) == "1" {
		runGoPanicCells(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoroutinePanicRecovered$", "-test.v")
	cmd.Env = append(os.Environ(), goPanicChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child engine died or failed (%v): a goroutine's panic escaped:\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestGoroutinePanicRecovered") {
		t.Fatalf("the child did not run the cells:\n%s", out)
	}
}
