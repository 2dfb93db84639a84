// Package runtime is the privacy DSL's runtime: the functions a privnotes
// cell calls bare (dataset, filter, federate, the private_* functions of
// dsl/catalog.Funcs, remaining, download, plot_*, synth_*), the budget tracker that
// refuses a cell before it runs and charges every private call durably
// before the mechanism reads data, the results with their privacy
// receipts, and the magics (%ledger, %budget, %datasets, %help).
//
// A *Runtime implements dsl/interp's Plugin: Rewrite translates a cell with
// dsl/syntax, Begin runs the static pre-check of its budget blocks (a
// handle variable of an earlier cell is resolved through Cell.Lookup, which
// runs no code, unless the cell may rebind it first), the compiled DSL
// functions run inside the cell, and End closes what the cell left open.
// Receipts and errors name a block as the notebook shows it ("cell [4],
// block at line 1"); the ledger records the front end's full cell id.
//
// # Privacy rules the runtime enforces
//
//   - A private call is validated and planned from public facts only (the
//     dataset's public schema and the call's keywords); its exact cost
//     (an accounting.Event from the mechanism's plan) is charged to the
//     enclosing budget block and to the dataset's durable ledger in one
//     serialized step, and only then is the data loaded and the mechanism
//     run, with noise from noise.New() and the cell's context.
//   - Dataset handles hold an id only; every method and rendering shows
//     public schema, never the number of rows or any value.
//   - Errors raised after a charge never contain values derived from the
//     data: a mechanism failure, returned as an error or raised as a
//     panic (recovered in the calling goroutine), is reported with one
//     fixed message, so the message tells no more than the fact of
//     failure; the panic's value and stack go nowhere.
//   - A private call is charged to the running cell only from a goroutine
//     of that cell (interp.Cell.InCell); one that an earlier cell started
//     is refused with NoCell, so it never spends from a later cell's
//     budget block or under its id.
//   - Synthetic data from synth_* is public: private functions accept it,
//     report the cost they would have had, count it against the enclosing
//     budget block, and never touch the ledger.
//
// docs/dsl.md documents the language and docs/threat-model.md what is
// protected and the escape tests that check it.
package runtime
