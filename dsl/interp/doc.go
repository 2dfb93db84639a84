// Package interp is the language engine that runs privnotes cells: Go, as
// the yaegi interpreter implements it, plus the privacy DSL plugged in
// through the Plugin interface. It implements engine.Engine for the Jupyter
// kernel's worker, the REPL and the script runner.
//
// # Cells
//
// A cell is translated by the plugin (DSL forms, magics), then split into
// chunks that yaegi can evaluate one by one: consecutive imports,
// consecutive other declarations (func, type, var, const) and consecutive
// statements. Each chunk is evaluated with the other chunks' text blanked
// out, so line and column numbers of the interpreter are positions in the
// translated cell, which the plugin maps back to the user's cell. Imports
// are checked against the allowlist (package stdlib) before anything runs
// and imported once per session. If the last statement of the cell is an
// expression, its value is the cell's result (execute_result), unless it
// is a call of fmt.Print*, print or println. A script's request
// (ExecuteRequest.Transcript) displays the value of every such top-level
// expression statement instead, in order: each runs as a chunk of its own
// (isolateShown), as the final expression always does.
//
// # The Go subset
//
// yaegi v0.16.1 implements Go 1.22 with gaps. Not available in cells:
// the builtins min, max and clear (use math.Min/math.Max or an if);
// range over an integer (write for i := 0; i < n; i++) and range over a
// function (iterators); type inference of generic functions from function
// arguments (write Map[int, string](xs, f)); the packages iter and unique.
// Redefining a function does not rebind earlier callers; redefining a type
// or a method is silently ignored by yaegi. The engine reports range over
// an integer or a function, calls of min/max/clear and other undefined
// names before the cell runs, with an explanation, instead of yaegi's
// crash ("nil type", which yaegi also logs to the process's stderr when the
// static check cannot see the integer) or its misleading "constant
// definition loop".
//
// Other yaegi behaviours the engine works around or that users may meet:
//   - A top-level statement func(){...}() is re-run by yaegi at every later
//     evaluation; the engine binds such literals to a variable first.
//   - The value of a chunk returned by yaegi is stale for calls without
//     results; the engine takes the final expression's value(s) through a
//     compiled function instead (so f() with two results shows "(a, b)").
//   - Methods of types defined in cells are invisible to compiled code:
//     show(v) and the cell's value use fmt's %v for them, not their HTML
//     or String methods. Call html(v.HTML()) explicitly.
//   - A panic in a goroutine started by a cell with `go func(...){...}(...)`
//     is recovered: the engine adds a deferred recovery at the start of
//     the literal's body (arguments are still evaluated by the go
//     statement), and the panic is reported as stderr text of the running
//     cell, or of the next cell if none runs; the session keeps its
//     variables. A panic in a goroutine started as `go f(x)` with another
//     callee (write go func() { f(x) }() instead, minding when x is
//     evaluated), a stack overflow or an out of memory kill the process:
//     the kernel's worker process supervises that; the REPL and
//     "privnotes run" die with the process.
//   - Tracebacks name the functions a panic went through and the top-level
//     statement of the cell that was running; yaegi does not give the
//     panicking line inside functions.
//
// # Interrupts
//
// Cancelling the context of Execute stops the cell: yaegi stops interpreted
// code at its next step, and the engine then waits (at most
// Config.InterruptWait, 500 ms by default) until no goroutine started for
// the cell is left, counting them by a pprof goroutine label that
// goroutines inherit. yaegi has a flaw: a cancelled loop running on the
// global frame can resume when the next cell starts (the next evaluation
// resets the global frame's run id), and a cancel that arrives while yaegi
// still compiles is forgotten when execution starts. The engine prevents
// both: top-level statements containing loops run inside a function
// literal (a function frame keeps its own run id, so a cancelled loop stays
// cancelled), and a guard call before every top-level statement ends the
// goroutine of a cancelled or superseded chunk (runtime.Goexit, which
// yaegi's deferred recovery unwinds cleanly). TestNoZombieLoops proves it;
// with these measures removed it fails.
//
// A long compiled call (time.Sleep, a gonum routine, a DSL mechanism that
// ignores its context) cannot be preempted. Execute returns "Interrupted"
// once the wait bound has passed, saying so, and the next cell runs at
// once; that goroutine finishes its call in the background and then stops
// at its next interpreted step or guard, without running any further
// statement of the interrupted cell. Cancelling any cell also stops
// goroutines left running by earlier cells (yaegi shares one run id).
//
// # Goroutines and cells
//
// The same labels tell the plugin which cell a goroutine belongs to: each
// chunk runs under a label set of its own that every goroutine it starts,
// directly or not, inherits, and Cell.InCell reports whether the calling
// goroutine carries one of the running cell's (see cellgoroutines.go). The
// DSL runtime refuses a private call from a goroutine of an earlier cell.
//
// # Display
//
// Cells can call show, html, markdown, png, svg, show_json, new_display,
// update_display and clear_output bare (see Display). A value renders as a
// MIME bundle: text/plain always, plus what its methods HTML, Markdown,
// SVG, PNG, JSON or MIMEBundle give; gonum matrices render as HTML tables;
// Metadata() adds output metadata (the DSL's privacy receipt).
package interp
