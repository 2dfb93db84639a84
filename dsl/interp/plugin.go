package interp

import (
	"context"
	"reflect"

	"github.com/privnotes/privnotes/dsl/engine"
)

// Plugin is the seam between the engine (this package: Go cells on yaegi)
// and the privacy DSL (translation, runtime, budget tracker). The engine
// knows nothing about budgets; the DSL knows nothing about yaegi, cell
// splitting, streams or interrupts. A nil Plugin gives plain Go cells.
//
// Order of calls for one cell:
//
//  1. Rewrite(src) translates the whole cell (DSL forms, magics) into Go.
//     An error stops the cell before anything runs.
//  2. The engine parses the Go, splits it into chunks and checks imports;
//     a syntax or import error stops the cell before anything runs.
//  3. Begin(ctx, cell) is the static pre-check: an error refuses the cell
//     whole, before any statement of it runs. Begin also tells the runtime
//     which context, output and cell id the following DSL calls belong to.
//  4. The chunks run in order (compiled DSL functions called from cells).
//  5. End(cell) is called exactly once after Begin returned nil, when the
//     cell has finished, failed or been interrupted (after the engine has
//     waited for the cell's goroutines, see Engine.Execute).
//
// Magics (%ledger, %help NAME, %%budget) are the plugin's: Rewrite turns
// each magic line into a call of one of its exported functions on the same
// line (BasicPlugin shows how), so magics run in order with the cell.
// Identifiers starting with __pn are reserved: the engine refuses them in
// user code, the plugin may use them in its translation and exports, and
// the engine's own start with __pni.
//
// Cancellation: the ctx given to Begin is the cell's; compiled DSL
// functions must check it between iterations. After an interrupt the
// engine waits a bounded time for the cell's goroutines and then calls
// End even if a compiled call is still running in the background, so the
// runtime must not assume End means "no DSL call of this cell is running".
//
// Begin and End are called from the goroutine that runs Execute, one cell
// at a time. Rewrite is also called by IsComplete, Names, Keywords and Doc
// by Complete and Inspect, possibly while a cell runs: they must be pure
// (or safe for concurrent use) and must not block on the running cell.
//
// Errors. An error returned by Rewrite or Begin, or a value a DSL function
// panics with, reaches the user as an engine.Error. Its name is
// ErrorName() when the value implements NamedError (e.g. "BudgetExceeded"),
// else "SyntaxError" for Rewrite, "Refused" for Begin and "RuntimeError"
// for a panic. A Rewrite error implementing Positioned is prefixed with the
// user's line:column. DSL functions that fail in a way the user should not
// handle in code (a refused charge) should panic with a NamedError: the cell
// stops there and the error is shown under its name; ordinary failures may
// be returned as error values like any Go function.
type Plugin interface {
	// Exports are the functions, variables and types callable bare from
	// cells (dot-imported, so lowercase names such as private_pca work),
	// keyed by name, as reflect values (a type T as reflect.ValueOf((*T)(nil))).
	// An export named like a display function of this package (show,
	// html, ...) replaces it. Called once, by New.
	Exports() map[string]reflect.Value

	// Rewrite translates a cell into Go for the interpreter. The result
	// must keep the cell's lines (Go line i comes from user line i, as far
	// as possible) and Program.Pos maps positions back.
	Rewrite(src string) (Program, error)

	// Begin runs the static pre-check of a translated cell and binds the
	// runtime to it. Returning an error refuses the cell whole.
	Begin(ctx context.Context, cell *Cell) error

	// End closes what Begin opened (open budget blocks, the cell binding).
	End(cell *Cell)

	// Names lists the DSL's function names, for completion.
	Names() []string
	// Keywords lists the keyword parameter names of the DSL function
	// name (nil when it has none or is unknown), for completion inside
	// the call's parentheses.
	Keywords(name string) []string
	// Doc returns the help of a DSL name (signature, parameters,
	// defaults, paper, what is released) as plain text, for inspect.
	Doc(name string) (text string, ok bool)
}

// ChoiceLister is an optional interface of a Plugin, checked with a type
// assertion: the allowed values of the string keyword parameter keyword of
// the DSL function fn (nil when any string goes or either is unknown).
// Completion inside that keyword's string literal offers them
// (private_pca(ds, method="| lists the methods). Like Keywords, it is
// called while a cell may run and must be pure.
type ChoiceLister interface {
	Choices(fn, keyword string) []string
}

// StringLister is an optional interface of a Plugin, checked with a type
// assertion: the strings that fit a string argument of the DSL function
// fn, for completion inside its literal (dataset("| lists the registered
// datasets, private_sum(ds, col="| the columns of ds). keyword is the
// keyword's name, or "" for the positional argument number pos (from 0).
// first is the value of the call's first argument when it is a variable
// of the session, read without running code (Cell.Lookup), else nil.
// Like Keywords, it is called while a cell may run: it must not block on
// the running cell, and may list only what is public (names a cell can
// see with %datasets or a handle's schema).
type StringLister interface {
	Strings(fn, keyword string, pos int, first any) []string
}

// Program is a cell translated to Go.
type Program struct {
	// Go is the translated source.
	Go string
	// Pos maps a position in Go (1-based line, 1-based byte column, as
	// go/token and yaegi report them) to the user's cell (1-based line,
	// 1-based column in Unicode code points). Nil means the identity on
	// lines and a byte-to-code-point conversion of columns.
	Pos func(line, col int) (userLine, userCol int)
	// Plan is opaque to the engine: whatever Rewrite wants Begin to see
	// (for example the statically known costs per budget block).
	Plan any
}

// Cell is the cell being run, as the plugin sees it in Begin and End.
type Cell struct {
	// ID and ExecutionCount come from the engine.ExecuteRequest.
	ID             string
	ExecutionCount int
	// Source is the user's text; Program its translation.
	Source  string
	Program Program
	// Out is the cell's output: the runtime may stream or display on it
	// from compiled code (progress, receipts). Safe for concurrent use.
	Out engine.Output
	// Lookup returns the value a global variable or constant of the
	// session (defined by an earlier cell) holds when the cell starts,
	// without running any code: the pre-check uses it to learn which
	// dataset a handle variable names. ok is false for an unknown name
	// and for a value the engine cannot hand out as is. It is valid during
	// Begin only; nil when the engine offers no lookup.
	Lookup func(name string) (value any, ok bool)
	// InCell reports whether the calling goroutine belongs to this cell
	// while it runs: it runs the cell's statements or was started,
	// directly or not, by one that does (by any go statement, or by a
	// compiled package). A goroutine an earlier cell started does not
	// belong to it, and after the cell ends none does. A DSL function
	// refuses to charge when it is false. Safe for concurrent use; nil
	// when the engine cannot tell (every goroutine is then taken for the
	// cell's).
	InCell func() bool
}

// NamedError is an error that reaches the user under its own name
// (engine.Error.Name), such as "BudgetExceeded".
type NamedError interface {
	error
	ErrorName() string
}

// Positioned is an error that knows its position in the user's cell.
type Positioned interface {
	error
	Position() (line, col int)
}
