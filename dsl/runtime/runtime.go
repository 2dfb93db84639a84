package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Config configures a Runtime.
type Config struct {
	// StateDir is the state directory holding the datasets and the ledger
	// (ledger.StateDir resolves the default: --state, PRIVNOTES_STATE, the
	// user's data directory). The store is opened at the first use.
	StateDir string
}

// Runtime is the DSL runtime of one engine (kernel, REPL or script run).
// It implements interp.Plugin.
type Runtime struct {
	cfg Config

	storeMu  sync.Mutex
	store    *ledger.Store
	storeErr error

	// mu guards the cell binding, the open block and the handle cache.
	mu     sync.Mutex
	cell   *binding
	block  *block
	byName map[string]Dataset
	// exec is the execution core every private call goes through.
	exec *release.Local
	// replays are the named calls this session replayed (replay.go).
	replays []replay
}

// binding is the cell the DSL calls belong to.
type binding struct {
	ctx context.Context
	out engine.Output
	// id is the full cell id with the execution count, recorded in the
	// ledger for audit ("8a0a18ec-…[4]"); label is how the user sees the
	// cell ("cell [4]").
	id    string
	label string
	ended bool
	// inCell reports whether the calling goroutine belongs to the cell
	// (interp.Cell.InCell); nil: every goroutine is taken for the cell's.
	inCell func() bool
	// lines are the lines of the cell's calls of each private function
	// (from the translator), to place a run-time argument error.
	lines map[string][]int
	// charged counts the charges made by the cell so far.
	charged int
	// blocks are the cell's budget blocks by the translator's position
	// ("cell:line:col"), open or closed: a call written inside a block
	// names it (__pn_block) and is checked against its cap even when it
	// runs after the block's end, deferred or in a goroutine.
	blocks map[string]*block
}

// lineOnError, deferred by each private function, prefixes an argument,
// availability or dataset error raised before the charge with the line of
// the call in the cell: "line 3: …", or "line 3 or 7: …" when the cell
// calls the function on several lines (a call from a function defined in
// an earlier cell is not told apart).
func (rt *Runtime) lineOnError(b *binding, fn string) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(*Error); ok && (e.Name == NameArgumentError || e.Name == NameNotAvailable || e.Name == NameDatasetError) {
		if ls := b.lines[fn]; len(ls) > 0 {
			var parts []string
			for _, l := range ls {
				parts = append(parts, fmt.Sprint(l))
			}
			panic(&Error{Name: e.Name, Msg: "line " + strings.Join(parts, " or ") + ": " + e.Msg})
		}
	}
	panic(r)
}

// cellLabel is how messages and receipts name a cell: by its execution
// count, as the notebook shows it, never by the front end's raw cell id.
func cellLabel(executionCount int) string {
	if executionCount > 0 {
		return fmt.Sprintf("cell [%d]", executionCount)
	}
	return "this cell"
}

// block is an open budget block.
type block struct {
	cap  accounting.Budget
	cell string                 // the cell's label
	pos  string                 // "line 3" or "line 3, column 5" in the user's cell
	acc  *accounting.Accountant // created at the first charge (its mode follows the dataset)
}

// label names the block in receipts: "cell [4], block at line 1".
func (b *block) label() string { return b.cell + ", block at " + b.pos }

// scope names the block in errors: "budget block at line 1 of cell [4]".
func (b *block) scope() string { return "budget block at " + b.pos + " of " + b.cell }

// userPos turns the translator's "line:col" into "line 3" (or "line 3,
// column 5" when the block does not start its line).
func userPos(pos string) string {
	var line, col int
	if _, err := fmt.Sscanf(pos, "%d:%d", &line, &col); err != nil || line < 1 {
		return pos
	}
	if col > 1 {
		return fmt.Sprintf("line %d, column %d", line, col)
	}
	return fmt.Sprintf("line %d", line)
}

var (
	_ interp.Plugin       = (*Runtime)(nil)
	_ interp.ChoiceLister = (*Runtime)(nil)
	_ interp.StringLister = (*Runtime)(nil)
)

func init() {
	interp.RegisterPlugin(func(stateDir string) (interp.Plugin, error) {
		return New(Config{StateDir: stateDir})
	})
}

// New returns a runtime; it opens nothing until a cell needs the store.
func New(cfg Config) (*Runtime, error) {
	rt := &Runtime{cfg: cfg, byName: map[string]Dataset{}}
	rt.exec = newExecutor(rt)
	return rt, nil
}

// Store opens (once) and returns the state database.
func (rt *Runtime) Store() (*ledger.Store, error) {
	rt.storeMu.Lock()
	defer rt.storeMu.Unlock()
	if rt.store != nil || rt.storeErr != nil {
		return rt.store, rt.storeErr
	}
	dir, err := ledger.StateDir(rt.cfg.StateDir)
	if err == nil {
		rt.store, err = ledger.Open(dir)
	}
	if err != nil {
		rt.storeErr = fmt.Errorf("opening the privnotes state: %w", err)
	}
	return rt.store, rt.storeErr
}

func (rt *Runtime) mustStore() *ledger.Store {
	s, err := rt.Store()
	if err != nil {
		panic(errorf(NameLedgerError, "%v", err))
	}
	return s
}

// Close closes the state database.
func (rt *Runtime) Close() error {
	rt.storeMu.Lock()
	defer rt.storeMu.Unlock()
	if rt.store == nil {
		return nil
	}
	err := rt.store.Close()
	rt.store, rt.storeErr = nil, errors.New("the runtime is closed")
	return err
}

// Exports are the functions and types callable bare from cells.
func (rt *Runtime) Exports() map[string]reflect.Value {
	ex := map[string]reflect.Value{
		"__pn_budget_begin": reflect.ValueOf(rt.budgetBegin),
		"__pn_budget_end":   reflect.ValueOf(rt.budgetEnd),
		"__pn_kw":           reflect.ValueOf(newKW),
		syntax.BlockFunc:    reflect.ValueOf(rt.blockArg),
		"__pn_magic":        reflect.ValueOf(rt.magic),

		"dataset":          reflect.ValueOf(rt.dataset),
		"filter":           reflect.ValueOf(rt.filter),
		"federate":         reflect.ValueOf(rt.federate),
		"select_columns":   reflect.ValueOf(rt.selectColumns),
		"remaining":        reflect.ValueOf(rt.remaining),
		"eps_for":          reflect.ValueOf(rt.epsFor),
		"download":         reflect.ValueOf(rt.download),
		"plot_loadings":    reflect.ValueOf(plotLoadings),
		"plot_eigenvalues": reflect.ValueOf(plotEigenvalues),
		"synth_spiked":     reflect.ValueOf(synthSpiked),
		"synth_fedrep":     reflect.ValueOf(synthFedRep),

		// the column analyses (tabular.go)
		"plot_histogram":  reflect.ValueOf(plotHistogram),
		"SumResult":       reflect.ValueOf((*SumResult)(nil)),
		"HistogramResult": reflect.ValueOf((*HistogramResult)(nil)),
		"QuantileResult":  reflect.ValueOf((*QuantileResult)(nil)),
		"GroupResult":     reflect.ValueOf((*GroupResult)(nil)),

		"Dataset":          reflect.ValueOf((*Dataset)(nil)),
		"Federation":       reflect.ValueOf((*Federation)(nil)),
		"Budget":           reflect.ValueOf((*Budget)(nil)),
		"PCAResult":        reflect.ValueOf((*PCAResult)(nil)),
		"CountResult":      reflect.ValueOf((*CountResult)(nil)),
		"MeanResult":       reflect.ValueOf((*MeanResult)(nil)),
		"FedRepResult":     reflect.ValueOf((*FedRepResult)(nil)),
		"ClassifyJLResult": reflect.ValueOf((*ClassifyJLResult)(nil)),
		"LowRankResult":    reflect.ValueOf((*LowRankResult)(nil)),
		"RegressionResult": reflect.ValueOf((*RegressionResult)(nil)),
		"SynthTable":       reflect.ValueOf((*SynthTable)(nil)),
		"Receipt":          reflect.ValueOf((*Receipt)(nil)),
		"Plot":             reflect.ValueOf((*Plot)(nil)),
		"SynthData":        reflect.ValueOf((*SynthData)(nil)),
	}
	// The private functions' bindings derive from their catalog entries
	// (bindings.go).
	for _, f := range catalog.Private() {
		b, err := rt.privateBinding(f)
		if err != nil {
			// Only a build whose catalog names a result type without a
			// conversion gets here; TestEveryPrivateFunctionHasAResult
			// fails on it first.
			panic("runtime: " + err.Error())
		}
		ex[f.Name] = b
	}
	// show is the engine's display function (interp provides it); every
	// other entry of catalog.Funcs must be provided here.
	return ex
}

// Rewrite translates a cell with dsl/syntax.
func (rt *Runtime) Rewrite(src string) (interp.Program, error) {
	p, err := syntax.Translate("", src)
	if err != nil {
		return interp.Program{}, classifyTranslateError(err)
	}
	return interp.Program{Go: p.Go, Pos: p.Lines.Map, Plan: p}, nil
}

// Begin binds the runtime to the cell and runs the static pre-check: a
// cell whose statically known costs exceed a block's cap or a dataset's
// remaining budget is refused whole.
func (rt *Runtime) Begin(ctx context.Context, cell *interp.Cell) error {
	id := cell.ID
	if id == "" {
		id = "cell"
	}
	if cell.ExecutionCount > 0 {
		id = fmt.Sprintf("%s[%d]", id, cell.ExecutionCount)
	}
	label := cellLabel(cell.ExecutionCount)
	lines := map[string][]int{}
	if p, ok := cell.Program.Plan.(*syntax.Program); ok && p != nil {
		if err := rt.precheck(p, label, cell.Lookup); err != nil {
			return err
		}
		for _, c := range p.AllCalls() {
			if ls := lines[c.Func]; len(ls) == 0 || ls[len(ls)-1] != c.Line {
				lines[c.Func] = append(ls, c.Line)
			}
		}
	}
	rt.mu.Lock()
	rt.cell = &binding{ctx: ctx, out: cell.Out, id: id, label: label, lines: lines, inCell: cell.InCell, blocks: map[string]*block{}}
	rt.block = nil
	rt.mu.Unlock()
	return nil
}

// End closes a block the cell left open and ends the binding: DSL calls
// from goroutines that outlive their cell are refused.
func (rt *Runtime) End(cell *interp.Cell) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.block = nil
	if rt.cell != nil {
		rt.cell.ended = true
	}
}

// Names lists the DSL function names.
func (rt *Runtime) Names() []string { return catalog.Names() }

// Keywords lists the keyword names of a DSL function.
func (rt *Runtime) Keywords(name string) []string {
	if f, ok := catalog.Lookup(name); ok {
		return f.KeywordNames()
	}
	return nil
}

// Choices lists the allowed values of keyword kw of the DSL function fn
// (nil when any value goes), for completion inside a call: the table's
// Param.Choices without the empty "use the default" value.
func (rt *Runtime) Choices(fn, kw string) []string {
	f, ok := catalog.Lookup(fn)
	if !ok {
		return nil
	}
	p, ok := f.Keyword(kw)
	if !ok {
		return nil
	}
	var out []string
	for _, c := range p.Choices {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// Strings lists what fits a string argument of a DSL call, for completion
// inside its literal (interp.StringLister): dataset("…") the registered
// datasets, col="…" the columns of the call's dataset and by="…" its
// categorical columns, when the first argument is a handle variable. All
// of it is public: what %datasets and a handle's schema show. It reads
// the registry (a read of the WAL database, which a running cell's charge
// does not block) and the handle table, never data.
func (rt *Runtime) Strings(fn, keyword string, pos int, first any) []string {
	switch {
	case fn == "dataset" && keyword == "" && pos == 0:
		st, err := rt.Store()
		if err != nil {
			return nil
		}
		scs, err := st.Datasets()
		if err != nil {
			return nil
		}
		var names []string
		for _, sc := range scs {
			names = append(names, sc.Name)
		}
		return names
	case keyword == "col" || keyword == "by":
		h, ok := first.(Dataset)
		if !ok {
			return nil
		}
		e, ok := h.entry()
		if !ok {
			return nil
		}
		cats := categoricalNames(e.schema)
		if keyword == "by" {
			return cats
		}
		return append(append([]string(nil), e.schema.Columns...), cats...)
	}
	return nil
}

// Doc returns the help of a DSL function or magic.
func (rt *Runtime) Doc(name string) (string, bool) {
	if f, ok := catalog.Lookup(name); ok {
		if name == "show" {
			return "", false // the engine documents its own show
		}
		return f.Help(), true
	}
	return magicDoc(name)
}

// current returns the running cell or panics with NoCell. A call from a
// goroutine that an earlier cell started is refused like one made after
// every cell ended: charging it to the running cell would spend from that
// cell's budget block under its id.
func (rt *Runtime) current(fn string) *binding {
	rt.mu.Lock()
	b := rt.cell
	ended := b != nil && b.ended
	rt.mu.Unlock()
	if b == nil {
		panic(errorf(NameNoCell, "%s was called outside a running cell", fn))
	}
	// inCell is the engine's and takes its own lock, hence outside rt.mu.
	if ended || (b.inCell != nil && !b.inCell()) {
		panic(errorf(NameNoCell, "%s was called after its cell ended (from a goroutine that outlived the cell): wait for the goroutines (for example with a channel) before the cell ends", fn))
	}
	return b
}

func (rt *Runtime) budgetBegin(eps, delta float64, pos string) {
	b := rt.current("a budget block")
	nb := &block{cap: accounting.Budget{Eps: eps, Delta: delta}, cell: b.label, pos: userPos(pos)}
	if !(eps > 0) || eps > 1e6 {
		panic(errorf(NameBudgetBlock, "%s: eps=%v must be a finite number > 0", nb.scope(), eps))
	}
	if !(delta >= 0 && delta < 1) {
		panic(errorf(NameBudgetBlock, "%s: delta=%v must satisfy 0 ≤ δ < 1", nb.scope(), delta))
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.block != nil {
		panic(errorf(NameBudgetBlock, "%s: blocks do not nest, and the %s is still open", nb.scope(), rt.block.scope()))
	}
	rt.block = nb
	b.blocks[pos] = nb // a block in a loop: the latest pass's
}

// blockArg is __pn_block(where), the last argument the translator gives a
// private call written inside a budget block. It is evaluated with the
// call's arguments, so a deferred call names the block pass it was
// deferred in.
func (rt *Runtime) blockArg(where string) KW {
	b := rt.current("a private call in a budget block")
	rt.mu.Lock()
	blk := b.blocks[where]
	rt.mu.Unlock()
	if blk == nil {
		// The block's header always runs first; only a call copied out of
		// its cell could get here.
		panic(errorf(NameBudgetBlock, "the budget block at %s of %s has not started", userPos(where), b.label))
	}
	return KW{name: blockKW, value: blk}
}

func (rt *Runtime) budgetEnd() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.block = nil
}

// blockMode is the composition rule of a block: the dataset's, except
// that a block without δ composes with the basic rule (zCDP, GDP and the
// Rényi filter state their totals at a δ > 0).
func blockMode(capDelta float64, datasetMode string) accounting.Mode {
	m, err := accounting.ParseMode(datasetMode)
	if err != nil {
		m = accounting.ModeZCDP
	}
	if capDelta == 0 && m.NeedsDelta() {
		m = accounting.ModeBasic
	}
	return m
}
