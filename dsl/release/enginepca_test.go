package release

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// enginePCA admits gauss and npm (auto choosing either) uncentred on the
// whole row-level table, npm up to d = 4096 (it iterates on the d×d
// matrix the engine sums); everything else is refused by a message that
// names the methods that run there.
func TestEnginePCAMethods(t *testing.T) {
	for _, c := range []struct {
		d     int
		unit  string // "" for row-level data
		given map[string]any
		want  string // "" admitted; else in the refusal
	}{
		{3, "", map[string]any{"method": "gauss"}, ""},
		{3, "", map[string]any{"method": "npm"}, ""},
		{200, "", map[string]any{"method": "auto"}, ""},
		{4096, "", map[string]any{"method": "npm"}, ""},
		{4097, "", map[string]any{"method": "npm"}, "above 4096"},
		{5000, "", map[string]any{"method": "auto"}, "above 4096"},
		{3, "", map[string]any{"method": "adaptive"}, `runs methods "gauss" and "npm" only`},
		{3, "", map[string]any{"method": "dppca"}, `runs methods "gauss" and "npm" only`},
		{3, "", map[string]any{"method": "npm", "center": true}, "uncentred only"},
		// A user's rows would each count with a row's sensitivity in the
		// engine's sums (a snapshot averages them first).
		{3, "user", map[string]any{"method": "gauss"}, "row-level data only"},
		{3, "user", map[string]any{"method": "npm"}, "row-level data only"},
		{3, "user", map[string]any{"method": "gauss", "center": true}, "row-level data only"},
	} {
		given := map[string]any{"eps": 1.0, "delta": 1e-6, "k": 1}
		for k, v := range c.given {
			given[k] = v
		}
		a, err := ArgsFor(catalog.PrivatePCA.Name, given)
		if err != nil {
			t.Fatal(err)
		}
		unit := c.unit
		if unit == "" {
			unit = "row"
		}
		err = enginePCA("people", "postgres", Ref{Name: "people", Schema: ledger.Schema{Name: "people", D: c.d, Unit: unit}}, a)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("d=%d, %s, %v: refused: %v", c.d, unit, c.given, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was charged")):
			t.Errorf("d=%d, %s, %v: %v, want a refusal naming %q", c.d, unit, c.given, err, c.want)
		}
	}
}

// private_pca's second moment on a live table is checked against the
// server's statement limit before the charge: a table of a few columns
// passes ClickHouse's, a few dozen columns do not (the statement grows
// with d(d+1)/2), and thousands are refused from the count of sums,
// without printing gigabytes; an engine without a limit checks nothing.
func TestEngineMomentsLength(t *testing.T) {
	cols := func(d int) sqlplan.Moments {
		m := sqlplan.Moments{Clip: 1}
		for j := range d {
			m.Columns = append(m.Columns, fmt.Sprintf("c%d", j))
		}
		return m
	}
	ch := &engineFacts{fn: "private_pca", name: "wide", kind: "clickhouse", dialect: sqlplan.ClickHouse, table: "db.t", limit: 255 << 10}
	for _, c := range []struct {
		d     int
		limit int
		ok    bool
	}{
		{3, ch.limit, true},
		{20, ch.limit, true},
		{45, ch.limit, false},
		{4096, ch.limit, false},
		{4096, 0, true},
	} {
		e := *ch
		e.limit = c.limit
		start := time.Now()
		err := e.checkMoments(cols(c.d))
		if (err == nil) != c.ok {
			t.Errorf("d=%d, limit %d: %v", c.d, c.limit, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "nothing was charged") || !strings.Contains(err.Error(), fmt.Sprintf("d=%d", c.d))) {
			t.Errorf("d=%d: the refusal does not say what to do: %v", c.d, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("d=%d: the check took %v", c.d, time.Since(start))
		}
	}
}

// private_mean's row-vector form on a live table sums whole rows with a
// row's sensitivity: user-level data (whose rows a snapshot averages per
// user first), a subset and centred data are refused before the charge.
func TestEngineRowMeanRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		src  Ref
		want string // "" admitted; else in the refusal
	}{
		{"row-level table", Ref{Name: "people", Schema: ledger.Schema{Name: "people", Unit: "row"}}, ""},
		{"user-level table", Ref{Name: "people", Schema: ledger.Schema{Name: "people", Unit: "user"}}, "row-level data only"},
		{"subset", Ref{Name: "people", Schema: ledger.Schema{Name: "people | age > 3", Unit: "row"}, Derived: &Derivation{}}, "whole table only"},
		{"centred", Ref{Name: "people", Schema: ledger.Schema{Name: "people", Unit: "row", Center: "public-mean"}}, "centred"},
	} {
		err := engineRowMean("people", "postgres", c.src)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was charged")):
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.want)
		}
	}
}
