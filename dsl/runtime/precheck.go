package runtime

import (
	"errors"
	"fmt"
	"github.com/privnotes/privnotes/dsl/catalog"
	"sort"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// staticEvent is the event a static call c of the private function f will
// charge on src: its plan's, from src's public schema and the call's
// keywords (lits, from keywordLiterals) with eps and delta as the
// translator read them (a block's δ included). A keyword whose value is
// not a literal is planned at its default when the catalog marks it
// CostFree; ok is false when another is not a literal, or when the call
// does not plan (it is refused when it runs, or by validateLiteralCall).
// It reads no data and charges nothing.
func (rt *Runtime) staticEvent(c syntax.Call, f *catalog.Func, src *source, lits map[string]any) (accounting.Event, bool) {
	kws := []KW{{name: "eps", value: c.Eps}, {name: "delta", value: c.Delta}}
	for n, v := range lits {
		if _, ok := v.(nonLiteral); ok {
			if p, ok := f.Keyword(n); !ok || !p.CostFree {
				return accounting.Event{}, false
			}
			continue
		}
		switch n {
		case "eps", "delta", "dry_run", release.NameKeyword:
			continue // the cost's own, and what the caller has checked
		}
		kws = append(kws, KW{name: n, value: v})
	}
	a, err := parseArgs(c.Func, kws)
	if err != nil {
		return accounting.Event{}, false
	}
	staticQuery(c, a)
	p, err := rt.exec.Plan(rt.call(nil, c.Func, src, a))
	if err != nil {
		return accounting.Event{}, false
	}
	ev := p.Event()
	ev.Mechanism = c.Func // messages name the call, as the block's refusal does
	return ev, ev.Validate() == nil
}

// floorEvent is the least a call of f at (ε, δ) charges on a dataset the
// pre-check cannot know (a handle from a slice, synthetic data): pure ε at
// δ = 0, else ρ*(ε, δ)-zCDP. Every mechanism calibrated to (ε, δ) charges
// at least that under every composition rule (basic and advanced count
// each event as its (ε, δ) target; under zCDP ρ*(ε, δ) is the largest ρ
// that meets the target, and an approximate or GDP event converts to no
// less), so a block refused with floors is refused at run time too. ok
// is false for a call that cannot run at δ = 0 (f's delta is required).
func floorEvent(f *catalog.Func, eps, delta float64) (accounting.Event, bool) {
	if !(eps > 0) || !(delta >= 0 && delta < 1) {
		return accounting.Event{}, false
	}
	ev := accounting.Pure(eps)
	if delta > 0 {
		ev = accounting.ZcdpFor(eps, delta)
	} else if p, ok := f.Keyword("delta"); ok && p.Required {
		return accounting.Event{}, false
	}
	ev.Mechanism = f.Name
	return ev, ev.Validate() == nil
}

// staticCost is one statically known charge.
type staticCost struct {
	dataset string
	ev      accounting.Event
	call    syntax.Call
}

// precheck sums the statically known costs of a cell per budget block and
// per dataset and refuses the cell if one would be exceeded. A static
// call's cost is its plan's (staticEvent). Run-time charges stay
// authoritative; a call whose cost is not static (inside a loop, a
// non-literal eps, or another keyword the catalog does not mark CostFree)
// is left to them.
//
// A call's dataset is known when the cell names it (dataset("name"), or a
// variable assigned from it earlier in the cell) or, through lookup, when
// its argument is a variable of an earlier cell that the cell cannot have
// rebound before the call (syntax.Call.DatasetVar). lookup may be nil.
func (rt *Runtime) precheck(p *syntax.Program, cellLabel string, lookup func(string) (any, bool)) error {
	if len(p.Blocks) == 0 && len(p.Calls) == 0 {
		return nil
	}
	kws, vals := keywordLiterals(p)
	schemas := map[string]*ledger.Schema{}
	schemaOf := func(name string) *ledger.Schema {
		if name == "" {
			return nil
		}
		if s, ok := schemas[name]; ok {
			return s
		}
		var sc *ledger.Schema
		if st, err := rt.Store(); err == nil {
			if s, err := st.Schema(name); err == nil {
				sc = &s
			}
		}
		schemas[name] = sc
		return sc
	}
	cost := func(c syntax.Call) (staticCost, bool) {
		f, ok := catalog.Lookup(c.Func)
		if !c.Static || !ok || !f.Private {
			return staticCost{}, false
		}
		lit := kws[callKey{c.Line, c.Col}]
		if v, ok := vals[callKey{c.Line, c.Col}]["dry_run"]; ok && v != false {
			return staticCost{}, false // a dry run spends nothing (or is not known statically)
		}
		ds := fromTable(c, vals[callKey{c.Line, c.Col}], rt.callDataset(c, lookup))
		if v, ok := lit[release.NameKeyword]; ok && (v == nil || rt.namedRelease(ds, *v)) {
			// A named call whose release is stored replays it for free
			// (or is refused for other parameters); a name known only at
			// run time is left to the run-time charge.
			return staticCost{}, false
		}
		s := schemaOf(ds)
		if s == nil {
			ev, ok := floorEvent(f, c.Eps, c.Delta)
			return staticCost{dataset: ds, ev: ev, call: c}, ok
		}
		ev, ok := rt.staticEvent(c, f, &source{name: ds, schema: *s}, vals[callKey{c.Line, c.Col}])
		if s.Public() {
			// Public synthetic rows: counted in blocks, charged to no
			// dataset's budget.
			return staticCost{ev: ev, call: c}, ok
		}
		return staticCost{dataset: ds, ev: ev, call: c}, ok
	}
	// Public arguments first: a call whose keywords are all literals is
	// planned against its dataset's public schema, so that a k > d or an
	// unknown method refuses the cell before anything of it runs.
	for _, c := range p.AllCalls() {
		if err := literalQueryError(c); err != nil {
			return err
		}
		ds := fromTable(c, vals[callKey{c.Line, c.Col}], rt.callDataset(c, lookup))
		sc := schemaOf(ds)
		if sc == nil {
			continue
		}
		if err := rt.validateLiteralCall(c, &source{name: ds, schema: *sc}, vals[callKey{c.Line, c.Col}]); err != nil {
			return err
		}
	}
	perDataset := map[string][]accounting.Event{}
	callOf := map[string][]syntax.Call{} // the calls behind perDataset
	for _, blk := range p.Blocks {
		var evs []accounting.Event
		// The run-time block composes with the rule of the dataset of
		// its first charge; unknown here, the cell is refused only if
		// every rule would refuse it.
		mode, first := "", true
		for _, c := range blk.Calls {
			sc, ok := cost(c)
			if !ok {
				continue
			}
			evs = append(evs, sc.ev)
			if first {
				first = false
				if s := schemaOf(sc.dataset); s != nil {
					mode = s.Accountant
				}
			}
			if sc.dataset != "" {
				perDataset[sc.dataset] = append(perDataset[sc.dataset], sc.ev)
				callOf[sc.dataset] = append(callOf[sc.dataset], c)
			}
		}
		if blk.Repeated || len(evs) == 0 {
			continue
		}
		if err := checkBlock(blk, cellLabel, mode, evs); err != nil {
			return err
		}
	}
	for _, c := range p.Calls {
		if sc, ok := cost(c); ok && sc.dataset != "" {
			perDataset[sc.dataset] = append(perDataset[sc.dataset], sc.ev)
			callOf[sc.dataset] = append(callOf[sc.dataset], c)
		}
	}
	names := make([]string, 0, len(perDataset))
	for n := range perDataset {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if schemaOf(n) == nil {
			continue // unknown here: dataset(n) reports it when it runs
		}
		st, err := rt.Store()
		if err != nil {
			return errorf(NameLedgerError, "%v", err)
		}
		if err := st.Precheck(n, perDataset[n]...); err != nil {
			if be, ok := asBudgetError(fmt.Sprintf("dataset %q", n), err, true); ok {
				for _, ev := range perDataset[n] {
					if note := approxNote(ev, schemaOf(n).Accountant); note != "" {
						be.Notes = append(be.Notes, note)
						break
					}
				}
				if evs := perDataset[n]; len(callOf[n]) == 1 && len(evs) == 1 && evs[0].Eps > 0 {
					pr, _ := st.Pricing(n, evs[0])
					be.Asked = release.AskedWords(evs[0].Eps, evs[0].Delta, pr)
				}
				if cs := callOf[n]; len(cs) == 1 {
					if note := rt.fitNoteStatic(cs[0], &source{name: n, schema: *schemaOf(n)}, vals[callKey{cs[0].Line, cs[0].Col}], func(ev accounting.Event) bool {
						return st.Precheck(n, ev) == nil
					}); note != "" {
						be.Notes = append(be.Notes, note)
					}
				}
				if f, err := st.Fits(n); err == nil {
					be.Notes = append(be.Notes, release.FitsWords(n, f))
				}
				return be
			}
			var ex *accounting.ExceededError
			if !errors.As(err, &ex) {
				continue // e.g. an event the dataset's accountant cannot compose: the charge reports it
			}
		}
	}
	return nil
}

// validateLiteralCall plans a call whose keywords are all literals (lits,
// from keywordLiterals) from its dataset's public schema, as the call will
// when it runs, and returns its argument error under the call's line; nil
// when the call is valid or not all of its keywords are literals. It reads
// no data and charges nothing.
func (rt *Runtime) validateLiteralCall(c syntax.Call, src *source, lits map[string]any) (err *Error) {
	if lits == nil {
		return nil
	}
	names := make([]string, 0, len(lits))
	for n, v := range lits {
		if _, ok := v.(nonLiteral); ok {
			return nil
		}
		names = append(names, n)
	}
	sort.Strings(names)
	kws := make([]KW, len(names))
	for i, n := range names {
		kws[i] = KW{name: n, value: lits[n]}
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*Error)
			if !ok || (e.Name != NameArgumentError && e.Name != NameNotAvailable) {
				err = nil // anything else is left to the call
				return
			}
			err = &Error{Name: e.Name, Msg: fmt.Sprintf("line %d: %s (cell refused before running: nothing ran)", c.Line, e.Msg)}
		}
	}()
	a := mustArgs(c.Func, kws)
	staticQuery(c, a)
	rt.planCall(c.Func, src, a)
	return nil
}

// planCall validates and plans a private call from public facts; it
// panics with the plan's error.
func (rt *Runtime) planCall(fn string, src *source, a *args) *release.Plan {
	p, err := rt.exec.Plan(rt.call(nil, fn, src, a))
	if err != nil {
		panic(err)
	}
	return p
}

// fromTable is "" for a private_sql call given from= (a public table
// that FROM's name stands for, which charges no dataset), else ds.
func fromTable(c syntax.Call, vals map[string]any, ds string) string {
	if _, ok := vals["from"]; ok && sqlFunc(c.Func) {
		return ""
	}
	return ds
}

// callDataset is the registered dataset a static call will charge, or ""
// when it is not known before the cell runs (or the argument is public
// synthetic data, which charges no dataset).
func (rt *Runtime) callDataset(c syntax.Call, lookup func(string) (any, bool)) string {
	if sqlFunc(c.Func) {
		return queryDataset(c)
	}
	if c.Dataset != "" || c.DatasetVar == "" || lookup == nil {
		return c.Dataset
	}
	v, ok := lookup(c.DatasetVar)
	if !ok {
		return ""
	}
	var h Dataset
	switch x := v.(type) {
	case Dataset:
		h = x
	case *Dataset:
		if x == nil {
			return ""
		}
		h = *x
	default:
		return ""
	}
	e, ok := h.entry()
	if !ok || e.rt != rt || e.server != "" {
		return "" // the call itself reports a foreign or zero handle; a server checks its own
	}
	return e.name
}

// fitNoteStatic is the core's "what would fit" note for a call of the
// cell the pre-check refused, when all its keywords are literals (lits);
// "" otherwise.
func (rt *Runtime) fitNoteStatic(c syntax.Call, src *source, lits map[string]any, fits func(accounting.Event) bool) (note string) {
	if lits == nil {
		return ""
	}
	kws := make([]KW, 0, len(lits))
	for n, v := range lits {
		if _, ok := v.(nonLiteral); ok {
			return ""
		}
		kws = append(kws, KW{name: n, value: v})
	}
	a, err := parseArgs(c.Func, kws)
	if err != nil {
		return ""
	}
	return rt.exec.FitNote(rt.call(nil, c.Func, src, a), fits)
}

// checkBlock checks a block's static costs against its cap under the
// composition rule of mode (a dataset's accountant); with mode "" (no
// dataset known) the block is refused only when every rule refuses it,
// since the run-time block follows the dataset of its first charge.
func checkBlock(blk syntax.Block, cellLabel, mode string, evs []accounting.Event) error {
	where := (&block{cell: cellLabel, pos: userPos(fmt.Sprintf("%d:%d", blk.Line, blk.Col))}).scope()
	modes := []string{mode}
	if mode == "" {
		modes = []string{accounting.ModeZCDP.String(), accounting.ModeBasic.String(), accounting.ModeAdvanced.String()}
	}
	var refusal error
	for _, m := range modes {
		capB := accounting.Budget{Eps: blk.Eps, Delta: blk.Delta}
		acc, err := accounting.NewAccountant(blockMode(blk.Delta, m), capB)
		if err != nil {
			return errorf(NameBudgetBlock, "%s: %v", where, err)
		}
		err = acc.Check(evs...)
		if err == nil {
			return nil
		}
		if refusal == nil {
			if be, ok := asBudgetError(where, err, true); ok {
				if blk.Delta == 0 {
					for _, ev := range evs {
						if ev.Kind != accounting.PureDP {
							be.Notes = append(be.Notes, fmt.Sprintf("The block has no δ, and %s costs a (ε, δ) event: add delta= to the block's header (budget eps=%g, delta=1e-6 { … })", ev.Mechanism, blk.Eps))
							break
						}
					}
				}
				refusal = be
			} else {
				refusal = errorf(NameBudgetBlock, "%s: %v", where, err)
			}
		}
	}
	return refusal
}

type callKey struct{ line, col int }

// nonLiteral marks a keyword whose value is not a literal.
type nonLiteral struct{}

// keywordLiterals indexes, for each private call of the program, the
// keyword arguments whose value is a string literal (a keyword with
// another value maps to nil), and every keyword's literal value or
// nonLiteral{}, as the translator recorded them.
func keywordLiterals(p *syntax.Program) (map[callKey]map[string]*string, map[callKey]map[string]any) {
	strs := map[callKey]map[string]*string{}
	vals := map[callKey]map[string]any{}
	for _, c := range p.AllCalls() {
		lits := p.Keywords[syntax.CallPos{Line: c.Line, Col: c.Col}]
		kw := make(map[string]*string, len(lits))
		kv := make(map[string]any, len(lits))
		for name, v := range lits {
			kw[name], kv[name] = nil, nonLiteral{}
			if v == nil {
				continue
			}
			kv[name] = v
			if s, ok := v.(string); ok {
				kw[name] = &s
			}
		}
		k := callKey{c.Line, c.Col}
		strs[k], vals[k] = kw, kv
	}
	return strs, vals
}
