package release

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// private_pca(method="adaptive", gap="auto") through the execution core
// and the ledger: on a gdp dataset it is calibrated to μ*(ε, δ) and
// charged one μ*-GDP event (the four runs and the selection inside it,
// mechanisms/pca TestAutoGapGDPPrice); on a zcdp dataset it keeps the
// ρ*-zCDP event. Either way the release is one of the four runs.
func TestPCAGapAutoOnGDPDataset(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("a,b,c,d\n")
	for i := range 60 {
		fmt.Fprintf(&csv, "%v,%v,%v,%v\n", 0.6*float64(i%7)/7, 0.1*float64(i%3), -0.2*float64(i%5)/5, 0.05)
	}
	mu := muStarBig(1, 1e-6)
	for _, mode := range []accounting.Mode{accounting.ModeGDP, accounting.ModeZCDP} {
		env, ref, st := gdpTestEnv(t, mode, accounting.Budget{Eps: 10, Delta: 1e-5}, csv.String())
		args := mustArgs("private_pca", map[string]any{"eps": 1.0, "delta": 1e-6, "k": 1, "method": "adaptive", "iters": 4, "gap": "auto"})
		rel, err := env.Execute(context.Background(), Call{Func: "private_pca", Dataset: ref, Args: args}, nil)
		if err != nil {
			t.Fatalf("%s dataset: %v", mode, err)
		}
		cost, note := rel.Receipt.Cost, rel.Receipt.Note
		switch mode {
		case accounting.ModeGDP:
			if cost.Kind != accounting.GDP || math.Abs(cost.Mu/mu-1) > 1e-9 || !strings.Contains(note, "gap=auto: calibrated to ε=1, δ=1e-06 via exact GDP") {
				t.Errorf("gdp dataset: charged %v (note %q), want GDP μ* = %.10g", cost, note, mu)
			}
		default:
			want := accounting.ZcdpFor(1, 1e-6)
			if cost.Kind != want.Kind || cost.Rho != want.Rho || cost.Gaussian || !strings.Contains(note, "via zCDP") {
				t.Errorf("zcdp dataset: charged %v (note %q), want %v", cost, note, want)
			}
		}
		if p, ok := rel.Value.(*PCA); !ok {
			t.Errorf("%s dataset: released %T, want *PCA", mode, rel.Value)
		} else if !slices.Contains(pca.AutoGaps, p.Gap) {
			t.Errorf("%s dataset: released gap %v, want one of %v", mode, p.Gap, pca.AutoGaps)
		}
		if err := st.Verify(); err != nil {
			t.Fatal(err)
		}
	}
}
