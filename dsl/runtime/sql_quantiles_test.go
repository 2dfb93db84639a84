package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Three quantiles of one column, grouped, on an add-remove dataset run
// in the data engine as one joint release per group: at a large ε each
// lands on its exact rank (sqlPeople's north and south rows hold 20 ages,
// 20 + 3j or 21 + 3j, ten rows each: ranks 50, 100 and 150 of 200 are the
// 5th, 10th and 15th ages, any point up to the next), the receipt says
// the release was joint, and the rank bound is that of two draws.
func TestPrivateSQLJointQuantiles(t *testing.T) {
	_, ref, st := sqlPeople(t, accounting.AddRemove)
	env := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }, NewSampler: func() *noise.Sampler { return noise.NewSeeded(9) }}
	q := `SELECT region, QUANTILE(age, 0.25) AS a, MEDIAN(age) AS b, QUANTILE(age, 0.75) AS c FROM people GROUP BY region`
	args := release.NewArgs(map[string]any{"query": q, "eps": 1000.0, "delta": 0.0})
	rel, err := env.Execute(context.Background(), release.Call{Func: release.FnSQL, Dataset: ref, Args: args}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]float64{"north": 20, "south": 21}
	for _, row := range rel.Value.(*release.Table).Rows {
		base := first[row[0].(string)]
		for k, j := range []float64{4, 9, 14} {
			lo := base + 3*j
			if v := row[1+k].(float64); v < lo || v >= lo+3 {
				t.Errorf("%v: quantile %d is %v, want a point in [%v, %v)", row[0], k, v, lo, lo+3)
			}
		}
	}
	if !strings.Contains(rel.Receipt.NoiseScale, "released jointly with the 3 quantiles of its column") {
		t.Errorf("receipt: %s", rel.Receipt.NoiseScale)
	}
	if m := release.ErrorsOf(rel.Receipt.Params)["b"]; m.Depth != 2 {
		t.Errorf("error model %+v, want the rank bound of two draws", m)
	}
}
