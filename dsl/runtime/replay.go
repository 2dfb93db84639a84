package runtime

// Named releases in the runtime. Naming and replaying happen in the
// execution core (release.Local): every private call passes name= through
// its keywords, so a new private function gets them for free. This file
// holds what the runtime adds: the session's list of replays and what
// %ledger says about names. The conversion of a release into its
// function's result, shared by a cell's call and `privnotes notebook
// verify`, is in bindings.go.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// replay is a named call the session replayed.
type replay struct {
	cell, dataset, name string
	record              int64
}

// noteReplay remembers a replayed release for %ledger.
func (rt *Runtime) noteReplay(b *binding, rc *Receipt) {
	if rc == nil || !rc.Replayed || rc.DryRun {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.replays = append(rt.replays, replay{cell: b.label, dataset: rc.Dataset, name: rc.Name, record: rc.LedgerID})
}

// ledgerNameNotes are %ledger's lines about names: the named releases
// among rels, and the calls this session replayed, of the datasets keep
// accepts (those whose records %ledger shows).
func (rt *Runtime) ledgerNameNotes(rels []ledger.StoredRelease, keep func(dataset string) bool) []string {
	var notes []string
	var named []string
	for _, r := range rels {
		if r.Name != "" && keep(r.Dataset) {
			named = append(named, fmt.Sprintf("%q → record %d", r.Name, r.Record))
		}
	}
	if len(named) > 0 {
		notes = append(notes, "named releases (a call with the same name and parameters replays one, no new charge): "+strings.Join(named, ", "))
	}
	rt.mu.Lock()
	reps := append([]replay(nil), rt.replays...)
	rt.mu.Unlock()
	sort.SliceStable(reps, func(i, j int) bool { return reps[i].record < reps[j].record })
	for _, r := range reps {
		if keep(r.dataset) {
			notes = append(notes, fmt.Sprintf("replayed in %s: %q from record %d, no new charge", r.cell, r.name, r.record))
		}
	}
	return notes
}

// namedRelease reports whether dataset has a stored release called name,
// for the static pre-check: such a call costs nothing.
func (rt *Runtime) namedRelease(dataset, name string) bool {
	if dataset == "" || name == "" {
		return dataset == "" && name != "" // unknown dataset: left to the run
	}
	st, err := rt.Store()
	if err != nil {
		return false
	}
	nr, err := st.Named(dataset, name)
	return err == nil && nr != nil
}
