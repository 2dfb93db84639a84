package service_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// The test binary links the data engine in, as cmd/privnotes does:
// matrix datasets are snapshots.
func init() {
	err := release.RegisterSnapshots(func(path, hash string) (release.SnapshotReader, error) {
		return snapshot.Open(path, hash)
	})
	if err != nil {
		panic(err) // a second data engine linked in: a build error
	}
	if err := release.RegisterSQLParser(snapshot.ParseSQL); err != nil {
		panic(err)
	}
}

// registerMatrix registers a rows×cols matrix dataset name (symmetric when
// rows == cols) in f's state.
func registerMatrix(t *testing.T, f *fixture, name string, rows, cols int) {
	t.Helper()
	var b strings.Builder
	for j := range cols {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "c%d", j+1)
	}
	b.WriteByte('\n')
	for i := range rows {
		for j := range cols {
			if j > 0 {
				b.WriteByte(',')
			}
			a, c := i, j
			if rows == cols && c < a {
				a, c = c, a
			}
			fmt.Fprint(&b, 0.5*math.Sin(float64(3*a+c+1)))
		}
		b.WriteByte('\n')
	}
	src := filepath.Join(t.TempDir(), name+".csv")
	if err := os.WriteFile(src, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.st.SnapshotDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Build(context.Background(), snapshot.Spec{From: src}, f.st.SnapshotDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	ms := &ledger.MatrixShape{Rows: rows, Cols: cols, Symmetric: rows == cols, EntryBound: 1}
	if _, err := f.st.Register(context.Background(), ledger.Registration{Name: name, Snapshot: info.Ref(), Source: src,
		Budget: accounting.Budget{Eps: 20, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1, Matrix: ms}); err != nil {
		t.Fatal(err)
	}
}

// shapes describes a release's type and the dimensions of its parts.
func shapes(v any) string {
	dims := func(m *mat.Dense) string {
		if m == nil {
			return "nil"
		}
		r, c := m.Dims()
		return fmt.Sprintf("%d×%d", r, c)
	}
	switch x := v.(type) {
	case *release.PCA:
		return fmt.Sprintf("%T components %s right %s values %d support %d", x, dims(x.Components), dims(x.Right), len(x.Values), len(x.Support))
	case *release.LowRank:
		return fmt.Sprintf("%T components %s right %s values %d matrix %s", x, dims(x.Components), dims(x.Right), len(x.Values), dims(x.Matrix))
	}
	return fmt.Sprintf("%T", v)
}

// TestRemoteMatrixReleases: private_low_rank and private_pca on symmetric
// and rectangular matrix datasets of a server return the types and shapes
// the in-process executor returns on the same datasets, charged to the
// server's ledger; row functions on them are refused before any charge,
// as locally.
func TestRemoteMatrixReleases(t *testing.T) {
	f := newFixture(t)
	registerMatrix(t, f, "m", 4, 4)
	registerMatrix(t, f, "r", 3, 2)
	c := f.client(30 * time.Second)
	local := &release.Local{Store: func() (*ledger.Store, error) { return f.st, nil }}
	ctx := context.Background()
	for _, tc := range []struct {
		fn, ds string
		kw     map[string]any
		want   string
	}{
		{"private_low_rank", "m", map[string]any{"k": 2, "eps": 1.0, "delta": 1e-6}, "*release.LowRank components 4×2 right nil values 2 matrix 4×4"},
		{"private_low_rank", "r", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6}, "*release.LowRank components 3×1 right 2×1 values 1 matrix 3×2"},
		{"private_pca", "m", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "ppm-entry"}, "*release.PCA components 4×1 right nil values 1 support 0"},
		{"private_pca", "r", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "ppm-entry"}, "*release.PCA components 3×1 right 2×1 values 1 support 0"},
	} {
		t.Run(tc.fn+"/"+tc.ds, func(t *testing.T) {
			sc, err := f.st.Schema(tc.ds)
			if err != nil {
				t.Fatal(err)
			}
			before, err := f.st.Status(tc.ds)
			if err != nil {
				t.Fatal(err)
			}
			remote, err := c.Execute(ctx, call(t, tc.fn, tc.ds, tc.kw), nil)
			if err != nil {
				t.Fatalf("remote: %v", err)
			}
			lc := call(t, tc.fn, tc.ds, tc.kw)
			lc.Dataset.Schema = sc
			loc, err := local.Execute(ctx, lc, nil)
			if err != nil {
				t.Fatalf("local: %v", err)
			}
			if got, lgot := shapes(remote.Value), shapes(loc.Value); got != tc.want || lgot != tc.want {
				t.Errorf("remote %s, local %s; want %s", got, lgot, tc.want)
			}
			if reflect.TypeOf(remote.Value) != reflect.TypeOf(loc.Value) || remote.Receipt.Mechanism != loc.Receipt.Mechanism || remote.Receipt.Cost != loc.Receipt.Cost {
				t.Errorf("remote %T %s %+v, local %T %s %+v", remote.Value, remote.Receipt.Mechanism, remote.Receipt.Cost, loc.Value, loc.Receipt.Mechanism, loc.Receipt.Cost)
			}
			after, err := f.st.Status(tc.ds)
			if err != nil || after.Charges != before.Charges+2 {
				t.Errorf("charges %d → %d (%v), want the remote and the local call", before.Charges, after.Charges, err)
			}
		})
	}
	// Row functions, and row methods of private_pca, are refused on a
	// matrix dataset before anything is charged, as locally.
	for _, cl := range []struct {
		fn string
		kw map[string]any
	}{
		{"private_count", map[string]any{"eps": 0.1}},
		{"private_pca", map[string]any{"eps": 0.1, "delta": 1e-6, "method": "npm"}},
		{"private_pca", map[string]any{"k": 1, "eps": 0.1, "delta": 1e-6, "method": "federated"}},
	} {
		before, _ := f.st.Status("m")
		if _, err := c.Execute(ctx, call(t, cl.fn, "m", cl.kw), nil); name(err) != "ArgumentError" || !strings.Contains(err.Error(), "matrix dataset") {
			t.Errorf("%s %v on a matrix dataset: %v, want ArgumentError", cl.fn, cl.kw["method"], err)
		}
		if after, _ := f.st.Status("m"); after.Charges != before.Charges {
			t.Errorf("%s: a refused call was charged", cl.fn)
		}
	}
	pca := call(t, "private_pca", "m", map[string]any{"k": 1, "eps": 0.1, "delta": 1e-6, "method": "federated"})
	pca.ID = "fed-matrix"
	if _, err := c.FedOpen(ctx, pca); name(err) != "ArgumentError" {
		t.Errorf("a federated call on a matrix dataset: %v, want ArgumentError", err)
	}
}

// TestRemoteGapAuto: the κ that private_pca(gap="auto") selects comes back
// from a server as it does locally: one of the public grid's guesses.
func TestRemoteGapAuto(t *testing.T) {
	f := newFixtureBudget(t, accounting.Budget{Eps: 20, Delta: 1e-5})
	c := f.client(30 * time.Second)
	local := &release.Local{Store: func() (*ledger.Store, error) { return f.st, nil }}
	sc, err := f.st.Schema("tab")
	if err != nil {
		t.Fatal(err)
	}
	kw := map[string]any{"k": 1, "eps": 2.0, "delta": 1e-6, "method": "adaptive", "gap": "auto", "iters": 4}
	remote, err := c.Execute(context.Background(), call(t, "private_pca", "tab", kw), nil)
	if err != nil {
		t.Fatalf("remote: %v", err)
	}
	lc := call(t, "private_pca", "tab", kw)
	lc.Dataset.Schema = sc
	loc, err := local.Execute(context.Background(), lc, nil)
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	inGrid := func(g float64) bool {
		for _, x := range pca.AutoGaps {
			if g == x {
				return true
			}
		}
		return false
	}
	r, l := remote.Value.(*release.PCA), loc.Value.(*release.PCA)
	if shapes(r) != shapes(l) || !inGrid(r.Gap) || !inGrid(l.Gap) {
		t.Errorf("remote %s κ=%v, local %s κ=%v; want the same shapes and κ in %v", shapes(r), r.Gap, shapes(l), l.Gap, pca.AutoGaps)
	}
	// Other calls select no κ.
	plain, err := c.Execute(context.Background(), call(t, "private_pca", "tab", map[string]any{"k": 1, "eps": 0.5, "delta": 1e-6, "method": "gauss"}), nil)
	if err != nil || plain.Value.(*release.PCA).Gap != 0 {
		t.Errorf("a gauss call: %v, κ %v", err, plain)
	}
}
