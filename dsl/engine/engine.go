// Package engine is the contract between a front end (the Jupyter kernel,
// the REPL, the script runner) and the language engine that runs cells.
//
// It holds plain data types, so that a front end can drive an engine in
// the same process or across a pipe (the kernel's worker process) without
// knowing how the engine interprets code, and an engine can be written
// without knowing the Jupyter wire protocol; every type here marshals to
// JSON as is. The one function, ColoredTraceback, is the rendering that
// the front ends share (the kernel always, the REPL on a terminal).
package engine

import "context"

// MIMEBundle maps a MIME type ("text/plain", "text/html", "image/png",
// "application/json", ...) to its content: a string for text types, a
// base64 string for binary types, any JSON value for JSON types.
type MIMEBundle map[string]any

// Display is one rich output of a cell.
type Display struct {
	Data     MIMEBundle     `json:"data"`
	Metadata map[string]any `json:"metadata"`
	// DisplayID, when set, names the display so that a later Display with
	// Update set replaces it in place (update_display_data).
	DisplayID string `json:"display_id,omitempty"`
	Update    bool   `json:"update,omitempty"`
	// Page asks for Data to be shown in the front end's pager rather than
	// in the cell's output: help text (`%help NAME`, `NAME?`). A Jupyter
	// kernel returns it as the "page" payload of execute_reply, as
	// ipykernel does for `?`; a terminal front end prints its text/plain
	// like any display.
	Page bool `json:"page,omitempty"`
	// Progress, when set, marks the display as a computation's progress
	// (see ProgressReporter): a notebook shows Data (a progress bar that
	// updates in place); a terminal front end draws a progress line on
	// stderr instead of printing each step.
	Progress *Progress `json:"progress,omitempty"`
	// File, when set, is a file the cell offers to save (download(res,
	// "x.csv")): a notebook gets it as the link in Data and writes nothing;
	// a terminal front end (the REPL, privnotes run) writes it to a
	// directory of the user's and says where, instead of printing Data.
	File *File `json:"file,omitempty"`
}

// File is a file a cell offers to save: a released result, never data
// the privacy guarantee does not cover.
type File struct {
	// Name is a plain file name, without a directory.
	Name string `json:"name"`
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// Output receives what a cell produces while it runs, in order. A front
// end forwards it at once (iopub stream, display_data, clear_output), so
// long cells show progress. Implementations must be safe for concurrent
// use: cells may print from goroutines.
type Output interface {
	// Stream is text written to "stdout" or "stderr".
	Stream(name, text string)
	// Display is a rich output (display_data or update_display_data).
	Display(d Display)
	// ClearOutput clears the cell's output; with wait, only when the next
	// output arrives.
	ClearOutput(wait bool)
}

// ExecuteRequest is one cell to run.
type ExecuteRequest struct {
	Code         string `json:"code"`
	Silent       bool   `json:"silent"`
	StoreHistory bool   `json:"store_history"`
	// CellID identifies the cell for the ledger (the Jupyter cell id or
	// msg_id, the REPL line number, the script path and line).
	CellID string `json:"cell_id"`
	// ExecutionCount is the count the front end will report for this cell.
	ExecutionCount int `json:"execution_count"`
	// Transcript asks for the value of every top-level bare expression
	// statement (also one directly inside a budget block, which opens no
	// scope), displayed through Output in order as each one completes, the
	// way a script's transcript reads; Value stays nil. Without it only the
	// final expression's value is returned, as Value: a notebook cell shows
	// its last expression only, like IPython's. privnotes run sets it; the
	// kernel and the REPL do not.
	Transcript bool `json:"transcript,omitempty"`
}

// ExecuteResult is the outcome of one cell.
type ExecuteResult struct {
	// Value is the rendering of the cell's final expression, if it had one
	// and it was not silent; it becomes execute_result.
	Value *Display `json:"value,omitempty"`
	// Error is set when the cell failed; it becomes the error output and an
	// execute_reply with status "error".
	Error *Error `json:"error,omitempty"`
}

// Error is a failed cell: an error name such as "CompileError",
// "RuntimeError", "BudgetExceeded", "Interrupted" or "InterpreterRestarted",
// a message, and traceback lines (plain text, ANSI colour allowed).
type Error struct {
	Name      string   `json:"ename"`
	Value     string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

func (e *Error) Error() string { return e.Name + ": " + e.Value }

// Completion answers complete_request. Cursor and offsets count Unicode
// code points, as the Jupyter protocol does.
type Completion struct {
	Matches     []string       `json:"matches"`
	CursorStart int            `json:"cursor_start"`
	CursorEnd   int            `json:"cursor_end"`
	Metadata    map[string]any `json:"metadata"`
}

// Inspection answers inspect_request.
type Inspection struct {
	Found bool       `json:"found"`
	Data  MIMEBundle `json:"data"`
}

// Completeness answers is_complete_request: Status is "complete",
// "incomplete", "invalid" or "unknown"; Indent is the indentation of the
// next line when Status is "incomplete".
type Completeness struct {
	Status string `json:"status"`
	Indent string `json:"indent,omitempty"`
}

// Engine runs cells. Execute is called by one goroutine at a time;
// Complete, Inspect and IsComplete may be called while a cell runs and
// must not wait for it.
type Engine interface {
	// Execute runs one cell. Cancelling ctx interrupts it: the engine
	// returns an Error named "Interrupted" once no goroutine of the cell is
	// still running, and state from earlier cells survives.
	Execute(ctx context.Context, req ExecuteRequest, out Output) ExecuteResult
	Complete(code string, cursor int) Completion
	Inspect(code string, cursor int, detail int) Inspection
	IsComplete(code string) Completeness
}
