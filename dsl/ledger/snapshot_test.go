package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// writeSnapshot writes a stand-in snapshot file into the store's folder
// and returns its reference (the ledger only records files and hashes).
func writeSnapshot(t *testing.T, st *Store, name string, content string) *SnapshotRef {
	t.Helper()
	if err := os.MkdirAll(st.SnapshotDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(st.SnapshotDir(), name+".parquet")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	return &SnapshotRef{Path: path, Hash: hex.EncodeToString(sum[:]), Columns: []string{"age", "income"},
		Bounds: map[string][2]float64{"age": {0, 120}}, Categorical: map[string][]string{"region": {"n", "s"}},
		UserColumn: "uid", Rows: 10, Users: 4}
}

func TestRegisterSnapshot(t *testing.T) {
	st, _ := openTemp(t)
	ctx := context.Background()
	snap := writeSnapshot(t, st, "people", "PAR1 stand-in")
	reg := Registration{Name: "people", Snapshot: snap, Budget: accounting.Budget{Eps: 1, Delta: 1e-6},
		Accountant: accounting.ModeZCDP, Clip: 1, Source: "people.csv"}
	info, err := st.Register(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	sc := info.Schema
	if sc.D != 2 || sc.Unit != "user" || sc.Bounds["age"] != [2]float64{0, 120} || len(sc.Categorical["region"]) != 2 || sc.PublicN != 0 {
		t.Errorf("schema %+v", sc)
	}
	path, hash, ok, err := st.Snapshot("people")
	if err != nil || !ok || path != snap.Path || hash != snap.Hash {
		t.Fatalf("Snapshot = %q %q %v %v", path, hash, ok, err)
	}
	if _, err := st.Load("people"); !errors.Is(err, ErrSnapshot) {
		t.Errorf("Load of a snapshot dataset: %v, want ErrSnapshot", err)
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// A snapshot changed after its registration fails verification.
	os.Chmod(snap.Path, 0o644)
	if err := os.WriteFile(snap.Path, []byte("PAR1 altered!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err == nil || !strings.Contains(err.Error(), "hash mismatch") {
		t.Errorf("Verify after altering the snapshot: %v", err)
	}
	// A dataset stored in the database has no snapshot.
	register(t, st, "d", accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	if _, _, ok, err := st.Snapshot("d"); ok || err != nil {
		t.Errorf("Snapshot of a database dataset: %v %v", ok, err)
	}
}

func TestRegisterSnapshotRefusals(t *testing.T) {
	st, _ := openTemp(t)
	ok := writeSnapshot(t, st, "x", "PAR1")
	outside := *ok
	outside.Path = filepath.Join(t.TempDir(), "x.parquet")
	empty := *ok
	empty.Rows = 0
	badBounds := *ok
	badBounds.Bounds = map[string][2]float64{"region": {0, 1}}
	base := Registration{Name: "x", Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Clip: 1}
	for _, tc := range []struct {
		name string
		snap *SnapshotRef
		want string
	}{
		{"outside the state directory", &outside, "not in the state directory's snapshots folder"},
		{"no rows", &empty, "no data rows"},
		{"bounds of a categorical column", &badBounds, `no numeric column "region"`},
	} {
		r := base
		r.Snapshot = tc.snap
		if _, err := st.Register(context.Background(), r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if all, _ := st.Datasets(); len(all) != 0 {
		t.Errorf("refused registrations left %d datasets", len(all))
	}
}
