package service_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// registerPeople registers a snapshot dataset "people" in f's state: age
// bounded in [0, 120], income, and region declared with the domain
// {north, south} (rows of "mars" are in no group).
func registerPeople(t *testing.T, f *fixture) {
	t.Helper()
	var b strings.Builder
	b.WriteString("age,income,region\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d,%d,%s\n", 20+i%60, 1000*(i%50), []string{"north", "south", "mars"}[i%3])
	}
	src := filepath.Join(t.TempDir(), "people.csv")
	if err := os.WriteFile(src, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.st.SnapshotDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := snapshot.Spec{From: src, Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south"}}}
	info, err := snapshot.Build(context.Background(), spec, f.st.SnapshotDir(), "people")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Register(context.Background(), ledger.Registration{Name: "people", Snapshot: info.Ref(), Source: src,
		Budget: accounting.Budget{Eps: 10, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1e5}); err != nil {
		t.Fatal(err)
	}
}

// sqlCall is the call a client's runtime sends for private_sql(query,
// kw...) when query's FROM is p1.people: the query among the arguments,
// the dataset by its name on the server.
func sqlCall(t *testing.T, query string, kw map[string]any) release.Call {
	t.Helper()
	c := call(t, "private_sql", "people", kw)
	c.Args.Vals["query"] = query
	return c
}

const groupedSQL = "SELECT region, COUNT(*) AS n, AVG(income, 0, 50000) AS avg_income FROM p1.people GROUP BY region"

// TestRemoteSQL: a grouped private_sql query naming a server's dataset
// as server.name is planned, charged and run by the server, and comes
// back as the table the engine releases (keys of the declared domain,
// the AVG's noisy parts for its intervals), with the server's receipt.
// Its dry run charges nothing and says what the run charges.
func TestRemoteSQL(t *testing.T) {
	f := newFixture(t)
	registerPeople(t, f)
	c := f.client(30 * time.Second)
	ctx := context.Background()
	kw := map[string]any{"eps": 1.0}

	p, err := c.Plan(sqlCall(t, groupedSQL, kw))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.DryRun(ctx, sqlCall(t, groupedSQL, map[string]any{"eps": 1.0, "dry_run": true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rc.DryRun || rc.Charged || f.chargesOf("people") != 0 {
		t.Fatalf("dry run: %+v, %d charges", rc, f.chargesOf("people"))
	}
	if !reflect.DeepEqual(rc.Cost.Kind, p.Event().Kind) || rc.Cost.Rho != p.Event().Rho || rc.Cost.Eps != p.Event().Eps {
		t.Errorf("dry run cost %+v, plan %+v", rc.Cost, p.Event())
	}

	rel, err := c.Execute(ctx, sqlCall(t, groupedSQL, kw), nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := rel.Value.(*release.Table)
	if !ok {
		t.Fatalf("a %T, want a *release.Table", rel.Value)
	}
	if want := []string{"region", "n", "avg_income"}; !reflect.DeepEqual(tb.Columns, want) {
		t.Errorf("columns %q, want %q", tb.Columns, want)
	}
	if want := []string{"key", "count", "avg"}; !reflect.DeepEqual(tb.Kinds, want) {
		t.Errorf("kinds %q, want %q", tb.Kinds, want)
	}
	if len(tb.Rows) != 2 || tb.Rows[0][0] != "north" || tb.Rows[1][0] != "south" {
		t.Errorf("rows %v, want the groups north and south", tb.Rows)
	}
	for _, r := range tb.Rows {
		for _, v := range r[1:] {
			if _, ok := v.(float64); !ok {
				t.Errorf("row %v: a value of type %T", r, v)
			}
		}
	}
	if parts := tb.Parts["avg_income"]; len(parts) != 2 || len(parts[0]) != 2 {
		t.Errorf("AVG parts %v, want its noisy counts and centred sums for 2 rows", parts)
	}
	if !rel.Receipt.Charged || rel.Receipt.Dataset != "people" || rel.Receipt.LedgerID == 0 || f.chargesOf("people") != 1 {
		t.Errorf("receipt %+v, %d charges on the server", rel.Receipt, f.chargesOf("people"))
	}
	if rel.Receipt.Cost.Rho != p.Event().Rho || rel.Receipt.Cost.Eps != p.Event().Eps {
		t.Errorf("charged %+v, planned %+v", rel.Receipt.Cost, p.Event())
	}
}

// TestRemoteSQLRefusals: queries outside the grammar, a FROM that names
// another dataset than the request's, and from= are refused by the
// server with ArgumentErrors before any charge: its ledger is unchanged.
func TestRemoteSQLRefusals(t *testing.T) {
	f := newFixture(t)
	registerPeople(t, f)
	c := f.client(30 * time.Second)
	ctx := context.Background()
	cases := []struct {
		name, query string
		want        string
	}{
		{"select star", "SELECT * FROM p1.people", "private_sql"},
		{"second statement", "SELECT COUNT(*) FROM p1.people; SELECT COUNT(*) FROM p1.people", "private_sql"},
		{"unknown column", "SELECT COUNT(*) FROM p1.people WHERE height > 2", "height"},
		{"another dataset", "SELECT COUNT(*) FROM p1.tab", `FROM names dataset "tab"`},
	}
	for _, tc := range cases {
		_, err := c.Execute(ctx, sqlCall(t, tc.query, map[string]any{"eps": 0.5}), nil)
		var e *release.Error
		if !errors.As(err, &e) || e.Name != release.NameArgumentError || !strings.Contains(e.Msg, tc.want) {
			t.Errorf("%s: %v, want an ArgumentError naming %q", tc.name, err, tc.want)
		}
	}
	if n := f.chargesOf("people"); n != 0 {
		t.Errorf("%d charges after refusals", n)
	}
	if n := f.charges(); n != 0 {
		t.Errorf("%d charges of tab after refusals", n)
	}
}

// TestRemoteSQLNamedReplay: a named query run again under a new call id
// returns the release the server's ledger stores under its name, with no
// second charge; the same name with another query is refused.
func TestRemoteSQLNamedReplay(t *testing.T) {
	f := newFixture(t)
	registerPeople(t, f)
	c := f.client(30 * time.Second)
	ctx := context.Background()
	kw := map[string]any{"eps": 1.0, "name": "by_region"}
	first, err := c.Execute(ctx, sqlCall(t, groupedSQL, kw), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Execute(ctx, sqlCall(t, groupedSQL, kw), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Receipt.Replayed || again.Receipt.LedgerID != first.Receipt.LedgerID || !reflect.DeepEqual(again.Value, first.Value) {
		t.Errorf("replay: receipt %+v\n got %+v\nwant %+v", again.Receipt, again.Value, first.Value)
	}
	if n := f.chargesOf("people"); n != 1 {
		t.Errorf("%d charges, want 1", n)
	}
	other := "SELECT region, COUNT(*) AS n FROM p1.people GROUP BY region"
	_, err = c.Execute(ctx, sqlCall(t, other, kw), nil)
	var e *release.Error
	if !errors.As(err, &e) || e.Name != release.NameArgumentError {
		t.Errorf("the name with another query: %v, want an ArgumentError", err)
	}
	if n := f.chargesOf("people"); n != 1 {
		t.Errorf("%d charges after the refused replay, want 1", n)
	}
}

// TestRemoteSQLKeysWeights: keys=, weights=, delta and consistent reach
// the server's planner as a local call gives them: the groups are the
// listed keys (in their order), the budget split follows the weights.
func TestRemoteSQLKeysWeights(t *testing.T) {
	f := newFixture(t)
	registerPeople(t, f)
	c := f.client(30 * time.Second)
	q := "SELECT floor(age / 10) AS band, COUNT(*) AS n, SUM(income, 0, 50000) AS s FROM p1.people GROUP BY band"
	kw := map[string]any{"eps": 1.0, "delta": 1e-6, "consistent": true,
		"keys": map[string]any{"band": []any{2.0, 3.0, 4.0}}}
	even, err := c.Plan(sqlCall(t, q, kw))
	if err != nil {
		t.Fatal(err)
	}
	kw["weights"] = []float64{1, 3}
	weighted, err := c.Plan(sqlCall(t, q, kw))
	if err != nil {
		t.Fatal(err)
	}
	if even.Noise == weighted.Noise {
		t.Errorf("weights=[1, 3] planned the noise of even shares: %s", weighted.Noise)
	}
	rel, err := c.Execute(context.Background(), sqlCall(t, q, kw), nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := rel.Value.(*release.Table)
	var bands []any
	for _, r := range tb.Rows {
		bands = append(bands, r[0])
	}
	if want := []any{2.0, 3.0, 4.0}; !reflect.DeepEqual(bands, want) {
		t.Errorf("groups %v, want the keys %v", bands, want)
	}
	if rel.Receipt.Delta != 1e-6 {
		t.Errorf("receipt δ %g, want 1e-6", rel.Receipt.Delta)
	}
}
