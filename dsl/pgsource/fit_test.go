package pgsource_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// countedKind is a PostgreSQL table opened through pgsource.Open with its
// connections and catalog checks counted: the executor opens an engine
// once per check, so the counts say how often a call went to the server
// before its charge.
const countedKind = "postgres-counted"

var engineOpens, engineChecks atomic.Int64

func init() {
	err := release.RegisterEngine(countedKind, func(ctx context.Context, ref ledger.EngineRef, sc ledger.Schema, secretPath string) (release.EngineSource, error) {
		engineOpens.Add(1)
		ref.Kind = pgsource.Kind
		src, err := pgsource.Open(ctx, ref, sc, secretPath)
		if err != nil {
			return nil, err
		}
		return countedSource{src}, nil
	})
	if err != nil {
		panic(err)
	}
}

type countedSource struct{ release.EngineSource }

func (s countedSource) Check(ctx context.Context) error {
	engineChecks.Add(1)
	return s.EngineSource.Check(ctx)
}

// MaxStatementBytes passes the wrapped source's limit on, if any, so
// that the counted table is planned as the plain one.
func (s countedSource) MaxStatementBytes() int {
	if l, ok := s.EngineSource.(interface{ MaxStatementBytes() int }); ok {
		return l.MaxStatementBytes()
	}
	return 0
}

// A refusal over the budget says the largest ε that fits, found by
// re-planning the call dozens of times; on a live table the engine's
// catalog check (a connection to the server) does not depend on ε, so the
// refusal checks the engine once, where each re-plan used to connect (6 s
// a refusal). A charged call is still checked before its charge.
func TestOverBudgetFitChecksEngineOnce(t *testing.T) {
	srv := startServer(t)
	srv.exec(t, `CREATE TABLE people (region text, sex text, age integer, income bigint, hours double precision)`)
	srv.copyCSV(t, "people", peopleCSV(300))
	srv.exec(t, `CREATE ROLE analyst LOGIN PASSWORD '`+analystPassword+`'`)
	srv.exec(t, `GRANT SELECT ON people TO analyst`)
	st := testfix.Store(t, t.TempDir())
	ref, cols, _, err := pgsource.Describe(context.Background(), srv.url("analyst"), analystPassword, "public.people", categories, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ref.Kind = countedKind
	reg := ledger.Registration{Name: "people", Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP,
		Neighbour: accounting.AddRemove, Bounds: bounds, Engine: ref, EngineColumns: cols, EngineSecret: analystPassword, Source: "postgres"}
	if _, err := st.Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	sc, err := st.Schema("people")
	if err != nil {
		t.Fatal(err)
	}
	env := &release.Local{
		Store:      func() (*ledger.Store, error) { return st, nil },
		NewSampler: func() *noise.Sampler { return noise.NewSeeded(1) },
	}
	callOf := func(fn string, given map[string]any) release.Call {
		args, err := release.ArgsFor(fn, given)
		if err != nil {
			t.Fatal(err)
		}
		return release.Call{Func: fn, Dataset: release.Ref{Name: "people", Schema: sc}, Args: args}
	}
	calls := []struct {
		name string
		call release.Call
	}{
		{"private_sql", callOf(catalog.PrivateSQL.Name, map[string]any{"query": "SELECT region, COUNT(*) AS n, AVG(age) AS a FROM people GROUP BY region", "eps": 5.0})},
		{"private_sum by", callOf(catalog.PrivateSum.Name, map[string]any{"col": "income", "by": "sex", "eps": 5.0, "delta": 1e-7})},
		{"private_quantile", callOf(catalog.PrivateQuantile.Name, map[string]any{"col": "age", "q": 0.5, "eps": 5.0})},
	}
	for _, c := range calls {
		// Execute and DryRun refuse over the dataset's budget; FitNote is
		// the DSL's pre-check of a cell, here with a cell budget of ε = 1
		// in the call's terms.
		refusal := func(err error) string {
			var be *release.BudgetError
			if !errors.As(err, &be) {
				t.Fatalf("%s over the budget: %v, not a budget refusal", c.name, err)
			}
			return be.Error()
		}
		runs := []struct {
			name string
			do   func() string
		}{
			{"Execute", func() string { _, err := env.Execute(context.Background(), c.call, nil); return refusal(err) }},
			{"DryRun", func() string { _, err := env.DryRun(context.Background(), c.call, nil); return refusal(err) }},
			{"FitNote", func() string {
				return env.FitNote(c.call, func(ev accounting.Event) bool { return ev.Eps <= 1 })
			}},
		}
		for _, r := range runs {
			opens, checks := engineOpens.Load(), engineChecks.Load()
			start := time.Now()
			text := r.do()
			took := time.Since(start)
			if !strings.Contains(text, "The largest eps that fits") {
				t.Errorf("%s %s: the refusal says no largest ε: %s", c.name, r.name, text)
			}
			dOpens, dChecks := engineOpens.Load()-opens, engineChecks.Load()-checks
			t.Logf("%s %s refused in %v, %d engine connections, %d catalog checks", c.name, r.name, took, dOpens, dChecks)
			if dOpens != 1 || dChecks != 1 {
				t.Errorf("%s %s: the refusal opened the engine %d times and checked its catalog %d times, want once each", c.name, r.name, dOpens, dChecks)
			}
		}
	}

	// A call that fits is checked before its charge, once.
	opens, checks := engineOpens.Load(), engineChecks.Load()
	if _, err := env.Execute(context.Background(), callOf(catalog.PrivateSQL.Name, map[string]any{"query": "SELECT COUNT(*) AS n FROM people", "eps": 0.1}), nil); err != nil {
		t.Fatal(err)
	}
	// One connection for the check before the charge, one for the data.
	if d := engineChecks.Load() - checks; d != 1 {
		t.Errorf("a charged call checked the engine's catalog %d times, want 1", d)
	}
	if d := engineOpens.Load() - opens; d != 2 {
		t.Errorf("a charged call opened the engine %d times, want 2 (the check, then the data)", d)
	}
}
