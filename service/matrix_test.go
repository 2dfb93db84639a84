package service_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestRemoteMatrixRefused: a data server refuses every call on a matrix
// dataset before planning (its wire format has no matrix releases), so
// nothing is charged and no charged call fails for want of an encoding.
func TestRemoteMatrixRefused(t *testing.T) {
	f := newFixture(t)
	// The refusal comes before any read, so the snapshot file need not exist.
	ref := &ledger.SnapshotRef{Path: filepath.Join(f.st.SnapshotDir(), "m-0.parquet"), Hash: strings.Repeat("0", 64), Rows: 2, Columns: []string{"c1", "c2"}}
	if _, err := f.st.Register(context.Background(), ledger.Registration{Name: "m", Snapshot: ref, Budget: accounting.Budget{Eps: 2, Delta: 1e-5},
		Accountant: accounting.ModeZCDP, Clip: 1, Source: "test", Matrix: &ledger.MatrixShape{Rows: 2, Cols: 2, Symmetric: true, EntryBound: 1}}); err != nil {
		t.Fatal(err)
	}
	c := f.client(10 * time.Second)
	for _, cl := range []struct {
		fn string
		kw map[string]any
	}{
		{"private_low_rank", map[string]any{"eps": 0.1, "delta": 1e-6}},
		{"private_pca", map[string]any{"eps": 0.1, "delta": 1e-6, "method": "ppm-entry"}},
	} {
		_, err := c.Execute(context.Background(), call(t, cl.fn, "m", cl.kw), nil)
		if name(err) != "NotAvailable" || !strings.Contains(err.Error(), "matrix dataset") {
			t.Errorf("%s on a matrix dataset: %v, want NotAvailable", cl.fn, err)
		}
	}
	s, err := f.st.Status("m")
	if err != nil || s.Charges != 0 {
		t.Errorf("refused calls: %+v, %v; want no charge", s, err)
	}
}
