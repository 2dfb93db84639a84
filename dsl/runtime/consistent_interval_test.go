package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// consistent=true shows intervals where the others show them: a grouped
// count's IntervalOf (around the key's least-squares fit, holding the
// value shown), "±" in its text with the note that says what it is, the
// CSV's ±95% column, and the dry run's half-width; the same for a
// private_sql COUNT(*) and SUM column. A stored release read back (the
// named replay) gives the same interval.
func TestConsistentIntervals(t *testing.T) {
	seedNoise(t, 29)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
c := private_count(ds, by="region", eps=1, consistent=true, name="cc")
lo, hi := c.IntervalOf("north", 0.95)
v := c.Get("north")
fmt.Println(lo <= hi, lo >= 0, hi-lo > 2)
lo2, hi2 := c.IntervalOf("north", 0.5)
fmt.Println(lo <= lo2, hi2 <= hi)
r := private_count(ds, by="region", eps=1, consistent=true, name="cc")
rlo, rhi := r.IntervalOf("north", 0.95)
fmt.Println(rlo == lo, rhi == hi, v >= 0)
fmt.Println(c.String())
fmt.Println(private_count(ds, by="region", eps=1, consistent=true, dry_run=true))`)
	lines := strings.Split(out, "\n")
	for i, want := range []string{"true true true", "true true", "true true true"} {
		if lines[i] != want {
			t.Errorf("line %d: %q, want %q\n%s", i, lines[i], want, out)
		}
	}
	for _, want := range []string{"north", "± ", "least-squares fit", "95 % interval: ± "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A consistent grouped release's download has the ±95% column, each the
// larger distance from the value shown to its fit's interval, and the
// value ± it holds that interval.
func TestConsistentIntervalCSV(t *testing.T) {
	params := map[string]any{release.ErrorParam: map[string]any{"kind": "fitted", "noise": "laplace", "scale": 2.0, "parts": 3, "rounded": true, "nonnegative": true}}
	rel := &release.Release{Value: &release.Groups{Stat: "count", By: "g", Keys: []string{"a", "b", "c"}, Values: []float64{10, 0, 5}, Fitted: []float64{11.2, -1.4, 4.9}},
		Receipt: &Receipt{Params: params}}
	g := groupResult(rel)
	rows, ok := csvRows(g)
	if !ok || len(rows) != 4 || rows[0][2] != "±95%" {
		t.Fatalf("rows %v", rows)
	}
	m, _ := release.ErrorOf(params)
	for i, v := range g.Values {
		lo, hi, err := m.FittedInterval(g.sums[i], 0.95)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := g.halfWidth95(g.Values, g.sums, g.counts, i)
		if !ok || v-h > lo || v+h < hi || rows[i+1][2] != fmtNum(h) {
			t.Errorf("key %s: %v ± %v (csv %s) does not hold [%v, %v]", g.Keys[i], v, h, rows[i+1][2], lo, hi)
		}
	}
}
