// Package sqlplan plans the analyst's private SQL (privnotes issue 27):
// it checks a query against the accepted grammar, plans it from public
// facts only (the dataset's declared schema and the caller's key lists),
// and prints ONE rewritten SQL statement that computes, per group, the
// clamped aggregates the noise step needs.
//
// The input is the query's syntax tree as DuckDB's own parser writes it
// (json_serialize_sql; see snapshot.ParseSQL), so that what is planned is
// exactly what the engine would have understood, without a second SQL
// grammar to drift from it. The package itself is pure: it imports only
// the standard library, reads no data and runs nothing, so every refusal
// (an *Error naming the construct and what to do instead) happens before
// any charge or read.
//
// The three steps are:
//
//	q, err := sqlplan.Parse(astJSON)          // grammar: one SELECT over one dataset
//	p, err := q.Plan(schema, sqlplan.Options{}) // public facts: types, bounds, key domains
//	st, err := sqlplan.Print(p, sqlplan.DuckDB, tableRef)
//
// On user-level data (Schema.Unit, Options.MaxGroups and MaxRows) the
// plan bounds each unit's contribution (Bound) and the statement keeps
// each unit's first rows and groups in the snapshot's row order.
//
// The printed statement is built from the plan only, never from the
// analyst's text: identifiers are quoted and literals printed by the
// Dialect, so nothing the analyst typed reaches the engine verbatim.
package sqlplan
