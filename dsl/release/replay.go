package release

// Named calls: storing every release with its charge and replaying a
// named one. The decision is made in Execute (and DryRun) after the plan
// and before any gate or charge, from public facts only: the call's name,
// its public parameters (PublicParams) and the ledger's stored release. A
// replay charges nothing and reads no data; it rebuilds the stored values
// into the same value types a run makes.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// namedCall is what Execute learns about a call's release before the
// charge: the stored release to replay, or the ledger row to reserve.
type namedCall struct {
	replay *Release
	meta   *ledger.ReleaseMeta
}

// name is the call's name= keyword ("" if none).
func (c Call) name() string {
	if c.Args == nil {
		return ""
	}
	s, _ := c.Args.Vals[NameKeyword].(string)
	return s
}

// named looks the call's name up: a stored release with the same public
// parameters is replayed; one with others is an ArgumentError showing
// them. Calls on registered data reserve a release row with the charge
// (named or not); public synthetic data store nothing.
func (env *Local) named(call Call, p *Plan) (namedCall, error) {
	name := call.name()
	src := call.Dataset
	if src.Synthetic() {
		if name != "" {
			return namedCall{}, Errorf(NameArgumentError, "%s: name=%q: synthetic data are public and have no ledger to store a named release in; leave name= out", p.Func, name)
		}
		return namedCall{}, nil
	}
	if strings.TrimSpace(name) != name || len(name) > 200 {
		return namedCall{}, Errorf(NameArgumentError, "%s: name=%q: a release name has no leading or trailing spaces and at most 200 bytes", p.Func, name)
	}
	pub, err := PublicParams(call)
	if err != nil {
		return namedCall{}, Errorf(NameArgumentError, "%v", err)
	}
	meta := &ledger.ReleaseMeta{Name: name, Call: pub}
	if name == "" {
		return namedCall{meta: meta}, nil
	}
	st, err := env.store()
	if err != nil {
		return namedCall{}, err
	}
	nr, err := st.Named(src.Name, name)
	if err != nil {
		return namedCall{}, Errorf(NameLedgerError, "dataset %q: looking up release %q: %v", src.Name, name, err)
	}
	if nr == nil {
		return namedCall{meta: meta}, nil
	}
	if nr.Call != pub {
		return namedCall{}, Errorf(NameArgumentError, "%s: name %q is the release of ledger record %d (%s), made with other parameters:\n  stored: %s\n  this call: %s\nrepeat the stored parameters to replay it, or give this call another name",
			p.Func, name, nr.Record, nr.Cell, DescribeParams(nr.Call), DescribeParams(pub))
	}
	if !nr.Sealed() {
		return namedCall{}, Errorf(NameArgumentError, "%s: name %q was charged in ledger record %d, but that run produced no release (it failed or was interrupted); give this call another name", p.Func, name, nr.Record)
	}
	value, _, err := Decode([]byte(nr.Value))
	if err != nil {
		return namedCall{}, Errorf(NameLedgerError, "%s: release %q of ledger record %d cannot be read back: %v (run `privnotes ledger verify`)", p.Func, name, nr.Record, err)
	}
	ch := Charge{LedgerID: nr.Record, Accountant: src.Schema.Accountant}
	if src.Derived != nil {
		ch.Accountant = src.Derived.ParentSchema.Accountant
	}
	if left, err := st.Remaining(src.Name); err == nil {
		ch.Remaining = left
	}
	ch.Filter = pricing(st, src.Name, ch.Accountant, nr.Event)
	rc := newReceipt(src, p, nr.Event, ch)
	rc.Charged, rc.Replayed, rc.Name, rc.ReleaseHash = false, true, name, nr.ValueHash
	return namedCall{replay: &Release{Value: value, Receipt: rc, Columns: p.Columns}}, nil
}

// seal stores a run's release with its charge and puts the release hash
// on the receipt. It runs after the charge, so it cannot fail the call: a
// release that cannot be stored says so in the receipt's note (the text
// is about the ledger, never the data).
func (env *Local) seal(ctx context.Context, id int64, meta *ledger.ReleaseMeta, value any, columns []string, rc *Receipt) {
	rc.Name = meta.Name
	note := func(why string) {
		n := "the release is not stored in the ledger (" + why + "), so it cannot be replayed or verified"
		if rc.Note == "" {
			rc.Note = n
		} else {
			rc.Note += "; " + n
		}
	}
	enc, _, err := EncodeShown(value, columns, rc)
	if err != nil {
		note("its type has no stored form")
		return
	}
	st, err := env.store()
	if err != nil {
		note("the state database could not be opened")
		return
	}
	h, err := st.SealRelease(context.WithoutCancel(ctx), id, enc)
	if err != nil {
		note("the state database refused it")
		return
	}
	rc.ReleaseHash = h
}

// DescribeParams renders PublicParams' JSON as "private_pca on people:
// eps=0.5, k=2, …", keywords sorted; the JSON itself if it is not that.
func DescribeParams(pub string) string {
	var m struct {
		Function string                     `json:"function"`
		Dataset  string                     `json:"dataset"`
		Lineage  string                     `json:"lineage"`
		Args     map[string]json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal([]byte(pub), &m); err != nil || m.Function == "" {
		return pub
	}
	ds := m.Dataset
	if m.Lineage != "" {
		ds = m.Lineage
	}
	keys := make([]string, 0, len(m.Args))
	for k := range m.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + string(m.Args[k])
	}
	return fmt.Sprintf("%s on %s: %s", m.Function, ds, strings.Join(parts, ", "))
}
