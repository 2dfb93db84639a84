package runtime

// private_sql in the runtime: its first argument is the query, whose FROM
// names the dataset (catalog.DatasetFromQuery). The runtime finds the
// dataset by parsing the query with the registered engine's parser (the
// planner checks again that FROM names the call's dataset), then runs the
// call as every private call runs.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
)

func init() { resultType(tableResult) }

// sqlDataset resolves private_sql's first argument v (the query text) to
// the dataset its FROM names (server.name: a dataset of a data server,
// where the call then runs), records the query among the call's public
// arguments a, and brings keys= and weights= to the canonical forms the
// ledger records (maps of []any, []float64).
func (rt *Runtime) sqlDataset(b *binding, fn string, v any, a *args) any {
	q, ok := v.(string)
	if !ok {
		panic(errorf(NameArgumentError, "%s: the first argument is the query, a string such as `SELECT COUNT(*) FROM name`; got %s", fn, typeName(v)))
	}
	server, name, err := release.SQLDataset(context.Background(), q)
	if err != nil {
		panic(err)
	}
	if from := a.Vals["from"]; from != nil {
		// FROM's name stands for a public table (sql_public.go in
		// dsl/release): nothing registered is read or charged. The table
		// itself is not a parameter to record.
		t, ok := from.(*SynthTable)
		if !ok || t == nil || t.Rows == nil {
			panic(errorf(NameArgumentError, "%s: from= takes a public table, a *SynthTable from private_synthesize or t.Query; got %s", fn, typeName(from)))
		}
		a.Vals["from"] = nil
		a.Vals["query"] = q
		a.Vals["keys"] = canonicalKeys(a.Vals["keys"])
		a.Vals["weights"] = canonicalWeights(a.Vals["weights"])
		return t
	}
	if server != "" {
		// The call runs on the server, which plans, charges and runs it
		// (service/): the query, keys= and weights= travel as given.
		a.Vals["query"] = q
		a.Vals["keys"] = canonicalKeys(a.Vals["keys"])
		a.Vals["weights"] = canonicalWeights(a.Vals["weights"])
		return rt.sqlRemote(b, fn, server, name)
	}
	st, err := rt.Store()
	if err != nil {
		panic(errorf(NameLedgerError, "%v", err))
	}
	if _, err := st.Schema(name); err != nil {
		e := rt.unknownDataset("FROM", name)
		panic(errorf(NameArgumentError, "%s: %s", fn, e.Msg))
	}
	a.Vals["query"] = q
	a.Vals["keys"] = canonicalKeys(a.Vals["keys"])
	a.Vals["weights"] = canonicalWeights(a.Vals["weights"])
	return rt.dataset(name)
}

// sqlRemote is the handle of dataset name on server for a query's FROM
// server.name. An unknown server or a dataset the server does not hold
// is an ArgumentError about FROM, as an unknown local dataset is; other
// failures (a server that refuses this client, or is unreachable) stay
// what they are.
func (rt *Runtime) sqlRemote(b *binding, fn, server, name string) (h Dataset) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if e, ok := r.(*Error); ok && e.Name == NameDatasetError {
			// The message of dataset(name, server=)'s lookup, which this is.
			msg := strings.TrimPrefix(e.Msg, "dataset: ")
			panic(errorf(NameArgumentError, "%s: FROM %s.%s: %s", fn, server, name, msg))
		}
		panic(r)
	}()
	return rt.remoteDataset(b, name, server)
}

// canonicalKeys turns a keys= map (a cell writes map[string][]any or
// map[string][]string, …) into map[string]any of []any with float64
// numbers; anything else is left for the planner to refuse.
func canonicalKeys(v any) any {
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return v
	}
	out := map[string]any{}
	for _, k := range rv.MapKeys() {
		l := rv.MapIndex(k)
		for l.Kind() == reflect.Interface && !l.IsNil() {
			l = l.Elem()
		}
		if l.Kind() != reflect.Slice {
			return v
		}
		vals := make([]any, l.Len())
		for i := range vals {
			vals[i] = canonicalScalar(l.Index(i).Interface())
		}
		out[k.String()] = vals
	}
	return out
}

func canonicalScalar(x any) any {
	rv := reflect.ValueOf(x)
	switch {
	case x == nil:
		return nil
	case rv.CanInt():
		return float64(rv.Int())
	case rv.CanUint():
		return float64(rv.Uint())
	case rv.CanFloat():
		return rv.Float()
	case rv.Kind() == reflect.String:
		return rv.String()
	}
	return x
}

// canonicalWeights turns a weights= list of numbers into []float64.
func canonicalWeights(v any) any {
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Slice {
		return v
	}
	out := make([]float64, rv.Len())
	for i := range out {
		f, ok := canonicalScalar(rv.Index(i).Interface()).(float64)
		if !ok {
			return v
		}
		out[i] = f
	}
	return out
}

// sqlFunc reports whether fn names its dataset in its query's FROM.
func sqlFunc(fn string) bool {
	f, ok := catalog.Lookup(fn)
	return ok && f.DatasetFrom == catalog.DatasetFromQuery
}

// queryDataset is the local dataset a static call's literal query names
// in FROM ("" when the query is not a literal or does not parse: the call
// reports that when it runs).
func queryDataset(c syntax.Call) string {
	if c.Query == "" {
		return ""
	}
	server, name, err := release.SQLDataset(context.Background(), c.Query)
	if err != nil || server != "" {
		return ""
	}
	return name
}

// staticQuery gives a statically planned call of a function that names
// its dataset in its query the query, as sqlDataset does at run time.
func staticQuery(c syntax.Call, a *args) {
	if !sqlFunc(c.Func) {
		return
	}
	a.Vals["query"] = c.Query
	a.Vals["keys"] = canonicalKeys(a.Vals["keys"])
	a.Vals["weights"] = canonicalWeights(a.Vals["weights"])
}

// literalQueryError is the refusal of a static call's literal query that
// is outside the grammar (before its dataset is known): the pre-check
// refuses the cell with it, as it refuses other literal calls.
func literalQueryError(c syntax.Call) *Error {
	if !sqlFunc(c.Func) || c.Query == "" {
		return nil
	}
	_, _, err := release.SQLDataset(context.Background(), c.Query)
	var e *Error
	if !errors.As(err, &e) || e.Name != NameArgumentError {
		return nil
	}
	return &Error{Name: e.Name, Msg: fmt.Sprintf("line %d: %s (cell refused before running: nothing ran)", c.Line, e.Msg)}
}
