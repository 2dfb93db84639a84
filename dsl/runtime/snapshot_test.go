package runtime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// testSnapshots keeps the test binary's snapshot readers open across
// calls, as cmd/privnotes's pool does: a call leases its dataset's reader
// instead of starting and stopping a DuckDB (a third of the harness's CPU
// when each call opened its own). Its size holds the harness's largest
// working set, the four snapshot datasets of a configuration's eight
// worlds, which its calls visit in turn.
var testSnapshots = &snapshot.Pool{Size: 32}

// The test binary links the data engine in, as cmd/privnotes does.
func init() {
	err := release.RegisterSnapshots(func(path, hash string) (release.SnapshotReader, error) {
		l, err := testSnapshots.Open(path, hash)
		if err != nil {
			return nil, err // not a nil *Lease in an interface
		}
		return l, nil
	})
	if err != nil {
		panic(err) // a second data engine linked in: a build error
	}
	if err := release.RegisterSQLParser(snapshot.ParseSQL); err != nil {
		panic(err)
	}
	err = release.RegisterPublicTables(func(ctx context.Context, name string, t *release.PublicRows) (release.PublicSQL, error) {
		pt, err := snapshot.OpenPublicTable(ctx, name, t.Columns, t.Numeric, t.Rows)
		if err != nil {
			return nil, err // not a nil *PublicTable in an interface
		}
		return pt, nil
	})
	if err != nil {
		panic(err)
	}
	err = release.RegisterMemoryTables(func(ctx context.Context, m *release.MemoryRows) (release.MemoryTable, error) {
		mt, err := snapshot.OpenMemoryTable(ctx, (*snapshot.MemoryRows)(m))
		if err != nil {
			return nil, err // not a nil *MemoryTable in an interface
		}
		return countedMemoryTable{mt}, nil
	})
	if err != nil {
		panic(err)
	}
}

// memoryStatements counts the statements run on memory tables, so that
// a test can tell that data held in memory took the engine's path rather
// than the rows' (which gives the same releases, so nothing else shows
// it).
var memoryStatements atomic.Int64

// countedMemoryTable is a memory table counting its statements.
type countedMemoryTable struct{ *snapshot.MemoryTable }

func (t countedMemoryTable) Query(ctx context.Context, stmt string) ([][]any, error) {
	memoryStatements.Add(1)
	return t.MemoryTable.Query(ctx, stmt)
}

// registerSnapshot builds a snapshot of csv in dir's state and registers
// it as name.
func registerSnapshot(t testing.TB, dir, name, csv string, spec snapshot.Spec, r ledger.Registration) {
	t.Helper()
	src := testfix.WriteFile(t, t.TempDir(), name+".csv", csv)
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := os.MkdirAll(st.SnapshotDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	spec.From = src
	info, err := snapshot.Build(context.Background(), spec, st.SnapshotDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	r.Name, r.Snapshot, r.Source = name, info.Ref(), src
	if _, err := st.Register(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// peopleCSV has numeric, categorical and user columns.
func peopleCSV(rows int) string {
	var b strings.Builder
	b.WriteString("age,income,region,uid\n")
	for i := range rows {
		fmt.Fprintf(&b, "%d,%d,%s,u%d\n", 20+i%60, 1000*(i%50), []string{"north", "south", "mars"}[i%3], i%(rows/3+1))
	}
	return b.String()
}

// A dataset registered as a snapshot shows its typed schema and runs the
// matrix mechanisms and the counts from cells; the schema shows no count.
func TestSnapshotDatasetFromCells(t *testing.T) {
	dir := t.TempDir()
	registerSnapshot(t, dir, "people", peopleCSV(300),
		snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south"}}, UserColumn: "uid"},
		ledger.Registration{Budget: accounting.Budget{Eps: 5, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1e5})
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
fmt.Println(ds)
fmt.Println(ds.Categorical()["region"], ds.Bounds()["age"])
c := private_count(ds, eps=0.5, delta=1e-6)
p := private_pca(ds, k=1, eps=1, delta=1e-6, method="npm")
m := private_mean(ds, eps=1, delta=1e-6, columns=[]string{"age"})
fmt.Println(c.Value != 0, p.Components.RawMatrix().Rows, len(m.Values))
h := private_histogram(ds, col="region", eps=0.5, delta=1e-6)
fmt.Println(h.Keys)
a := private_histogram(ds, col="age", bins=4, eps=0.5)
fmt.Println(a.Keys)
sa := private_sum(ds, col="age", eps=0.5, delta=1e-6)
q := private_quantile(ds, col="age", q=0.5, eps=0.5)
fmt.Println(sa.Value != 0, q.Value >= 0 && q.Value <= 120)`)
	for _, want := range []string{"columns=[age income], categorical=[region]", "[north south] [0 120]", "true 2 1", "[north south other]", "[[0, 30) [30, 60) [60, 90) [90, 120]]", "true true"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "300") || strings.Contains(out, "101") {
		t.Errorf("the output shows a row or user count:\n%s", out)
	}
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	if status, err := st.Status("people"); err != nil || status.Charges != 7 {
		t.Errorf("status %+v, %v: want 7 charges", status, err)
	}
}
