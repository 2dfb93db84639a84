package interp

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/engine"
)

// goPanicCells run in a child process (a panic that escapes would end the
// test binary): a panic in a goroutine started by a cell is reported on
// the cell's stderr, or on the next cell's when the cell has ended, and
// the session keeps its variables.
//
// The cells synchronise with the test through gate(name), a compiled call
// that blocks until the test opens the gate, instead of sleeping: on a
// loaded machine a goroutine may not run within any fixed sleep.
func runGoPanicCells(t *testing.T) {
	g := &gatePlugin{gates: map[string]chan struct{}{}}
	e, err := New(Config{Plugin: g})
	if err != nil {
		t.Fatal(err)
	}
	// start runs a cell in the background; finish waits for its result.
	start := func(code string, count int) (*recOutput, func()) {
		out := &recOutput{}
		req := engineReq(code)
		req.ExecutionCount = count
		done := make(chan engine.ExecuteResult, 1)
		go func() { done <- e.Execute(context.Background(), req, out) }()
		return out, func() {
			t.Helper()
			select {
			case res := <-done:
				if res.Error != nil {
					t.Fatalf("cell %d failed: %s: %s", count, res.Error.Name, res.Error.Value)
				}
			case <-time.After(20 * time.Second): // a hang, not a timing bound
				t.Fatalf("cell %d did not finish within 20 s", count)
			}
		}
	}
	run := func(code string, count int) *recOutput {
		t.Helper()
		out, finish := start(code, count)
		finish()
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
	// until polls cond for up to 20 s (a hang bound, not a timing one).
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 20 s", what)
			}
		}
	}
	run(`import ("fmt"; "strings")`, 1)
	run(`x := 42`, 2)

	// A panic in interpreted code, while the cell still runs: the cell
	// waits at its gate until its stderr has the report.
	out, finish := start(`go func() { panic("boom") }()
gate("3")`, 3)
	until("report on cell 3", func() bool { return strings.Contains(stderr(out), "boom") })
	g.open("3")
	finish()
	if got := stderr(out); !strings.Contains(got, "panic in a goroutine started by cell [3]: boom") {
		t.Errorf("cell 3 stderr %q", got)
	}
	// A panic inside a compiled call in the goroutine, with arguments.
	out, finish = start(`go func(n int) { fmt.Println(strings.Repeat("x", n)) }(-1)
gate("4")`, 4)
	until("report on cell 4", func() bool { return strings.Contains(stderr(out), "Repeat") })
	g.open("4")
	finish()
	if got := stderr(out); !strings.Contains(got, "panic in a goroutine started by cell [4]: strings: negative Repeat count") {
		t.Errorf("cell 4 stderr %q", got)
	}
	// A goroutine declared in a function, panicking after its cell ended:
	// reported on the next cell. The goroutine passes its gate only after
	// cell 6 has returned, and cell 7 starts once the report is pending.
	run(`func later() { go func() { gate("6"); var m map[string]int; m["a"] = 1 }() }`, 5)
	run(`later()`, 6)
	g.open("6")
	until("pending report", func() bool {
		e.gp.mu.Lock()
		defer e.gp.mu.Unlock()
		return len(e.gp.pending) > 0
	})
	out = run(`fmt.Println(x)`, 7)
	if got := stderr(out); !strings.Contains(got, "panic in a goroutine started by cell [5]") || !strings.Contains(got, "nil map") {
		t.Errorf("cell 7 stderr %q", got)
	}
	if got := out.stdout(); got != "42\n" {
		t.Errorf("x after the panics = %q, want 42", got)
	}
	// A goroutine that ends normally reports nothing (the cell waits for
	// it to return, then for its deferred recovery to have run).
	out = run(`ch := make(chan int)
go func() { ch <- 1 }()
fmt.Println(<-ch)`, 8)
	until("cell 8's goroutine to end", func() bool { return countGoroutines(e.label+"/") == 0 })
	if got := stderr(out); got != "" || out.stdout() != "1\n" {
		t.Errorf("normal goroutine: stdout %q, stderr %q", out.stdout(), got)
	}
	e.gp.mu.Lock()
	pending := e.gp.pending
	e.gp.mu.Unlock()
	if len(pending) != 0 {
		t.Errorf("a goroutine that ended normally left a report: %q", pending)
	}
}

// gatePlugin exports gate(name), a compiled call that blocks until the
// test calls open(name).
type gatePlugin struct {
	BasicPlugin
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (p *gatePlugin) gate(name string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.gates[name]
	if !ok {
		ch = make(chan struct{})
		p.gates[name] = ch
	}
	return ch
}

func (p *gatePlugin) open(name string) { close(p.gate(name)) }

func (p *gatePlugin) Exports() map[string]reflect.Value {
	ex := p.BasicPlugin.Exports()
	ex["gate"] = reflect.ValueOf(func(name string) { <-p.gate(name) })
	return ex
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
