package runtime

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// TestDisplayFormatting: text tables line up whatever the column names'
// lengths, floats are shown to 4 significant digits, plots label integer
// axes with integers and never crowd their x labels.
func TestDisplayFormatting(t *testing.T) {
	cols := []string{"a", "mean concave points", "x"}
	pc := &PCAResult{Components: mat.NewDense(3, 1, []float64{0.5, -0.5, 0.7071}), Method: "pca/gauss", Columns: cols}
	lines := strings.Split(pc.String(), "\n")[1:4]
	at := strings.Index(lines[0], "0.5000")
	for _, l := range lines {
		if i := strings.IndexAny(l, "0123456789-"); i < 0 || strings.Index(l, "0.") != at {
			t.Errorf("PCAResult rows do not line up:\n%s", strings.Join(lines, "\n"))
			break
		}
	}
	fr := &FedRepResult{U: mat.NewDense(2, 1, []float64{0.123456789, -0.987654321}), Columns: []string{"a long column name", "b"}}
	if s := fr.String(); !strings.Contains(s, "0.1235") || strings.Contains(s, "0.123456") {
		t.Errorf("FedRepResult: %s", s)
	}
	src := &source{name: "x", schema: ledger.Schema{D: 3, Clip: 6.71947806991034, Neighbour: "replace-one", Columns: cols}}
	a := mustArgs("private_pca", []KW{newKW("eps", 1), newKW("delta", 1e-6), newKW("method", "gauss")})
	if p := planPCA(src, a); !strings.Contains(p.Noise, "clip 6.719)") {
		t.Errorf("receipt noise: %s", p.Noise)
	}
	ticks := integerTicks{}.Ticks(0.5, 3.5)
	if len(ticks) != 3 || ticks[0].Label != "1" || ticks[2].Label != "3" {
		t.Errorf("integer ticks: %+v", ticks)
	}
	labelled := 0
	for _, tk := range (integerTicks{}).Ticks(0.5, 200.5) {
		if tk.Value != float64(int(tk.Value)) {
			t.Errorf("tick at %v", tk.Value)
		}
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled > 13 {
		t.Errorf("%d labelled ticks on 200 components", labelled)
	}
	names := loadingLabels([]string{"a very long column name indeed", "b"}, 2)
	if len([]rune(names[0])) > maxLabel || names[1] != "b" {
		t.Errorf("loading labels: %q", names)
	}
	if n := loadingLabels(nil, 100); n[0] != "1" || n[1] != "" || n[5] != "6" {
		t.Errorf("loading labels of 100 columns: %q", n[:6])
	}
}

// A result that is nil or empty (declared and never assigned, or whose
// call was interrupted) displays as "no result" in every form, never as a
// panic: a panic in the runtime's display code would end the session.
func TestNilResultsDisplay(t *testing.T) {
	s := newSession(t, t.TempDir())
	for _, typ := range nilResultTypes {
		for _, cell := range []string{
			fmt.Sprintf("var r *%s\nr", typ),
			fmt.Sprintf("var r *%s\nshow(r)", typ),
			fmt.Sprintf("var r *%s\nfmt.Println(r)", typ),
			fmt.Sprintf("r := &%s{}\nr", typ),
		} {
			res, out := s.run(cell)
			if res.Error != nil {
				t.Errorf("%s: %s: %s", cell, res.Error.Name, res.Error.Value)
				continue
			}
			if !strings.Contains(out.all(res), "no result") {
				t.Errorf("%s displays %q, want \"no result\"", cell, out.all(res))
			}
		}
	}
}

// nilResultTypes are the result types of the private functions.
var nilResultTypes = []string{"PCAResult", "CountResult", "MeanResult", "FedRepResult", "ClassifyJLResult", "LowRankResult", "SumResult", "HistogramResult", "QuantileResult", "GroupResult"}

// Results leave the notebook whole: JSON holds every released field, the
// matrices as rows.
func TestResultsMarshalJSON(t *testing.T) {
	s := newSession(t, t.TempDir())
	out := s.ok(`sd := synth_spiked(n=500, d=3, k=2, seed=1)
p := private_pca(sd, k=2, eps=1, delta=1e-6, method="gauss")
b, err := json.Marshal(p)
var back struct{ Components [][]float64; Values []float64; Receipt struct{ Mechanism string } }
json.Unmarshal(b, &back)
fmt.Println(err, len(back.Components), len(back.Components[0]), len(back.Values), back.Receipt.Mechanism, back.Components[1][0] == p.Components.At(1, 0))
var none *PCAResult
nb, _ := json.Marshal(none)
fmt.Println(string(nb))`)
	if !strings.Contains(out, "<nil> 3 2 2 pca/gauss true") || !strings.Contains(out, "null") {
		t.Errorf("JSON of a PCAResult:\n%s", out)
	}
}
