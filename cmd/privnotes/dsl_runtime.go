package main

// The DSL runtime registers itself as the interpreter's plugin, the way
// database/sql drivers do, so every engine this binary builds (kernel
// worker, REPL, script runner) speaks the privacy DSL.
import _ "github.com/privnotes/privnotes/dsl/runtime"
