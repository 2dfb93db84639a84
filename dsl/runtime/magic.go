package runtime

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/syntax"
)

// magic runs a line magic (__pn_magic("ledger", "args")) and writes its
// text to the cell's stdout.
func (rt *Runtime) magic(name, args string) {
	b := rt.current("%" + name)
	args = strings.TrimSpace(args)
	var text string
	switch name {
	case "ledger":
		text = rt.ledgerText(args)
	case "budget":
		text = rt.budgetText(args)
	case "datasets":
		text = rt.datasetsText()
	case "help":
		text = helpText(args)
	default:
		panic(errorf(NameMagicError, "unknown magic %%%s; available: %s", name, strings.Join(magicNames(), ", ")))
	}
	if b.out != nil {
		b.out.Stream("stdout", text)
	}
}

func magicNames() []string {
	var ns []string
	for n := range syntax.LineMagics {
		ns = append(ns, "%"+n)
	}
	sort.Strings(ns)
	return append(ns, "%%budget")
}

func (rt *Runtime) ledgerText(name string) string {
	st := rt.mustStore()
	if name != "" {
		if _, err := st.Schema(name); err != nil {
			panic(errorf(NameDatasetError, "%%ledger %s: no such dataset (%%datasets lists them)", name))
		}
	}
	entries, err := st.Entries(name)
	if err != nil {
		panic(errorf(NameLedgerError, "%%ledger: %v", err))
	}
	if len(entries) == 0 {
		return "the ledger is empty\n"
	}
	var b strings.Builder
	if err := ledger.WriteTable(&b, entries); err != nil {
		panic(errorf(NameLedgerError, "%%ledger: %v", err))
	}
	_, head, err := st.Head()
	if err == nil {
		fmt.Fprintf(&b, "head hash %s (keep a copy elsewhere to detect truncation; `privnotes ledger verify` checks the chain)\n", head)
	}
	return b.String()
}

func (rt *Runtime) budgetText(name string) string {
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
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASET\tACCOUNTANT\tBUDGET\tSPENT\tREMAINING\tCHARGES")
	for _, n := range names {
		s, err := st.Status(n)
		if err != nil {
			panic(errorf(NameDatasetError, "%%budget %s: no such dataset (%%datasets lists them)", n))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", n, s.Mode, fmtBudget(s.Budget), fmtBudget(s.Spent), fmtBudget(s.Remaining), s.Charges)
	}
	tw.Flush()
	if len(names) == 0 {
		b.Reset()
		b.WriteString("no datasets are registered in this state directory\n")
	}
	rt.mu.Lock()
	blk := rt.block
	rt.mu.Unlock()
	if blk != nil {
		spent := "nothing spent yet"
		if blk.acc != nil {
			spent = "spent " + fmtBudget(blk.acc.Spent())
		}
		fmt.Fprintf(&b, "open %s: cap %s, %s\n", blk.scope(), fmtBudget(blk.cap), spent)
	}
	return b.String()
}

func (rt *Runtime) datasetsText() string {
	scs, err := rt.mustStore().Datasets()
	if err != nil {
		panic(errorf(NameLedgerError, "%%datasets: %v", err))
	}
	if len(scs) == 0 {
		return "no datasets are registered in this state directory (the data owner runs `privnotes dataset add`)\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tD\tUNIT\tCLIP\tNEIGHBOUR\tACCOUNTANT\tBUDGET\tCOLUMNS")
	for _, sc := range scs {
		cols := strings.Join(sc.Columns, ",")
		if len(cols) > 60 {
			cols = cols[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%g\t%s\t%s\t%s\t%s\n", sc.Name, sc.D, unitString(sc), sc.Clip, sc.Neighbour, sc.Accountant, fmtBudget(sc.Budget), cols)
	}
	tw.Flush()
	return b.String()
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
block has no delta).
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
		for _, f := range syntax.Funcs {
			first, _, _ := strings.Cut(f.Doc, ". ")
			fmt.Fprintf(&b, "  %-18s %s\n", f.Name, strings.TrimSuffix(first, "."))
		}
		b.WriteString("\n")
		b.WriteString(topicHelp["magics"])
		b.WriteString("\nTopics: %help budget, %help keywords, %help magics\n")
		return b.String()
	}
	if f, ok := syntax.Lookup(name); ok {
		return f.Help()
	}
	if t, ok := magicDoc(name); ok {
		return t
	}
	return fmt.Sprintf("no DSL help for %q; %%help lists the DSL functions and magics (for Go packages and display functions, inspect the name with Shift+Tab)\n", name)
}
