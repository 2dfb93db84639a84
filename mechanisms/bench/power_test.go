package bench

import (
	"context"
	"slices"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/pca"
)

// The adaptive gap variants run only when named, each as the adaptive
// method with its gap rule: adaptive-auto reports the guess it selected
// (one of pca.AutoGaps), adaptive-k0 none, and both score k = 1.
func TestPowerGapVariants(t *testing.T) {
	if got := powerMethods(Config{}, []string{"adaptive", "npm"}); !slices.Equal(got, []string{"adaptive", "npm"}) {
		t.Errorf("default methods %v: the variants must be opt-in", got)
	}
	for _, w := range []func(context.Context, Config) ([]Row, error){runAPMGaussian, runSpiked} {
		rows, err := w(context.Background(), Config{Quick: true, N: 3000, D: 10, Seeds: 1, Eps: []float64{4},
			Methods: []string{adaptiveK0, adaptiveAuto}, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rows {
			names = append(names, r.Method)
			g, has := r.Extra["selected_gap"]
			switch {
			case r.K != 1 || !(r.Error >= 0 && r.Error <= 1):
				t.Errorf("%s %s: k=%d error %v", r.Workload, r.Method, r.K, r.Error)
			case r.Method == adaptiveAuto && (!has || !slices.Contains(pca.AutoGaps, g.(float64))):
				t.Errorf("%s adaptive-auto: selected gap %v, want one of %v", r.Workload, g, pca.AutoGaps)
			case r.Method == adaptiveK0 && has:
				t.Errorf("%s adaptive-k0 reports a selected gap %v", r.Workload, g)
			}
		}
		if !slices.Equal(names, []string{adaptiveK0, adaptiveAuto}) {
			t.Errorf("ran %v, want the two variants", names)
		}
	}
}
