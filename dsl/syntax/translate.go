package syntax

// The translator's API, its state and the driver of its phases.

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// Error is a translation error at the user's line and column (1-based;
// the column counts Unicode code points).
type Error struct {
	Line, Col int
	Msg       string
	// Incomplete is set when more input could make the text valid (an
	// unclosed budget block, call or raw string): a REPL reads another line.
	Incomplete bool
}

// Error formats as "line 3:14: msg", the prefix the engine uses for
// positions in a cell.
func (e *Error) Error() string { return fmt.Sprintf("line %d:%d: %s", e.Line, e.Col, e.Msg) }

// Position returns the user's line and column (dsl/interp's Positioned).
func (e *Error) Position() (line, col int) { return e.Line, e.Col }

// Program is a translated cell.
type Program struct {
	// Go is the cell as Go for the interpreter.
	Go string
	// Lines maps positions in Go back to the cell.
	Lines LineMap
	// Blocks are the budget blocks in source order (a %%budget cell is one
	// block with Cell set).
	Blocks []Block
	// Calls are the private calls outside any budget block.
	Calls []Call
	// Magics are the line and cell magics in source order.
	Magics []Magic
	// Keywords holds, for each private call (in Calls or in a block), every
	// keyword the call gives, mapped to its value when that is a literal (a
	// string, an int, a float64 or a bool; numbers possibly signed) and to
	// nil when it is an expression.
	Keywords map[CallPos]map[string]any
}

// Block is one budget block.
type Block struct {
	Eps, Delta float64 // the declared cap
	Line, Col  int     // position of `budget` (or of %%budget)
	Cell       bool    // a %%budget cell
	// Repeated is set when the block is inside braces (a loop, branch or
	// function body): it may run any number of times, so its calls are
	// not static.
	Repeated bool
	Calls    []Call
}

// Call is one call of a private DSL function.
type Call struct {
	Func string
	// Dataset is the dataset name when statically known, else "".
	Dataset string
	// DatasetVar is set when Dataset is "" and the dataset argument is a
	// plain identifier that nothing in the cell before the call can have
	// rebound: its value comes from an earlier cell, and the runtime's
	// pre-check may resolve it to the handle it holds when the cell
	// starts (interp.Cell.Lookup). It is "" when the identifier is
	// assigned, declared, has its address taken or is passed to anything
	// but a DSL function before the call, or when a function that is not
	// a DSL function or a Go builtin is called before it (it could assign
	// the variable): the call is then left to the run-time charge.
	DatasetVar string
	// Query is the literal query of a function that names its dataset in
	// its query's FROM (catalog.DatasetFromQuery), "" otherwise: the
	// runtime's pre-check finds the dataset, and plans the call, from it.
	Query      string
	Eps, Delta float64
	// Static: Eps and Delta are literals and the call runs exactly once per
	// execution of the cell. Otherwise Eps and Delta are the literals that
	// could be read (0 if none) and the run-time charge decides.
	Static bool
	// DeltaFromBlock is set when the call gives no delta and is
	// calibrated to its budget block's δ (Delta is the block's).
	DeltaFromBlock bool
	Line, Col      int
}

// CallPos is the position of a private call in its cell.
type CallPos struct{ Line, Col int }

// Magic is a line magic (%ledger ...) or the %%budget cell magic.
type Magic struct {
	Name string // "ledger", "budget", "datasets", "help"; "%budget" for the cell magic
	Args string // the rest of the line, trimmed
	Line int
}

// Translate translates one cell (or script). cellID names the cell in the
// positions passed to __pn_budget_begin ("cellID:line:col", e.g.
// "script.pn:3:1"); with an empty cellID they are "line:col".
// Program.Lines.Map has the signature of dsl/interp's Program.Pos.
func Translate(cellID, src string) (*Program, error) {
	t := &translator{cellID: cellID, src: src, prog: &Program{}, dsVars: map[string]string{}}
	if err := t.run(); err != nil {
		return nil, err
	}
	return t.prog, nil
}

type translator struct {
	cellID string
	src    string
	lines  []int // offsets of line starts
	toks   []tok
	edits  []edit
	prog   *Program
	dsVars map[string]string // variable -> dataset name, from x := dataset("name")

	magics    []magicLine
	cellBlock bool
	stack     []bracket
	block     *Block // the open block
	blockOff  int
	// blockWhere is the open block's position as __pn_budget_begin gets
	// it; it names the block to the runtime.
	blockWhere string
	blockIdx   int // index in stack of the open block's brace, -1 for a %%budget cell
}

func (t *translator) run() error {
	for i := 0; i < len(t.src); i++ {
		if i == 0 || t.src[i-1] == '\n' {
			t.lines = append(t.lines, i)
		}
	}
	if len(t.src) == 0 || t.src[len(t.src)-1] == '\n' {
		t.lines = append(t.lines, len(t.src))
	}
	blanked, err := t.findMagics()
	if err != nil {
		return err
	}
	if err := t.scan(blanked); err != nil {
		return err
	}
	if err := t.walk(); err != nil {
		return err
	}
	t.emit()
	return nil
}

// pos converts a byte offset of src into the user's line and code-point
// column.
func (t *translator) pos(off int) (int, int) {
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	if off > len(t.src) {
		off = len(t.src)
	}
	return i + 1, utf8.RuneCountInString(t.src[t.lines[i]:off]) + 1
}

func (t *translator) errAt(off int, format string, args ...any) *Error {
	l, c := t.pos(off)
	return &Error{Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
}

func (t *translator) lineStart(off int) int {
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	if i < 0 {
		return 0
	}
	return t.lines[i]
}

func (t *translator) posString(off int) string {
	l, c := t.pos(off)
	return fmt.Sprintf("%d:%d", l, c)
}

// AllCalls returns every private call of the cell, in blocks or not, in
// source order.
func (p *Program) AllCalls() []Call {
	var all []Call
	all = append(all, p.Calls...)
	for _, b := range p.Blocks {
		all = append(all, b.Calls...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Line != all[j].Line {
			return all[i].Line < all[j].Line
		}
		return all[i].Col < all[j].Col
	})
	return all
}
