package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
)

// Federation is a handle over datasets held by different data services
// (or registered locally), from federate(h1, h2, ...): private_pca(fed,
// method="federated") runs DPS-PCA and private_fedrep(fed, ...) Private
// FedRep cross-silo, with each dataset one provider that adds its own
// noise and charges its own ledger. It holds the member handles only; its
// renderings name them.
type Federation struct {
	members []Dataset
}

// federate implements federate(h1, h2, ...).
func (rt *Runtime) federate(hs ...any) Federation {
	const fn = "federate"
	rt.current(fn)
	if len(hs) < 1 {
		panic(errorf(NameArgumentError, "%s: give the dataset handles to federate, e.g. federate(dataset(\"a\", server=\"p1\"), dataset(\"a\", server=\"p2\"))", fn))
	}
	f := Federation{}
	seen := map[string]bool{}
	var d int
	for i, h := range hs {
		if _, ok := h.(KW); ok {
			panic(errorf(NameArgumentError, "%s takes dataset handles only, no keywords", fn))
		}
		src := rt.resolve(fn, h)
		if src.synth != nil {
			panic(errorf(NameArgumentError, "%s: argument %d is synthetic data; federate registered datasets (local or on servers)", fn, i+1))
		}
		key := src.server + "/" + src.name
		if seen[key] {
			panic(errorf(NameArgumentError, "%s: %s is given twice; each provider's data may enter a federation once", fn, memberLabel(src)))
		}
		seen[key] = true
		if i == 0 {
			d = src.schema.D
		} else if src.schema.D != d {
			panic(errorf(NameArgumentError, "%s: %s has d=%d columns, the first dataset has d=%d: the providers must share the schema", fn, memberLabel(src), src.schema.D, d))
		}
		var ds Dataset
		switch x := h.(type) {
		case Dataset:
			ds = x
		case *Dataset:
			ds = *x
		}
		f.members = append(f.members, ds)
	}
	return f
}

// memberLabel names a federation member: "p1:census", or "census" for a
// local dataset.
func memberLabel(src *source) string {
	if src.server != "" {
		return src.server + ":" + src.label()
	}
	return src.label()
}

// String names the members.
func (f Federation) String() string {
	parts := make([]string, len(f.members))
	for i, h := range f.members {
		e, ok := h.entry()
		if !ok {
			parts[i] = "?"
			continue
		}
		parts[i] = memberLabel(&source{name: e.name, server: e.server, deriv: e.deriv})
	}
	return "federate(" + strings.Join(parts, ", ") + ")"
}

// Len is the number of providers.
func (f Federation) Len() int { return len(f.members) }

// federatedRuns are the private functions that also run on a federated
// handle, by catalog entry, each with its own path: a federated call is
// rounds between providers, not one plan.
var federatedRuns = map[*catalog.Func]func(rt *Runtime, fn string, f Federation, kws []KW) any{
	catalog.PrivatePCA:    func(rt *Runtime, fn string, f Federation, kws []KW) any { return rt.federatedPCA(fn, f, kws) },
	catalog.PrivateFedRep: func(rt *Runtime, fn string, f Federation, kws []KW) any { return rt.federatedFedRep(fn, f, kws) },
}

// federatedPCA runs private_pca on a federation.
func (rt *Runtime) federatedPCA(fn string, f Federation, kws []KW) *PCAResult {
	rel, first := rt.federated(fn, f, kws, release.RunFederatedPCA)
	if rel.Value == nil { // a dry run
		return &PCAResult{releaseBase: releaseBase{rel.Receipt}, Method: rel.Receipt.Mechanism}
	}
	v := rel.Value.(*release.PCA)
	return &PCAResult{Components: v.Components, Support: v.Support, Method: rel.Receipt.Mechanism,
		Columns: append([]string(nil), first.schema.Columns...), releaseBase: releaseBase{rel.Receipt}}
}

// federatedFedRep runs private_fedrep on a federation: Private FedRep
// cross-silo, each member a silo that clips and noises its own users.
func (rt *Runtime) federatedFedRep(fn string, f Federation, kws []KW) *FedRepResult {
	rel, _ := rt.federated(fn, f, kws, release.RunFederatedFedRep)
	return fedRepResult(rel)
}

// federated runs fn on the members of f with run (or plans it, with
// dry_run=True: the release then has no value), returning the release and
// the first member's source.
func (rt *Runtime) federated(fn string, f Federation, kws []KW, run func(context.Context, []release.Member, release.Gate) (*release.Release, error)) (*release.Release, *source) {
	b := rt.current(fn)
	defer rt.lineOnError(b, fn)
	if len(f.members) == 0 {
		panic(errorf(NameArgumentError, "%s: an empty federation: make one with federate(h1, h2, ...)", fn))
	}
	a := mustArgs(fn, kws)
	if a.Str(release.NameKeyword) != "" {
		// Each member's answers are rounds, not one release it could
		// store, so a federated call has nothing to replay.
		panic(errorf(NameArgumentError, "%s: name= is not available on a federated handle: a federated call's release is not stored (each provider's ledger holds its charge); leave name out", fn))
	}
	members := make([]release.Member, len(f.members))
	var first *source
	for i, h := range f.members {
		src := rt.resolve(fn, h)
		if first == nil {
			first = src
		}
		var exec release.FedProvider = rt.exec
		if src.server != "" {
			fp, ok := rt.remote(fn, src.server).(release.FedProvider)
			if !ok {
				panic(errorf(NameNotAvailable, "%s: server %s cannot take part in a federated call", fn, src.server))
			}
			exec = fp
		}
		members[i] = release.Member{Label: memberLabel(src), Exec: exec, Call: rt.call(b, fn, src, a)}
	}
	gate := &blockGate{rt: rt, b: b, own: a.block}
	if a.Bool("dry_run") {
		rc, err := release.DryRunFederated(b.ctx, members, gate)
		if err != nil {
			panic(err)
		}
		blockDeltaNote(rc, a)
		return &release.Release{Receipt: rc}, first
	}
	rt.mu.Lock()
	prior := b.charged
	rt.mu.Unlock()
	rel, err := run(progressContext(b.ctx, b, fn, a), members, gate)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			err = chargedNote(be, b)
		}
		// The call's own charges are in its error; earlier ones of the
		// cell stand too.
		var re *release.Error
		if errors.As(err, &re) && re.Name == NameProviderFailed && prior > 0 {
			re.Msg += fmt.Sprintf("; the %d charge(s) this cell made before this call stand", prior)
		}
		panic(err)
	}
	blockDeltaNote(rel.Receipt, a)
	return rel, first
}

// federationOf returns ds as a federation, if it is one.
func federationOf(ds any) (Federation, bool) {
	switch x := ds.(type) {
	case Federation:
		return x, true
	case *Federation:
		if x != nil {
			return *x, true
		}
	}
	return Federation{}, false
}

var _ fmt.Stringer = Federation{}
