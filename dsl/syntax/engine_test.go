package syntax_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/syntax"
)

// These tests run translations on the real engine (dsl/interp) with a
// stand-in runtime, to check what the user sees: which value a cell
// displays, where a syntax error points, and that private calls run
// inside their block. The stand-in's private_count returns 7 and records
// whether a block was open when it ran.

// KW is the stand-in's keyword argument.
type KW struct {
	Name  string
	Value any
}

type standIn struct {
	mu      sync.Mutex
	open    bool
	inBlock []bool // per private_count call: was a block open
}

func (p *standIn) Exports() map[string]reflect.Value {
	return map[string]reflect.Value{
		"__pn_budget_begin": reflect.ValueOf(func(eps, delta float64, pos string) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.open = true
		}),
		"__pn_budget_end": reflect.ValueOf(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.open = false
		}),
		"__pn_kw":    reflect.ValueOf(func(name string, v any) KW { return KW{name, v} }),
		"__pn_block": reflect.ValueOf(func(where string) KW { return KW{"block", where} }),
		"__pn_magic": reflect.ValueOf(func(name, args string) {}),
		"dataset":    reflect.ValueOf(func(name string) string { return name }),
		"private_count": reflect.ValueOf(func(ds any, kws ...KW) int {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.inBlock = append(p.inBlock, p.open)
			return 7
		}),
	}
}

func (*standIn) Rewrite(src string) (interp.Program, error) {
	p, err := syntax.Translate("", src)
	if err != nil {
		return interp.Program{}, err
	}
	return interp.Program{Go: p.Go, Pos: p.Lines.Map, Plan: p}, nil
}

func (*standIn) Begin(context.Context, *interp.Cell) error { return nil }

// End closes a block left open, as the runtime does.
func (p *standIn) End(*interp.Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = false
}

func (*standIn) Names() []string                   { return syntax.Names() }
func (*standIn) Keywords(string) []string          { return nil }
func (*standIn) Doc(string) (text string, ok bool) { return "", false }

type discard struct{}

func (discard) Stream(string, string)  {}
func (discard) Display(engine.Display) {}
func (discard) ClearOutput(bool)       {}

func newStandIn(t *testing.T) (*interp.Engine, *standIn) {
	t.Helper()
	p := &standIn{}
	e, err := interp.New(interp.Config{Plugin: p})
	if err != nil {
		t.Fatalf("interp.New: %v", err)
	}
	return e, p
}

func run(e *interp.Engine, code string) engine.ExecuteResult {
	return e.Execute(context.Background(), engine.ExecuteRequest{Code: code, CellID: "t"}, discard{})
}

func shown(res engine.ExecuteResult) string {
	if res.Value == nil {
		return ""
	}
	return fmt.Sprint(res.Value.Data["text/plain"])
}

// The final expression of a cell is displayed, in %%budget cells too, and
// a private call in it runs inside the block.
func TestEngineFinalExpression(t *testing.T) {
	e, p := newStandIn(t)
	cases := []struct {
		name, src string
		want      string // displayed text/plain; "" = nothing
		inBlock   []bool // private_count calls of the cell
	}{
		{"%%budget cell", "%%budget eps=0.2 delta=1e-6\nx := 41\nx + 1", "42", nil},
		{"%%budget cell with a trailing newline and comment", "%%budget eps=0.2 delta=1e-6\nx := 41\nx +\n\t2 // two\n", "43", nil},
		{"private call as the final expression", "%%budget eps=0.2 delta=1e-6\nprivate_count(dataset(\"a\"), eps=0.1)", "7", []bool{true}},
		{"private call inside the final expression", "%%budget eps=0.2 delta=1e-6\nprivate_count(dataset(\"a\"), eps=0.1) * 6", "42", []bool{true}},
		{"a value of another type than the last %%budget cell's", "%%budget eps=0.2\n\"forty-two\"", `"forty-two"`, nil},
		{"void call", "%%budget eps=0.2\nshow(1)", "", nil},
		{"call of a user function stays in the block", "%%budget eps=0.2\nfunc() int { return private_count(dataset(\"a\"), eps=0.1) }()", "", []bool{true}},
		{"block then expression", "budget eps=1 {\n\tx := private_count(dataset(\"a\"), eps=0.1)\n}\nx + 35", "42", []bool{true}},
		{"plain cell", "x := 41\nx + 1", "42", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p.mu.Lock()
			p.inBlock = nil
			p.mu.Unlock()
			res := run(e, tc.src)
			if res.Error != nil {
				t.Fatalf("%q: %s: %s", tc.src, res.Error.Name, res.Error.Value)
			}
			if got := shown(res); got != tc.want {
				t.Errorf("%q displays %q, want %q", tc.src, got, tc.want)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if fmt.Sprint(p.inBlock) != fmt.Sprint(tc.inBlock) {
				t.Errorf("%q: private calls in a block: %v, want %v", tc.src, p.inBlock, tc.inBlock)
			}
			if p.open {
				t.Errorf("%q: block still open after the cell", tc.src)
			}
		})
	}
}

// A syntax error at the end of the cell points at the cell's last line.
func TestEngineEndOfInput(t *testing.T) {
	e, _ := newStandIn(t)
	cases := []struct{ src, want string }{
		{"a := 1\nb := 2\ny := 1 +", "line 3:9: unexpected end of input"},
		{"a := 1\nb := 2\ny := 1 +\n\n", "line 3:9: unexpected end of input"},
		{"x := 1\nif x > 0\n", "line 2:9: unexpected end of input"},
		{"%%budget eps=1\ny := 1 +\n", "line 2:9: unexpected end of input"},
		{"x := 1\nx +\n%ledger", "line 3:1: a magic must be on its own line between statements: the statement before it is not complete"},
		{"budget {\n}", "line 1:1: malformed budget block: missing eps"},
		{"x := 1\n\n", ""},
	}
	for _, tc := range cases {
		res := run(e, tc.src)
		got := ""
		if res.Error != nil {
			got = res.Error.Value
			if strings.Contains(got, "__pn") || strings.Contains(got, "'}'") {
				t.Errorf("%q: the error shows the translation: %s", tc.src, got)
			}
		}
		if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("%q: error %q, want %q", tc.src, got, tc.want)
		}
	}
}
