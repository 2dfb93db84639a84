package interp

import (
	"context"
	"fmt"
	"reflect"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
)

// cellProbe is a plugin whose cells can ask Cell.InCell of the running
// cell (in_cell) and open gates the test or another cell waits on.
type cellProbe struct {
	gatePlugin
	extra map[string]reflect.Value // more exports, set before New
	mu    sync.Mutex
	cell  *Cell
}

func (p *cellProbe) Begin(ctx context.Context, c *Cell) error {
	p.mu.Lock()
	p.cell = c
	p.mu.Unlock()
	return p.gatePlugin.Begin(ctx, c)
}

func (p *cellProbe) inCell() bool {
	p.mu.Lock()
	c := p.cell
	p.mu.Unlock()
	return c != nil && c.InCell()
}

func (p *cellProbe) Exports() map[string]reflect.Value {
	ex := p.gatePlugin.Exports()
	ex["in_cell"] = reflect.ValueOf(p.inCell)
	ex["open"] = reflect.ValueOf(p.open)
	for k, v := range p.extra {
		ex[k] = v
	}
	return ex
}

func newProbeEngine(t *testing.T, extra map[string]reflect.Value) (*Engine, *cellProbe) {
	t.Helper()
	p := &cellProbe{gatePlugin: gatePlugin{gates: map[string]chan struct{}{}}, extra: extra}
	e, err := New(Config{Plugin: p})
	if err != nil {
		t.Fatal(err)
	}
	return e, p
}

func runOK(t *testing.T, e *Engine, code string) string {
	t.Helper()
	out := &recOutput{}
	res := e.Execute(context.Background(), engineReq(code), out)
	if res.Error != nil {
		t.Fatalf("cell failed: %s: %s\ncell:\n%s", res.Error.Name, res.Error.Value, code)
	}
	return out.stdout()
}

// A goroutine belongs to the cell whose statements started it, directly
// or not, by any form of go statement; not to a later cell, and after its
// cell ended to none.
func TestInCell(t *testing.T) {
	sink := make(chan bool, 1)
	e, p := newProbeEngine(t, map[string]reflect.Value{"to_test": reflect.ValueOf(func(v bool) { sink <- v })})
	out := runOK(t, e, `fmt.Println(in_cell())
nested := make(chan bool)
go func() { go func() { nested <- in_cell() }() }()
fmt.Println(<-nested)
func report(c chan bool) { c <- in_cell() }
named := make(chan bool)
go report(named)
fmt.Println(<-named)
late := make(chan bool, 1)
go func() { gate("a"); late <- in_cell() }()
go func() { gate("b"); to_test(in_cell()) }()`)
	if out != "true\ntrue\ntrue\n" {
		t.Errorf("the cell's own goroutines: %q, want three true", out)
	}
	out = runOK(t, e, `open("a")
fmt.Println(<-late)
mine := make(chan bool)
go report(mine)
fmt.Println(<-mine)`)
	if out != "false\ntrue\n" {
		t.Errorf("an earlier cell's goroutine, then this cell's goroutine of an earlier cell's function: %q, want false, true", out)
	}
	// No cell runs: the goroutine of the first cell, and the test's own.
	p.open("b")
	if <-sink {
		t.Error("a goroutine of an ended cell belongs to a cell while none runs")
	}
	if p.inCell() {
		t.Error("the test's goroutine belongs to a cell")
	}
}

// The engine forgets a cell's label sets when it ends: none is kept after
// many cells that start goroutines, interrupted or failing ones included.
func TestInCellNoLeak(t *testing.T) {
	e, _ := newProbeEngine(t, nil)
	for i := 0; i < 300; i++ {
		code := fmt.Sprintf(`x%d := make(chan bool)
go func() { x%d <- in_cell() }()
y := <-x%d
if !y { panic("not in cell") }`, i, i, i)
		if i%3 == 0 {
			code += "\nvar z []int\n_ = z[5]" // a failing cell
		}
		out := &recOutput{}
		res := e.Execute(context.Background(), engineReq(code), out)
		if i%3 != 0 && res.Error != nil {
			t.Fatalf("cell %d: %s: %s", i, res.Error.Name, res.Error.Value)
		}
		if i%3 == 0 && (res.Error == nil || strings.Contains(res.Error.Value, "not in cell")) {
			t.Fatalf("cell %d: want the index error, got %+v", i, res.Error)
		}
		e.cells.mu.Lock()
		n := len(e.cells.sets)
		e.cells.mu.Unlock()
		if n != 0 {
			t.Fatalf("after cell %d the engine keeps %d label sets", i, n)
		}
	}
}

// BenchmarkInCell measures the check a private call pays, on a goroutine
// of the running cell (a hit), against a bare mutex lock and unlock as the
// baseline.
func BenchmarkInCell(b *testing.B) {
	var c cellLabels
	b.Run("baseline-mutex", func(b *testing.B) {
		for b.Loop() {
			c.mu.Lock()
			c.mu.Unlock()
		}
	})
	pprof.Do(context.Background(), pprof.Labels(goroutineLabel, "bench"), func(context.Context) {
		c.add()
		b.Run("has", func(b *testing.B) {
			// b.Run's goroutine is created here and inherits the labels.
			if !c.has() {
				b.Fatal("the benchmark goroutine is not in the cell")
			}
			for b.Loop() {
				c.has()
			}
		})
	})
}
