package benchrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/bench"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// tabTailT sets the tests' tolerances: a noise draw may exceed tabTailT
// times its scale with probability about e^-tabTailT (e^-30 ≈ 1e-13), so
// a failure means a bug, not bad luck (and with seeded noise the draws are
// fixed anyway).
const tabTailT = 30

// runTabularJSON runs the workload as `privnotes bench --workload tabular
// --json --n 2000 --seeds 1 [--methods ...]` does and returns its JSON
// rows.
func runTabularJSON(t *testing.T, methods ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	opts := Options{Workload: tabularWorkload, JSON: true, Config: bench.Config{N: 2000, Seeds: 1, Methods: methods}}
	if code := Run(opts, &out, &errb); code != 0 {
		t.Fatalf("%+v: exit %d, stderr %q", opts, code, errb.String())
	}
	var rows []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not one JSON object per line: %v: %q", err, sc.Text())
		}
		rows = append(rows, m)
	}
	return rows
}

func rowKey(m map[string]any) string {
	ex, _ := m["extra"].(map[string]any)
	setting, _ := ex["setting"].(string)
	return m["method"].(string) + " / " + setting
}

// At n = 2000 and one seed, every step's row is there once, with a
// positive time and an error within its documented tolerance at ε = 1,
// δ = 0, replace-one (the defaults).
func TestBenchTabularRows(t *testing.T) {
	const n = 2000
	rows := runTabularJSON(t)
	truth, err := writeTabularCSV(filepath.Join(t.TempDir(), "t.csv"), n, tabDataSeed)
	if err != nil {
		t.Fatal(err)
	}
	scan := snapshotScanKind()
	want := []string{
		"ingest-csv / engine", "ingest-csv / floor:duckdb",
		"ingest-parquet / engine", "ingest-parquet / floor:duckdb",
		"open / engine",
		"scan / engine:" + scan, "scan / floor:duckdb",
		"sum / age", "sum / income",
		"histogram / region", "histogram / age, 12 bins",
		"quantile / age, q=0.5",
	}
	got := map[string]map[string]any{}
	for _, m := range rows {
		k := rowKey(m)
		if got[k] != nil {
			t.Errorf("row %q twice", k)
		}
		got[k] = m
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d: %v", len(rows), len(want), keys(got))
	}
	for _, k := range want {
		m := got[k]
		if m == nil {
			t.Errorf("no row %q among %v", k, keys(got))
			continue
		}
		if m["workload"] != "tabular" || m["n"] != float64(n) || m["seed"] != 0.0 {
			t.Errorf("%s: malformed row %v", k, m)
		}
		if s, _ := m["seconds"].(float64); !(s > 0) || math.IsInf(s, 0) {
			t.Errorf("%s: seconds %v, want > 0", k, m["seconds"])
		}
		e, _ := m["error"].(float64)
		if !(e >= 0) || math.IsInf(e, 0) {
			t.Errorf("%s: error %v, want finite ≥ 0", k, m["error"])
		}
		ex := m["extra"].(map[string]any)
		for _, f := range []string{"rows_per_s", "heap_peak_mb", "alloc_mb"} {
			if v, ok := ex[f].(float64); !ok || !(v >= 0) || math.IsInf(v, 0) {
				t.Errorf("%s: extra %s = %v, want finite ≥ 0", k, f, ex[f])
			}
		}
	}

	// Ingestion and opening are checks: every row read.
	for _, k := range want[:5] {
		if m := got[k]; m != nil && m["error"] != 0.0 {
			t.Errorf("%s: error %v, want 0 (rows lost)", k, m["error"])
		}
	}
	// The scans sum what they read: only rounding separates them from the
	// exact sums (the engine's clamped, DuckDB's raw).
	for k, exact := range map[string]float64{want[5]: truth.sumIncome, want[6]: truth.rawSumIncome} {
		if m := got[k]; m != nil && !(m["error"].(float64) <= 1e-9*exact) {
			t.Errorf("%s: error %v of the scanned sum %v", k, m["error"], exact)
		}
	}
	// Sums: discrete Laplace of scale b, plus at most one lattice step
	// (below b) of rounding.
	for k, c := range map[string]struct {
		bounds [2]float64
		exact  float64
	}{"sum / age": {tabAgeBounds, truth.sumAge}, "sum / income": {tabIncomeBounds, truth.sumIncome}} {
		m := got[k]
		if m == nil {
			continue
		}
		p, err := tabular.PlanSum(c.bounds[0], c.bounds[1], 1, 0, accounting.ReplaceOne)
		if err != nil {
			t.Fatal(err)
		}
		ex := m["extra"].(map[string]any)
		if ex["exact"] != c.exact || ex["scale"] != p.Scale {
			t.Errorf("%s: exact %v scale %v, want %v and %v", k, ex["exact"], ex["scale"], c.exact, p.Scale)
		}
		if e := m["error"].(float64); e > (tabTailT+1)*p.Scale {
			t.Errorf("%s: error %v beyond %d·b = %v", k, e, tabTailT+1, (tabTailT+1)*p.Scale)
		}
	}
	// Histograms: per count the same tail, plus 0.5 for rounding to an
	// integer, summed over the bins (L1).
	cats, err := tabular.NewCategoryBins(tabRegions, ledger.OtherCategory)
	if err != nil {
		t.Fatal(err)
	}
	ages, err := tabular.NewNumericBins(tabAgeBounds[0], tabAgeBounds[1], tabAgeBins)
	if err != nil {
		t.Fatal(err)
	}
	for k, b := range map[string]tabular.Binning{"histogram / region": cats, "histogram / age, 12 bins": ages} {
		m := got[k]
		if m == nil {
			continue
		}
		hp, err := tabular.PlanHistogram(b, 1, 1, 0, accounting.ReplaceOne)
		if err != nil {
			t.Fatal(err)
		}
		bins := b.Len()
		if m["extra"].(map[string]any)["bins"] != float64(bins) {
			t.Errorf("%s: %v bins, want %d", k, m["extra"].(map[string]any)["bins"], bins)
		}
		if lim := float64(bins) * ((tabTailT+1)*hp.Scale + 0.5); m["error"].(float64) > lim {
			t.Errorf("%s: L1 error %v beyond %v", k, m["error"], lim)
		}
	}
	// The quantile: the exponential mechanism puts probability at most
	// (K+1)·R^-D on grid points whose loss exceeds the best present loss
	// d0 by D or more, so with D = ⌈(ln(K+1) + 30)/ln R⌉ the released
	// point's rank lies within d0 + D of q·n but for a 1e-13 chance; d0 is
	// at most the loss of the first grid point at or above the exact
	// quantile (equal values make rank gaps). At ε = 1, n = 2000 that is
	// about ±90 ranks, about ±2 years of age.
	if m := got["quantile / age, q=0.5"]; m != nil {
		p, err := tabular.PlanQuantile(tabAgeBounds[0], tabAgeBounds[1], tabQuantileQ, 1)
		if err != nil {
			t.Fatal(err)
		}
		ex := m["extra"].(map[string]any)
		exact, value := truth.quantile(tabQuantileQ), ex["value"].(float64)
		if ex["exact"] != exact || math.Abs(value-exact) != m["error"] {
			t.Errorf("quantile: exact %v value %v error %v; want exact %v", ex["exact"], value, m["error"], exact)
		}
		rank := func(g float64) float64 { // #{values ≤ g}
			return float64(sort.Search(len(truth.sortedAge), func(i int) bool { return truth.sortedAge[i] > g }))
		}
		qn := tabQuantileQ * n
		k := int(math.Ceil((exact - p.Lo) / (p.Hi - p.Lo) * float64(p.Grid)))
		for p.GridPoint(k) < exact {
			k++
		}
		d0 := math.Ceil(math.Abs(rank(p.GridPoint(k)) - qn))
		d := math.Ceil((math.Log(float64(p.Grid+1)) + tabTailT) / math.Log(p.Ratio()))
		t.Logf("quantile %v (exact %v): rank %v, allowed q·n ± %v", value, exact, rank(value), d0+d)
		if r := rank(value); math.Abs(r-qn) > d0+d {
			t.Errorf("quantile %v has rank %v, more than %v + %v from q·n = %v", value, r, d0, d, qn)
		}
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The table form prints the median table and the engine-against-floor
// table, with a ratio for every step that has a floor.
func TestBenchTabularTable(t *testing.T) {
	var out, errb bytes.Buffer
	opts := Options{Workload: tabularWorkload, Config: bench.Config{N: 2000, Seeds: 1}}
	if code := Run(opts, &out, &errb); code != 0 {
		t.Fatalf("%+v: exit %d, stderr %q", opts, code, errb.String())
	}
	text := out.String()
	for _, s := range []string{"median error", "engine/floor", "Go heap peak MB", "DuckDB's C++ memory is not counted"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	_, report, _ := strings.Cut(text, "engine/floor")
	ratios := 0
	for _, line := range strings.Split(report, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "ingest-csv", "ingest-parquet", "scan":
			if !strings.Contains(line, "×") {
				t.Errorf("no ratio in %q", line)
			}
			ratios++
		}
	}
	if ratios != 3 {
		t.Errorf("%d steps with a floor, want 3 (ingest-csv, ingest-parquet, scan):\n%s", ratios, text)
	}
}

// --methods selects steps; a calibration the workload has not is refused
// by name.
func TestBenchTabularFlags(t *testing.T) {
	rows := runTabularJSON(t, "scan", "quantile")
	var ks []string
	for _, m := range rows {
		ks = append(ks, rowKey(m))
	}
	sort.Strings(ks)
	if want := []string{"quantile / age, q=0.5", "scan / engine:" + snapshotScanKind(), "scan / floor:duckdb"}; strings.Join(ks, ";") != strings.Join(want, ";") {
		t.Errorf("--methods scan,quantile gave %v, want %v", ks, want)
	}
	var out, errb bytes.Buffer
	gdp := Options{Workload: tabularWorkload, Config: bench.Config{N: 500, Seeds: 1, Calibration: "gdp"}}
	if code := Run(gdp, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), `"gdp"`) || !strings.Contains(errb.String(), "zCDP") {
		t.Errorf("--calibration gdp: exit %d, stderr %q", code, errb.String())
	}
	// Importing this package registers the workload, so that the binary's
	// --list and --workload see it (cmd/privnotes's TestBenchList).
	if _, err := bench.Lookup(tabularWorkload); err != nil {
		t.Errorf("the tabular workload is not registered: %v", err)
	}
}
