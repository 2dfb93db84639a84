package runtime

import (
	"strconv"
	"strings"
	"testing"
)

// private_fedrep's default step size recovers the planted representation
// when the noise is negligible (ε=1000): the bench's η = 0.5 contracts,
// the paper's η = 2.5 diverges under the spec's gradient convention (its
// error stays near the random level). The error is ‖sinΘ(U, U*)‖²_F / k,
// 0 for the truth and about 1 − k/d for a random subspace.
func TestFedRepDefaultStepSize(t *testing.T) {
	seedNoise(t, 3) // the threshold below is checked on a noisy result
	s := newSession(t, t.TempDir())
	out := s.ok(`import "gonum.org/v1/gonum/mat"
fr := synth_fedrep(users=500, m=10, d=10, k=2, seed=3)
u := private_fedrep(fr, k=2, eps=1000, delta=1e-6)
var p mat.Dense
p.Mul(u.U.T(), fr.Truth)
f := mat.Norm(&p, 2)
fmt.Println((2 - f*f) / 2, u.Receipt.Params["lr"])`)
	fields := strings.Fields(out)
	if len(fields) != 2 {
		t.Fatalf("output %q", out)
	}
	sin2, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	if fields[1] != "0.5" {
		t.Errorf("default lr = %s, want 0.5", fields[1])
	}
	// Tolerance: the noise-free fixed point of 5 rounds from the private
	// initialisation is within a few percent of U*; 0.1 leaves room for the
	// (negligible at ε=1000) noise and the label noise.
	if !(sin2 < 0.1) {
		t.Errorf("‖sinΘ‖²/k = %v at ε=1000 with the default lr, want < 0.1", sin2)
	}
}
