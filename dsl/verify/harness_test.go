package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/runtime"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The tests run real cells through the DSL runtime on a temporary state
// directory, so the ledger, its stored releases and the outputs' receipts
// are the ones the kernel makes; the notebook is assembled from the
// cells' displays as a front end saves them.

// nullOutput discards a cell's streams and displays.
type nullOutput struct{}

func (nullOutput) Stream(string, string)  {}
func (nullOutput) Display(engine.Display) {}
func (nullOutput) ClearOutput(bool)       {}

// session executes cells on a state directory and keeps their results
// as notebook cells.
type session struct {
	t     *testing.T
	dir   string
	rt    *runtime.Runtime
	eng   *interp.Engine
	cells []Cell
}

// newState registers the datasets a session uses: "people" (ε=2 under
// basic composition), "others" (ε=1) and, with zcdp, "zc" (ε=4 under
// zCDP).
func newState(t *testing.T, zcdp bool) string {
	t.Helper()
	dir := t.TempDir()
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var csv strings.Builder
	csv.WriteString("age,income\n")
	for i := range 60 {
		csv.WriteString(string(rune('1'+i%9)) + "0," + string(rune('1'+i%7)) + "00\n")
	}
	for _, ds := range []struct {
		name string
		eps  float64
		mode accounting.Mode
	}{{"people", 2, accounting.ModeBasic}, {"others", 1, accounting.ModeBasic}, {"zc", 4, accounting.ModeZCDP}} {
		if ds.name == "zc" && !zcdp {
			continue
		}
		tab, err := dataset.Read(strings.NewReader(csv.String()), dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Register(context.Background(), ledger.Registration{Name: ds.name, Table: tab, Budget: accounting.Budget{Eps: ds.eps, Delta: 1e-5},
			Accountant: ds.mode, Clip: 100, Source: "test", Bounds: map[string][2]float64{"age": {0, 100}, "income": {0, 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newSession(t *testing.T, dir string) *session {
	t.Helper()
	rt, err := runtime.New(runtime.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := interp.New(interp.Config{StateDir: dir, Plugin: rt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &session{t: t, dir: dir, rt: rt, eng: eng}
}

// cell executes code and appends it to the notebook with its result as
// an execute_result output (none if the cell shows nothing).
func (s *session) cell(code string) Cell {
	s.t.Helper()
	n := len(s.cells) + 1
	res := s.eng.Execute(context.Background(), engine.ExecuteRequest{Code: code, CellID: "c" + string(rune('0'+n)), ExecutionCount: n}, nullOutput{})
	if res.Error != nil {
		s.t.Fatalf("cell %d failed: %s: %s\n%s", n, res.Error.Name, res.Error.Value, code)
	}
	c := Cell{Type: "code", ExecutionCount: &n}
	if res.Value != nil {
		c.Outputs = append(c.Outputs, output(s.t, *res.Value))
	}
	s.cells = append(s.cells, c)
	return c
}

// output is a display as a saved notebook holds it: through JSON, as the
// kernel sends it, with multi-line text split into a list of lines as
// nbformat writes it.
func output(t *testing.T, d engine.Display) Output {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	o.Type = "execute_result"
	for mime, raw := range o.Data {
		var s string
		if json.Unmarshal(raw, &s) != nil || !strings.Contains(s, "\n") {
			continue
		}
		o.Data[mime] = mustJSON(t, strings.SplitAfter(s, "\n"))
	}
	return o
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *session) notebook() *Notebook {
	return &Notebook{Cells: clone(s.t, s.cells)}
}

// clone deep-copies cells, so a test can tamper with its own copy.
func clone(t *testing.T, cells []Cell) []Cell {
	t.Helper()
	var out []Cell
	if err := json.Unmarshal(mustJSON(t, cells), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// verified is the state directory's ledger exported and verified, as
// `privnotes notebook verify --ledger` loads it.
func verified(t *testing.T, dir string) *ledger.Verified {
	t.Helper()
	st, err := ledger.OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	if err := st.Export(&buf, true); err != nil {
		t.Fatal(err)
	}
	doc, err := ledger.ReadExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.VerifyExport(doc)
	if err != nil {
		t.Fatal(err)
	}
	return led
}
