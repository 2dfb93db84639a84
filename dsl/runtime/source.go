package runtime

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
)

// source is the data a private call runs on: a registered dataset
// (charged to the ledger) or public synthetic data (never charged).
type source struct {
	name   string
	schema ledger.Schema
	synth  *SynthData
	table  *SynthTable // a public table (private_sql's from=)
	deriv  *release.Derivation
	server string // a data service's name, for a remote dataset
}

// ref is the source as the execution core names it.
func (s *source) ref() release.Ref {
	r := release.Ref{Name: s.label(), Schema: s.schema}
	if s.synth != nil {
		r.Public = s.synth.data()
	}
	if s.table != nil {
		r.Public, r.Table = &ledger.Data{Schema: s.schema}, s.table.publicRows()
	}
	r.Derived = s.deriv
	return r
}

func (s *source) label() string {
	if s.synth != nil {
		return "synthetic:" + s.synth.Recipe
	}
	if s.table != nil {
		return publicTableName
	}
	return s.name
}

// dataset opens a registered dataset by name.
func (rt *Runtime) dataset(name string, kws ...KW) Dataset {
	if server := serverKeyword(kws); server != "" {
		return rt.remoteDataset(rt.current("dataset"), name, server)
	}
	// The registration is read every time: a dataset removed and
	// registered again under the same name gets a new handle (calls on an
	// old one are refused before their charge; see ledger.ChargeMeta).
	sc, err := rt.mustStore().Schema(name)
	if err != nil {
		if errors.Is(err, ledger.ErrNoDataset) {
			panic(rt.unknownDataset("dataset", name))
		}
		panic(errorf(NameLedgerError, "reading dataset %q: %v", name, err))
	}
	rt.mu.Lock()
	h, ok := rt.byName[name]
	rt.mu.Unlock()
	if e, live := h.entry(); ok && live && reflect.DeepEqual(e.schema, sc) {
		return h
	}
	h = registerHandle(&handleEntry{rt: rt, name: name, schema: sc})
	rt.mu.Lock()
	rt.byName[name] = h
	rt.mu.Unlock()
	return h
}

// resolve turns a call's first argument into a source.
func (rt *Runtime) resolve(fn string, v any) *source {
	switch x := v.(type) {
	case Dataset:
		e := x.mustEntry()
		if e.rt != rt {
			panic(errorf(NameDatasetError, "%s: this handle belongs to another privnotes session; open it here with dataset(%q)", fn, e.name))
		}
		return &source{name: e.name, schema: e.schema, deriv: e.deriv, server: e.server}
	case *Dataset:
		if x == nil {
			break
		}
		return rt.resolve(fn, *x)
	case Federation, *Federation:
		panic(errorf(NameArgumentError, "%s: a federated handle runs private_pca(fed, method=\"federated\", ...) only; call %s on one of its datasets", fn, fn))
	case *SynthData:
		if x == nil || x.x == nil {
			break
		}
		return &source{name: "synthetic:" + x.Recipe, schema: x.schema, synth: x}
	case *SynthTable:
		if x == nil || x.Rows == nil || !sqlFunc(fn) {
			break
		}
		return &source{name: publicTableName, schema: x.schema(), table: x}
	}
	panic(errorf(NameArgumentError, "%s: the first argument must be a dataset handle from dataset(\"name\") or synthetic data from synth_*; got %s", fn, typeName(v)))
}

// load reads the data of a source. Call it only after the charge.
func (rt *Runtime) load(src *source) (*ledger.Data, error) {
	if src.synth != nil {
		return src.synth.data(), nil
	}

	return rt.mustStore().Load(src.name)
}

// unknownDataset is the DatasetError for a name no dataset has; what is
// the call or magic ("dataset", "%ledger x"). It suggests the closest
// registered name: every name is public (%datasets lists them all).
func (rt *Runtime) unknownDataset(what, name string) *Error {
	hint := ""
	if st, err := rt.Store(); err == nil {
		if scs, err := st.Datasets(); err == nil {
			names := make([]string, len(scs))
			for i, sc := range scs {
				names[i] = sc.Name
			}
			if best, ok := syntax.Closest(name, names); ok {
				hint = fmt.Sprintf(" Did you mean %q?", best)
			}
		}
	}
	return errorf(NameDatasetError, "%s: no dataset %q is registered in this state directory.%s %%datasets lists them (the data owner registers datasets with `privnotes dataset add`)", what, name, hint)
}
