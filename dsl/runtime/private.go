package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

func pcaResult(rel *release.Release) *PCAResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &PCAResult{releaseBase: releaseBase{rel.Receipt}, Method: rel.Receipt.Mechanism}
	}
	v := rel.Value.(*release.PCA)
	return &PCAResult{Components: v.Components, Values: v.Values, Support: v.Support, Right: v.Right, Gap: v.Gap,
		Center: v.Center, centerSums: v.CenterSums, centerCount: v.CenterCount, TotalVariance: v.TotalVariance, ExplainedVarianceRatio: v.VarianceRatios(),
		Method: rel.Receipt.Mechanism, Columns: append([]string(nil), rel.Columns...), releaseBase: releaseBase{rel.Receipt}}
}

func mustArgs(fn string, kws []KW) *args {
	a, err := parseArgs(fn, kws)
	if err != nil {
		panic(err)
	}
	return a
}

// runPrivate is what every private_* function shares: bind the call to
// the running cell, parse its keywords, resolve the dataset and hand the
// call to the execution core, which plans from public facts, charges
// (through the cell's budget blocks, see blockGate), reads and runs,
// showing the run's progress on the cell's output (progressContext).
// Errors about the arguments or the dataset are prefixed with the call's
// line.
func (rt *Runtime) runPrivate(fn string, ds any, kws []KW) (*release.Release, *source) {
	b := rt.current(fn)
	defer rt.lineOnError(b, fn)
	a := mustArgs(fn, kws)
	if sqlFunc(fn) {
		ds = rt.sqlDataset(b, fn, ds, a) // FROM names the dataset
	}
	src := rt.resolve(fn, ds)
	gate := &blockGate{rt: rt, b: b, own: a.block}
	if a.Bool("dry_run") {
		rc, err := rt.executor(fn, src).DryRun(b.ctx, rt.call(b, fn, src, a), gate)
		if err != nil {
			panic(err)
		}
		blockDeltaNote(rc, a)
		return &release.Release{Receipt: rc}, src
	}
	rel, err := rt.executor(fn, src).Execute(progressContext(b.ctx, b, fn, a), rt.call(b, fn, src, a), gate)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			err = chargedNote(be, b)
		}
		panic(providerNote(err, b))
	}
	blockDeltaNote(rel.Receipt, a)
	rt.noteReplay(b, rel.Receipt)
	return rel, src
}

// blockDeltaNote says on the receipt of a call that gave no delta that
// its δ is its block's.
func blockDeltaNote(rc *release.Receipt, a *args) {
	if rc == nil || !a.deltaFromBlock {
		return
	}
	rc.Note = BlockDeltaNote(rc.Note, a.float("delta"))
}

// BlockDeltaNote is note with the sentence saying that the call's δ is
// its budget block's. The runtime adds it after the release is stored,
// so `privnotes notebook verify` accepts exactly this sentence, with the
// stored call's δ, after the stored note, and no other text.
func BlockDeltaNote(note string, delta float64) string {
	n := fmt.Sprintf("δ=%g is the budget block's (the call gave no delta)", delta)
	if note == "" {
		return n
	}
	return note + "; " + n
}

// call is the execution core's description of a call.
func (rt *Runtime) call(b *binding, fn string, src *source, a *args) release.Call {
	c := release.Call{Func: fn, Dataset: src.ref(), Args: a.Args}
	if b != nil {
		c.Cell = b.id
	}
	return c
}

// newExecutor is the in-process execution core of a runtime. Its noise
// and run hooks read this package's test variables at each call.
func newExecutor(rt *Runtime) *release.Local {
	return &release.Local{
		Store:      rt.Store,
		NewSampler: func() *noise.Sampler { return newSampler() },
		Wrap: func() release.RunWrapper {
			if testRunHook == nil {
				return nil
			}
			return testRunHook
		},
	}
}

// newSampler is where every private call of the runtime gets its noise:
// the crypto/rand sampler. Only this package's tests replace it with a
// seeded one, to make statistical tests reproducible; nothing reachable
// from a cell can.
var newSampler = noise.New

// testRunHook, set only by this package's tests, wraps the mechanism run
// of every private call after its charge, to inject a mechanism that
// panics or fails with a message holding private values. Cells cannot
// reach it.
var testRunHook func(run func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error)

// blockGate is the cell's budget blocks as the execution core's gate.
//
// The caps that apply are those of the block the call was written in (own,
// open or closed) and of the block open when it runs, if another: a call
// written in a block cannot escape its cap by running after the block's
// end, and no call escapes the cap of the block it runs in. The blocks
// record the spend only when the ledger accepted the charge; the core
// serializes charges in-process and the ledger transaction serializes
// processes.
type blockGate struct {
	rt  *Runtime
	b   *binding
	own *block
}

// blocks are the blocks whose caps apply to the call.
func (g *blockGate) blocks() []*block {
	g.rt.mu.Lock()
	open := g.rt.block
	g.rt.mu.Unlock()
	var blks []*block
	if g.own != nil {
		blks = append(blks, g.own)
	}
	if open != nil && open != g.own {
		blks = append(blks, open)
	}
	return blks
}

// check checks ev against the caps of blks, creating their accountants
// (their mode follows the dataset) at the first use.
func (g *blockGate) check(blks []*block, ev accounting.Event, ds release.Ref) (label string, err error) {
	for _, blk := range blks {
		if blk.acc == nil {
			acc, err := accounting.NewAccountant(blockMode(blk.cap.Delta, ds.Schema.Accountant), blk.cap)
			if err != nil {
				return "", errorf(NameBudgetBlock, "%s: %v", blk.scope(), err)
			}
			blk.acc = acc
		}
		if err := blk.acc.Check(ev); err != nil {
			if be, ok := asBudgetError(blk.scope(), err, false); ok {
				if n := approxNote(ev, blk.acc.Mode().String()); n != "" {
					be.Notes = append(be.Notes, n)
				}
				if blk.cap.Delta == 0 && ev.Kind != accounting.PureDP {
					be.Notes = append(be.Notes, fmt.Sprintf("The block has no δ, and %s costs a (ε, δ) event: add delta= to the block's header (budget eps=%g, delta=1e-6 { … })", ev.Mechanism, blk.cap.Eps))
				}
				return "", be
			}
			return "", errorf(NameArgumentError, "%s: %v", blk.scope(), err)
		}
		if label == "" {
			label = blk.label()
		}
	}
	return label, nil
}

// Check implements release.GateChecker: whether ev would pass the caps,
// recording nothing.
func (g *blockGate) Check(ev accounting.Event, ds release.Ref) error {
	_, err := g.check(g.blocks(), ev, ds)
	return err
}

// Admit implements release.Gate.
func (g *blockGate) Admit(_ context.Context, ev accounting.Event, ds release.Ref) (commit func() string, abort func(), err error) {
	rt, b := g.rt, g.b
	blks := g.blocks()
	label, err := g.check(blks, ev, ds)
	if err != nil {
		return nil, nil, err
	}
	commit = func() string {
		rt.mu.Lock()
		b.charged++
		rt.mu.Unlock()
		for _, blk := range blks {
			// Check passed under the core's charge lock; only a bug makes
			// Spend fail, and the ledger charge stands, which errs on the
			// safe side.
			if err := blk.acc.Spend(ev); err != nil {
				panic(fmt.Sprintf("runtime: a budget block refused a checked spend: %v", err))
			}
		}
		return label
	}
	return commit, func() {}, nil
}

// chargedNote adds to a run-time refusal that the cell's earlier charges
// (earlier iterations of a loop) stand.
func chargedNote(be *BudgetError, b *binding) *BudgetError {
	if b.charged > 0 {
		be.Notes = append(be.Notes, fmt.Sprintf("This cell already made %d charge(s) before this call (for example earlier iterations of a loop); they stand and their results were computed (%%ledger lists them)", b.charged))
	}
	return be
}
