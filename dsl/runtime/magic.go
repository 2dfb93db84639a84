package runtime

import (
	"context"
	"fmt"
	"html"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/syntax"
)

// magic runs a line magic (__pn_magic("ledger", "args")) and writes its
// text to the cell's stdout.
func (rt *Runtime) magic(name, args string) {
	b := rt.current("%" + name)
	args = strings.TrimSpace(args)
	var text, htm string
	switch name {
	case "ledger":
		text, htm = rt.ledgerText(args)
	case "budget":
		text, htm = rt.budgetText(args)
	case "datasets":
		text, htm = rt.datasetsText()
	case "help":
		// Help goes to the front end's pager (a Jupyter "page" payload),
		// not into the cell's output, as IPython's ? does.
		if b.out != nil {
			b.out.Display(engine.Display{Data: engine.MIMEBundle{"text/plain": strings.TrimRight(helpText(args), "\n")}, Page: true})
		}
		return
	default:
		panic(errorf(NameMagicError, "unknown magic %%%s; available: %s", name, strings.Join(magicNames(), ", ")))
	}
	if b.out == nil {
		return
	}
	if htm == "" {
		b.out.Stream("stdout", text)
		return
	}
	b.out.Display(engine.Display{Data: engine.MIMEBundle{"text/plain": text, "text/html": htm}})
}

// magicTable is a magic's output: rendered as aligned text and as HTML.
type magicTable struct {
	class  string
	header []string
	rows   [][]string
	// notes follow the table (one line each).
	notes []string
}

func (t *magicTable) text() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	for _, n := range t.notes {
		b.WriteString(n + "\n")
	}
	return b.String()
}

func (t *magicTable) html() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<table class=\"privnotes-%s\">\n<thead><tr>", t.class)
	for _, h := range t.header {
		fmt.Fprintf(&b, "<th style=\"text-align:left\">%s</th>", html.EscapeString(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range t.rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(&b, "<td style=\"text-align:left\">%s</td>", html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>")
	for _, n := range t.notes {
		fmt.Fprintf(&b, "\n<p>%s</p>", html.EscapeString(n))
	}
	return b.String()
}

// shortCell is how %ledger shows a cell id: the front end's id cut to 8
// characters, with the execution count ("e533ad7c[2]"); the ledger keeps
// the full id for audit (`privnotes ledger show`).
func shortCell(id string) string {
	base, count := id, ""
	if i := strings.LastIndexByte(id, '['); i > 0 && strings.HasSuffix(id, "]") {
		base, count = id[:i], id[i:]
	}
	if r := []rune(base); len(r) > 8 {
		base = string(r[:8])
	}
	return base + count
}

func magicNames() []string {
	var ns []string
	for n := range syntax.LineMagics {
		ns = append(ns, "%"+n)
	}
	sort.Strings(ns)
	return append(ns, "%%budget")
}

// ledgerAll is the argument of %ledger for every dataset's records.
const ledgerAll = "--all"

// ledgerText is %ledger's table. Without an argument it shows the
// records of the datasets this session opened (dataset("NAME")), not the
// whole state directory's, which holds other analysts' datasets too;
// "%ledger NAME" shows one dataset's and "%ledger --all" every record.
// Seal records are rows of their own, so the ids are the chain's, as
// `privnotes ledger verify` and the exports number them.
func (rt *Runtime) ledgerText(arg string) (string, string) {
	st := rt.mustStore()
	var keep func(dataset string) bool
	var scope string
	switch arg {
	case ledgerAll:
		keep = func(string) bool { return true }
	case "":
		opened := rt.openedDatasets()
		if len(opened) == 0 {
			return "this session has opened no dataset yet (dataset(\"NAME\")): %ledger NAME shows one dataset's records, %ledger --all every dataset's\n", ""
		}
		set := map[string]bool{}
		for _, n := range opened {
			set[n] = true
		}
		keep = func(n string) bool { return set[n] }
		scope = fmt.Sprintf("records of the dataset(s) this session opened: %s (%%ledger --all shows every dataset's, %%ledger NAME one dataset's)", strings.Join(opened, ", "))
	default:
		if _, err := st.Schema(arg); err != nil {
			panic(rt.unknownDataset("%ledger "+arg, arg))
		}
		keep = func(n string) bool { return n == arg }
	}
	// One snapshot for the rows, the releases and the head, so the head is
	// the last record of the chain the rows were read from even while
	// another process charges.
	var rows []ledger.Entry
	var rels []ledger.StoredRelease
	var head string
	err := st.View(context.Background(), func(v *ledger.View) error {
		all, err := v.Rows("")
		if err != nil {
			return err
		}
		for _, e := range all {
			if keep(e.Dataset) {
				rows = append(rows, e)
			}
		}
		if rels, err = v.Releases(""); err != nil {
			return err
		}
		_, head, err = v.Head()
		return err
	})
	if err != nil {
		panic(errorf(NameLedgerError, "%%ledger: %v", err))
	}
	if len(rows) == 0 {
		return "the ledger is empty\n", ""
	}
	t := &magicTable{class: "ledger", header: ledger.TableHeader}
	for _, e := range rows {
		row := e.TableRow()
		row[5] = shortCell(e.Cell)
		t.rows = append(t.rows, row)
	}
	if scope != "" {
		t.notes = append(t.notes, scope)
	}
	t.notes = append(t.notes, rt.ledgerNameNotes(rels, keep)...)
	t.notes = append(t.notes, fmt.Sprintf("head hash %s (keep a copy elsewhere to detect truncation; `privnotes ledger verify` checks the chain; `privnotes ledger show` prints full cell ids)", head))
	return t.text(), t.html()
}

// openedDatasets are the registered datasets this session opened with
// dataset("NAME"), sorted: what %ledger shows without an argument. A
// data service's datasets (dataset(NAME, server=...)) are charged in that
// service's ledger, not this one.
func (rt *Runtime) openedDatasets() []string {
	rt.mu.Lock()
	hs := make([]Dataset, 0, len(rt.byName))
	for _, h := range rt.byName {
		hs = append(hs, h)
	}
	rt.mu.Unlock()
	set := map[string]bool{}
	for _, h := range hs {
		if e, ok := h.entry(); ok && e.server == "" {
			set[e.name] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (rt *Runtime) budgetText(name string) (string, string) {
	st := rt.mustStore()
	var names []string
	if name != "" {
		names = []string{name}
	} else {
		scs, err := st.Datasets()
		if err != nil {
			panic(errorf(NameLedgerError, "%%budget: %v", err))
		}
		for _, sc := range scs {
			names = append(names, sc.Name)
		}
	}
	t := &magicTable{class: "budget", header: []string{"DATASET", "ACCOUNTANT", "BUDGET", "SPENT", "REMAINING", "CHARGES", "FILTER", "ONE MORE CALL FITS"}}
	for _, n := range names {
		s, err := st.Status(n)
		if err != nil {
			panic(rt.unknownDataset("%budget "+n, n))
		}
		fits, err := st.Fits(n)
		if err != nil {
			panic(errorf(NameLedgerError, "%%budget %s: %v", n, err))
		}
		t.rows = append(t.rows, []string{n, s.Mode, fmtBudget(s.Budget), fmtBudget(s.Spent), fmtBudget(s.Remaining), fmt.Sprint(s.Charges), s.Filter, fitsText(fits)})
		if held := ledger.HeldSummary(s); held != "" { // live reservations of federated calls hold budget too
			t.notes = append(t.notes, held)
		}
	}
	rt.mu.Lock()
	blk := rt.block
	rt.mu.Unlock()
	var open string
	if blk != nil {
		spent := "nothing spent yet"
		if blk.acc != nil {
			spent = "spent " + fmtBudget(blk.acc.Spent())
		}
		open = fmt.Sprintf("open %s: cap %s, %s", blk.scope(), fmtBudget(blk.cap), spent)
	}
	if len(names) == 0 {
		text := "no datasets are registered in this state directory\n"
		if open != "" {
			text += open + "\n"
		}
		return text, ""
	}
	if open != "" {
		t.notes = append(t.notes, open)
	}
	return t.text(), t.html()
}

func (rt *Runtime) datasetsText() (string, string) {
	scs, err := rt.mustStore().Datasets()
	if err != nil {
		panic(errorf(NameLedgerError, "%%datasets: %v", err))
	}
	// The state directory's path is not shown: a cell may not learn it
	// (threat model, escape 1). The kernel's and the REPL's banners name it.
	if len(scs) == 0 {
		return "no datasets are registered in this state directory (its path is in the kernel's or the REPL's banner; the data owner registers data there with `privnotes dataset add NAME ... --state DIR`)\n", ""
	}
	t := &magicTable{class: "datasets", header: []string{"NAME", "D", "UNIT", "N", "CLIP", "NEIGHBOUR", "ACCOUNTANT", "BUDGET", "COLUMNS"}}
	for _, sc := range scs {
		cols := strings.Join(append(append([]string(nil), sc.Columns...), categoricalNames(sc)...), ",")
		if r := []rune(cols); len(r) > 60 {
			cols = string(r[:57]) + "..."
		}
		n := "private" // the count of units: shown only when the owner declared it public
		if sc.PublicN > 0 {
			n = fmt.Sprint(sc.PublicN)
		}
		budget := fmtBudget(sc.Budget)
		if o := sc.Synthetic; o != nil {
			// Public rows: nothing to spend; say where they came from.
			budget = fmt.Sprintf("none: PUBLIC synthetic data from %s/%s", o.Dataset, o.Release)
		}
		t.rows = append(t.rows, []string{sc.Name, fmt.Sprint(sc.D), unitString(sc), n, clipString(sc.Clip), sc.Neighbour, sc.Accountant, budget, cols})
	}
	// The public bounds and domains, one row per column that has them:
	// what an analyst needs to write a sum, a quantile or a by= before
	// spending anything (issue 29). Numeric columns without bounds are in
	// COLUMNS above.
	pub := &magicTable{class: "datasets-columns", header: []string{"DATASET", "COLUMN", "KIND", "PUBLIC"}}
	for _, sc := range scs {
		for _, f := range sc.PublicColumns() {
			if f.Bounded || f.Kind == "categorical" {
				pub.rows = append(pub.rows, []string{sc.Name, f.Name, f.Kind, f.Public(20)})
			}
		}
	}
	if len(pub.rows) == 0 {
		t.notes = append(t.notes, "no column has public bounds or a categorical domain (the data owner declares them: dataset add --bounds, --categories)")
		return t.text(), t.html()
	}
	return t.text() + "\n" + pub.text(), t.html() + "\n" + pub.html()
}

// Help topics beyond the functions.
var topicHelp = map[string]string{
	"budget": `budget eps=E, delta=D { ... }   (a budget block; delta may be omitted: 0)
%%budget eps=E delta=D            (first line of a cell: the whole cell is one block)
%budget [DATASET]                 (spent and remaining budget per dataset)

A budget block caps what the private calls inside it may cost together.
Before the cell runs, the calls whose cost is known statically (literal
eps/delta, run once) are summed per block and per dataset: a cell over a
block's cap or a dataset's remaining budget is refused whole, nothing of it
runs. At run time every call is checked against the block's remaining cap
and charged to the dataset's ledger before it reads data. Blocks do not
nest; names assigned inside stay visible after the block. The block
composes with its dataset's accountant (zcdp by default; basic when the
block has no delta). A Gaussian call (private_pca, private_mean,
private_fedrep) inside a block with a delta may leave its delta out: it is
calibrated to the block's delta, and its receipt says so.
`,
	"keywords": `Keyword arguments: DSL functions take positional arguments first, then
keywords written name=value (k=3, method="npm"). An unknown keyword is an
error listing the valid ones; %help NAME lists a function's keywords with
their types and defaults.
`,
}

func init() {
	var b strings.Builder
	b.WriteString("Magics (a line starting with %):\n")
	for _, n := range []string{"ledger", "budget", "datasets", "help"} {
		fmt.Fprintf(&b, "  %s\n", syntax.LineMagics[n])
	}
	b.WriteString("  %%budget eps=E delta=D: (first line of a cell) the whole cell is one budget block\n")
	topicHelp["magics"] = b.String()
}

// magicDoc documents a magic for inspect and %help.
func magicDoc(name string) (string, bool) {
	n := strings.TrimLeft(name, "%")
	if t, ok := topicHelp[n]; ok {
		return t, true
	}
	if d, ok := syntax.LineMagics[n]; ok {
		return d + "\n", true
	}
	return "", false
}

// helpText is %help [NAME].
func helpText(name string) string {
	if name == "" {
		var b strings.Builder
		b.WriteString("privnotes DSL functions (%help NAME for details):\n")
		for _, f := range catalog.Funcs {
			first, _, _ := strings.Cut(f.Doc, ". ")
			fmt.Fprintf(&b, "  %-18s %s\n", f.Name, strings.TrimSuffix(first, "."))
		}
		b.WriteString("\n")
		b.WriteString(topicHelp["magics"])
		b.WriteString("\nTopics: %help budget, %help keywords, %help magics\n")
		return b.String()
	}
	if f, ok := catalog.Lookup(name); ok {
		return f.Help()
	}
	if t, ok := magicDoc(name); ok {
		return t
	}
	return fmt.Sprintf("no DSL help for %q; %%help lists the DSL functions and magics (for Go packages and display functions, inspect the name with Shift+Tab)\n", name)
}
