package benchrun

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
)

// BenchmarkCallFixedCost times one unfiltered private_count on a small
// registered snapshot, as the snapshot workload's count step makes it
// (a pool-leased reader, the durable charge, the receipt): the count
// comes from the snapshot's metadata, so what is timed is the fixed cost
// of a call. Profile it with -cpuprofile.
func BenchmarkCallFixedCost(b *testing.B) {
	dir := b.TempDir()
	csv := filepath.Join(dir, "people.csv")
	if _, err := writeTabularCSV(csv, 1000, tabDataSeed); err != nil {
		b.Fatal(err)
	}
	sb := &snapBench{}
	defer func(d func([]string, io.Writer, io.Writer) int) { dispatchCmd = d }(dispatchCmd)
	dispatchCmd = fakeAdd
	state := filepath.Join(dir, "state")
	if _, err := sb.register(state, "people", csv); err != nil {
		b.Fatal(err)
	}
	st, err := ledger.Open(state)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	exec := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }}
	ref, err := refOf(st, "people")
	if err != nil {
		b.Fatal(err)
	}
	// A small ε, so that the budget outlasts any b.N.
	call := benchCall(catalog.PrivateCount.Name, map[string]any{"eps": 0.01})
	call.Dataset = ref
	ctx := context.Background()
	if _, err := exec.Execute(ctx, call, nil); err != nil { // opens the reader and verifies the snapshot once
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := exec.Execute(ctx, call, nil); err != nil {
			b.Fatal(err)
		}
	}
}
