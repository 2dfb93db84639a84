// Package syntax translates privnotes cells and scripts (Go plus a small
// privacy DSL) into plain Go for the interpreter, and describes the DSL's
// functions. It is pure: no I/O, no interpreter, no privacy state.
//
// # The DSL forms and their translation
//
// Budget blocks. A statement
//
//	budget eps=1.0, delta=1e-6 {      (the comma is optional; delta may be omitted: 0)
//	    pca := private_pca(ds, k=3, eps=0.7)
//	}
//
// becomes, on the same lines,
//
//	__pn_budget_begin(1.0, 1e-6, "<cell>:1:1");
//	    pca := private_pca(ds, __pn_kw("k", 3), __pn_kw("eps", 0.7))
//	__pn_budget_end()
//
// so names assigned inside stay visible after the block (no Go scope is
// opened). The header must be on one line, its numbers literals, eps
// first-or-second, each at most once. `budget` is contextual: it starts a
// block only at the start of a statement and when followed by an
// identifier (`budget eps`) or by a brace on its line or the next
// (`budget {`, reported as a header without its parameters), none of
// which is meaningful Go; `budget := 3`, `budget(x)`, `x := budget{}`,
// `s.budget` and "budget" in strings and comments are left alone.
//
// Nesting rule: blocks do not nest. A block inside a block (or inside a
// %%budget cell) is a translation error; a block entered at run time while
// another is open (a function holding a block called from a block) is a
// run-time error of __pn_budget_begin. A return or goto inside a block
// (outside a function literal) is refused because it would skip the end
// call; the runtime also closes any block left open when a cell ends
// (an error or a break), so a block never outlives its cell.
//
// The cell magic %%budget eps=E delta=D on the first non-blank line makes
// the whole cell one block: the line becomes __pn_budget_begin(...) and
// a final line __pn_budget_end() is appended. The engine displays the
// value of a cell's final expression statement, so when the cell ends in
// an expression that certainly has one value (any expression but a call,
// or a call of a DSL function with a result), the expression is computed
// inside the block and remains the final statement:
//
//	%%budget eps=1 delta=1e-6        __pn_budget_begin(1.0, 1e-06, "1:1");
//	x := 41                          x := 41
//	private_count(ds, eps=1).Value   __pn_last := private_count(ds, __pn_kw("eps", 1)).Value
//	                                 __pn_budget_end(); __pn_last
//
// Other final calls (which may have no value, or several) stay before the
// end call and are not displayed.
//
// Keyword arguments. In a call of a DSL function (see Funcs), arguments
// after the positional ones are keywords: `k=3` becomes `__pn_kw("k", 3)`;
// the value is any Go expression. The runtime's DSL functions are variadic
// over the keyword type __pn_kw returns. Checked here: positional arguments
// before keywords, the number of positional arguments, duplicate and
// unknown keywords (the error lists the valid ones), required keywords,
// literal values of enumerated keywords (method="...") and literal
// eps/delta ranges; a function whose delta is Required (its mechanisms add
// Gaussian noise) needs delta > 0. `name=value` in the call of any other
// function is an error.
//
// Line magics. A line whose first non-blank character is % (outside
// strings and comments) is a magic: %ledger [args], %budget [args],
// %datasets, %help [NAME]. It becomes the statement
// __pn_magic("ledger", "args") on the same line, so magics run in order
// with the cell's statements; Program.Magics also lists them so a front end
// may answer some itself.
//
// Reserved names. Identifiers starting with __pn are reserved for the
// translation and refused in user code, and DSL function names cannot be
// declared (`private_pca := ...`, `func dataset(...)`, `var show ...`): a
// cell cannot redefine what the runtime provides.
//
// # Runtime contract
//
// The runtime (dsl/runtime) must provide, importable bare:
//
//	func __pn_budget_begin(eps, delta float64, pos string)
//	func __pn_budget_end()
//	func __pn_kw(name string, value any) <keyword type>
//	func __pn_magic(name, args string)
//	every function of Funcs, as func(positional..., kw ...<keyword type>) Result
//
// # Static costs
//
// Translate also reports, per block, the private calls it contains with
// their literal eps and delta and their dataset when it is a literal
// dataset("name") or a variable assigned from one earlier in the cell.
// When the dataset argument is a plain variable of an earlier cell that
// nothing in the cell before the call can rebind (see Call.DatasetVar),
// the variable's name is reported so that the runtime can read its value
// before the cell runs.
// A call is Static when its eps and delta are literals (or delta is
// omitted) and it runs exactly once per cell: at the block's own level,
// not inside a loop, branch or function literal, and the block itself at
// the top level of the cell. The runtime's pre-check sums static costs;
// the run-time charge is authoritative for everything.
//
// Positions. Errors carry the user's 1-based line and column (column in
// Unicode code points). The translation keeps lines: output line i comes
// from input line i, and Program.Lines maps an output (line, byte column),
// as the interpreter reports them, back to the user's (line, column);
// positions past the user's text map to the end of its last non-blank
// line. A last statement cut short by the end of the cell (`y := 1 +`)
// is reported here, after its last token, as an unexpected end of input:
// Go would report it at the interpreter's wrapper, past the cell.
package syntax
