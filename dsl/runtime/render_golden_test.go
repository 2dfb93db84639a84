package runtime

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

var updateRender = flag.Bool("update-render", false, "rewrite testdata/render.golden from the current renderings")

// displayed is what the kernel and `privnotes notebook verify` read of a
// result: its text, its HTML and its output metadata.
type displayed interface {
	String() string
	HTML() string
	Metadata() map[string]any
}

// renderCases are every result type charged, as a dry run, without a
// receipt, empty and nil, and the grouped ones with by=.
func renderCases() []struct {
	name string
	r    displayed
} {
	rc := func(dry bool) *Receipt {
		r := &Receipt{Dataset: "people", Function: "private_x", Mechanism: "x/laplace", Eps: 0.5, Delta: 1e-6,
			Cost: accounting.Pure(0.5), NoiseScale: "b=2", Note: "a <note>", Charged: !dry, DryRun: dry,
			Params: map[string]any{"k": 2}, Name: "n1", ReleaseHash: "ab12"}
		r.Charge = release.Charge{Accountant: "zcdp", Filter: "zCDP filter ρ=0.125", LedgerID: 7, Block: "b1", Remaining: accounting.Budget{Eps: 1.5, Delta: 1e-5}}
		return r
	}
	m := mat.NewDense(3, 2, []float64{0.6, 0.1, 0.8, -0.2, 0, 0.97})
	sq := mat.NewDense(3, 3, []float64{1, 2, 3, 2, 4, 5, 3, 5, 6})
	keys := []string{"north", "sou<th>", "other"}
	group := func(stat, col string) *GroupResult {
		return &GroupResult{Stat: stat, Column: col, By: "region", Keys: keys, Values: []float64{12, -1, 3.25}}
	}
	type tc = struct {
		name string
		r    displayed
	}
	var out []tc
	for _, state := range []string{"charged", "dry", "noreceipt"} {
		var r *Receipt
		switch state {
		case "charged":
			r = rc(false)
		case "dry":
			r = rc(true)
		}
		pca := &PCAResult{Components: m, Values: []float64{3, 1}, Support: []int{0, 2}, Gap: 0.25, Method: "npm", Columns: []string{"a", "b", "c"}}
		pca.Receipt = r
		count := &CountResult{Value: 41.7}
		count.Receipt = r
		gcount := &CountResult{Value: 14.25, GroupResult: group("count", "")}
		gcount.Receipt, gcount.GroupResult.Receipt = r, r
		mean := &MeanResult{Columns: []string{"age", "w"}, Values: []float64{41.5, -0.25}}
		mean.Receipt = r
		gmean := &MeanResult{Columns: []string{"age"}, GroupResult: group("mean", "age")}
		gmean.Receipt, gmean.GroupResult.Receipt = r, r
		sum := &SumResult{Value: 1234.5678, Column: "income"}
		sum.Receipt = r
		gsum := &SumResult{Value: 14.25, Column: "income", GroupResult: group("sum", "income")}
		gsum.Receipt, gsum.GroupResult.Receipt = r, r
		hist := &HistogramResult{Column: "region", Keys: keys, Counts: []float64{3, -1, 7}}
		hist.Receipt = r
		q := &QuantileResult{Column: "age", Q: 0.9, Value: 61.5}
		q.Receipt = r
		fedrep := &FedRepResult{U: m, Columns: []string{"a", "b", "c"}}
		fedrep.Receipt = r
		jl := &ClassifyJLResult{U: m, Columns: []string{"a", "b"}}
		jl.Receipt = r
		lr := &LowRankResult{Matrix: sq, Components: m, Values: []float64{9, 2}, Method: "lowrank/gaussian"}
		lr.Receipt = r
		g := group("count", "")
		g.Receipt = r
		for _, c := range []tc{{"PCAResult", pca}, {"CountResult", count}, {"CountResult by", gcount},
			{"MeanResult", mean}, {"MeanResult by", gmean}, {"SumResult", sum}, {"SumResult by", gsum},
			{"HistogramResult", hist}, {"QuantileResult", q}, {"FedRepResult", fedrep}, {"ClassifyJLResult", jl},
			{"LowRankResult", lr}, {"GroupResult", g}} {
			out = append(out, tc{c.name + " " + state, c.r})
		}
	}
	// The intervals of the noise (interval.go): a receipt with an error
	// model shows "± h" per value, a mean's from its parts, a quantile's
	// rank bound; a dry run states the half-width it would get.
	withErr := func(dry bool, m release.ErrorModel) releaseBase {
		r := rc(dry)
		r.Params = map[string]any{"k": 2, release.ErrorParam: m}
		return releaseBase{r}
	}
	lap := release.ErrorModel{Kind: release.ErrLaplace, Scale: 2, Rounded: true, HalfWidth95: 6}
	ratio := release.ErrorModel{Kind: release.ErrRatio, Noise: release.ErrGaussian, Scale: 30, CountScale: 4, Lo: 0, Hi: 120, SumHalfWidth: 67.3, CountHalfWidth: 9}
	rank := release.ErrorModel{Kind: release.ErrExponential, Candidates: 1 << 20, WeightRatio: 1.6487, RankError95: 33}
	gmeanIv := &MeanResult{Columns: []string{"age"}, GroupResult: group("mean", "age")}
	gmeanIv.releaseBase = withErr(false, ratio)
	gmeanIv.GroupResult.releaseBase = gmeanIv.releaseBase
	gmeanIv.GroupResult.sums, gmeanIv.GroupResult.counts = []float64{1200, -30, 97.5}, []float64{100, 30, 30}
	out = append(out,
		tc{"CountResult interval", &CountResult{Value: 41.7, releaseBase: withErr(false, lap)}},
		tc{"CountResult interval dry", &CountResult{releaseBase: withErr(true, lap)}},
		tc{"HistogramResult interval", &HistogramResult{Column: "region", Keys: keys, Counts: []float64{3, -1, 7}, releaseBase: withErr(false, lap)}},
		tc{"MeanResult interval", &MeanResult{Columns: []string{"age", "w"}, Values: []float64{41.5, -0.25}, sums: []float64{4150, -25}, counts: []float64{100},
			releaseBase: withErr(false, ratio)}},
		tc{"MeanResult by interval", gmeanIv},
		tc{"MeanResult interval dry", &MeanResult{releaseBase: withErr(true, ratio)}},
		tc{"QuantileResult interval", &QuantileResult{Column: "age", Q: 0.5, Value: 41.25, releaseBase: withErr(false, rank)}})
	var pca *PCAResult
	var count *CountResult
	var mean *MeanResult
	var sum *SumResult
	var hist *HistogramResult
	var q *QuantileResult
	var fedrep *FedRepResult
	var jl *ClassifyJLResult
	var lr *LowRankResult
	var g *GroupResult
	out = append(out, tc{"PCAResult nil", pca}, tc{"CountResult nil", count}, tc{"MeanResult nil", mean},
		tc{"SumResult nil", sum}, tc{"HistogramResult nil", hist}, tc{"QuantileResult nil", q},
		tc{"FedRepResult nil", fedrep}, tc{"ClassifyJLResult nil", jl}, tc{"LowRankResult nil", lr}, tc{"GroupResult nil", g},
		tc{"PCAResult empty", &PCAResult{}}, tc{"CountResult empty", &CountResult{}}, tc{"MeanResult empty", &MeanResult{}},
		tc{"SumResult empty", &SumResult{}}, tc{"HistogramResult empty", &HistogramResult{}}, tc{"QuantileResult empty", &QuantileResult{}},
		tc{"FedRepResult empty", &FedRepResult{}}, tc{"ClassifyJLResult empty", &ClassifyJLResult{}}, tc{"LowRankResult empty", &LowRankResult{}},
		tc{"GroupResult empty", &GroupResult{}})
	return out
}

// Every result renders (text, HTML, output metadata) byte for byte as
// recorded in testdata/render.golden: notebooks store these renderings,
// and `privnotes notebook verify` compares them with the ledger's.
func TestResultRenderingsGolden(t *testing.T) {
	var got bytes.Buffer
	for _, c := range renderCases() {
		meta, err := json.Marshal(c.r.Metadata())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fmt.Fprintf(&got, "=== %s: String\n%s\n=== %s: HTML\n%s\n=== %s: Metadata\n%s\n", c.name, c.r.String(), c.name, c.r.HTML(), c.name, meta)
	}
	testfix.Golden(t, filepath.Join("testdata", "render.golden"), got.Bytes(), *updateRender)
}
