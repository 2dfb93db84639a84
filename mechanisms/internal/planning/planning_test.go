package planning

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		eps, delta float64
		want       string // "" for no error
	}{
		{1, 1e-6, ""},
		{0, 1e-6, "eps=0"},
		{math.Inf(1), 1e-6, "finite"},
		{math.NaN(), 1e-6, "eps=NaN"},
		{1, 0, "delta=0"},
		{1, 1, "0 < delta < 1 (e.g. 1e-6; choose δ without looking at the data)"},
	} {
		err := Target(tc.eps, tc.delta)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Target(%v, %v) = %v, want %q", tc.eps, tc.delta, err, tc.want)
		}
		// The row count is private: the advice must not point at it.
		if err != nil && strings.Contains(err.Error(), "1/n") {
			t.Errorf("Target(%v, %v) = %v: advice mentions the row count", tc.eps, tc.delta, err)
		}
	}
}

func TestComponents(t *testing.T) {
	for _, tc := range []struct {
		k, d  int
		wantK int
		want  string // "" for no error
	}{
		{0, 5, 1, ""},
		{3, 5, 3, ""},
		{5, 5, 5, ""},
		{6, 5, 0, "k=6 components requested but d=5 columns"},
		{-1, 5, 0, "k=-1"},
		{1, 0, 0, "at least one column, got d=0"},
	} {
		k, err := Components(tc.k, tc.d)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Components(%d, %d) = %v, want %q", tc.k, tc.d, err, tc.want)
		}
		if err == nil && k != tc.wantK {
			t.Errorf("Components(%d, %d) = %d, want %d", tc.k, tc.d, k, tc.wantK)
		}
	}
}

func TestPublicStart(t *testing.T) {
	bad := mat.NewDense(3, 2, nil)
	bad.Set(2, 1, math.NaN())
	for _, tc := range []struct {
		start *mat.Dense
		want  string
	}{
		{nil, ""},
		{mat.NewDense(3, 2, nil), ""},
		{mat.NewDense(2, 2, nil), "public start is 2×2; need d×k = 3×2"},
		{bad, "non-finite"},
	} {
		err := PublicStart(tc.start, 3, 2)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("PublicStart = %v, want %q", err, tc.want)
		}
	}
}

func TestInitFrac(t *testing.T) {
	if f, err := InitFrac(0, "x"); f != DefaultInitFrac || err != nil {
		t.Errorf("InitFrac(0) = %v, %v", f, err)
	}
	if f, err := InitFrac(0.3, "x"); f != 0.3 || err != nil {
		t.Errorf("InitFrac(0.3) = %v, %v", f, err)
	}
	for _, f := range []float64{1, -0.1, math.NaN()} {
		if _, err := InitFrac(f, "initialisation"); err == nil || !strings.Contains(err.Error(), "initialisation must be in (0, 1)") {
			t.Errorf("InitFrac(%v) error = %v", f, err)
		}
	}
}

func TestGaussianBudget(t *testing.T) {
	mu, cost, err := GaussianBudget(1, 1e-6, false)
	if err != nil || mu != accounting.MuForTarget(1, 1e-6) {
		t.Errorf("GDP: μ = %v, err %v", mu, err)
	}
	if e := cost.EpsAt(1e-6); math.Abs(e-1) > 1e-6 {
		t.Errorf("GDP cost spends ε = %v at δ = 1e-6, want 1", e)
	}
	mu, cost, err = GaussianBudget(1, 1e-6, true)
	if err != nil || mu != math.Sqrt(2*accounting.RhoForTarget(1, 1e-6)) {
		t.Errorf("zCDP: μ = %v, err %v", mu, err)
	}
	if e := cost.EpsAt(1e-6); e > 1+1e-6 {
		t.Errorf("zCDP cost spends ε = %v at δ = 1e-6, above the target 1", e)
	}
}
