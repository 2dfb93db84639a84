package runtime

import (
	"github.com/privnotes/privnotes/dsl/release"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The ARCHITECTURE example: a PCA at ε=0.7 and a count at ε=0.3 inside a
// block of (1, 1e-6) under the default zcdp accountant. With delta on the
// count (the Gaussian count) the block is accepted, both calls charge and
// their composition stays within the block; the pure-ε count (no delta)
// costs ρ=ε²/2 and the same block is refused before it runs.
func TestArchitectureExampleBlock(t *testing.T) {
	dir := t.TempDir()
	breastCancer(t, dir, "bc", accounting.Budget{Eps: 3, Delta: 1e-5})
	s := newSession(t, dir)
	s.ok(`bc := dataset("bc")`)

	res, out := s.run(`fmt.Println("side effect")
budget eps=1.0, delta=1e-6 {
	pca := private_pca(bc, k=3, eps=0.7, delta=1e-6)
	n := private_count(bc, eps=0.3)
}`)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || out.stdout() != "" {
		t.Fatalf("the pure-ε count in a zcdp block: %+v (output %q), want a refusal before the cell runs", res.Error, out.stdout())
	}

	got := s.ok(`budget eps=1.0, delta=1e-6 {
	pca := private_pca(bc, k=3, eps=0.7, delta=1e-6)
	n := private_count(bc, eps=0.3, delta=1e-6)
}
fmt.Println(pca.Receipt.Charged, n.Receipt.Charged, n.Receipt.Mechanism)`)
	if strings.TrimSpace(got) != "true true count/gaussian" {
		t.Fatalf("got %q", got)
	}
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es, err := st.Entries("bc")
	if err != nil {
		t.Fatal(err)
	}
	var evs []accounting.Event
	for _, e := range es {
		if e.Event != nil {
			evs = append(evs, *e.Event)
		}
	}
	if len(evs) != 2 || evs[1].Kind != accounting.ZCDP || evs[1].Mechanism != "count/gaussian" {
		t.Fatalf("charged events %+v, want the PCA's and a zCDP count", evs)
	}
	blk, err := accounting.Replay(accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6}, evs)
	if err != nil {
		t.Fatalf("the two charges do not fit the block: %v", err)
	}
	if sp := blk.Spent(); sp.Eps > 1 || sp.Delta > 1e-6 {
		t.Errorf("composed cost %v exceeds the block (1, 1e-6)", sp)
	}
	// The Gaussian count of ε=0.3 costs less than a third of the pure
	// count's ρ = 0.045.
	if r := evs[1].Rho; !(r > 0 && r < accounting.PureToRho(0.3)/3) {
		t.Errorf("Gaussian count ρ = %v, want well below %v", r, accounting.PureToRho(0.3))
	}
}

// The Gaussian count's noise has the std its zCDP cost implies: the median
// absolute error over many releases of a count of public synthetic data is
// 0.674σ with σ = 1/√(2ρ). The test seeds the sampler (only tests can), so
// it is reproducible; the tolerance is still the statistical one: 400 draws
// give the median a relative standard error near 6%, and ±25% is four of
// them. ε=0.1 makes σ ≈ 50, so rounding the count to an integer moves the
// median by about 1%.
func TestGaussianCountNoise(t *testing.T) {
	testtier.Long(t)
	sc := ledger.Schema{Name: "x", Columns: []string{"a"}, D: 1, Clip: 1, Unit: "row", Neighbour: "add-remove", Accountant: "zcdp"}
	eps, delta := 0.1, 1e-6
	a, err := parseArgs("private_count", []KW{newKW("eps", eps), newKW("delta", delta)})
	if err != nil {
		t.Fatal(err)
	}
	// Seeded noise: the test asserts a median with a fixed tolerance, so it
	// must not depend on live randomness.
	seedNoise(t, 20261121)
	sigma := 1 / math.Sqrt(2*accounting.RhoForTarget(eps, delta))
	data := &ledger.Data{Schema: sc, X: denseOf(1000, 1, make([]float64, 1000))}
	errs := make([]float64, 400)
	for i := range errs {
		v := releaseOn(t, "private_count", a, data).(*release.Count).Value
		if v != math.Round(v) {
			t.Fatalf("count %v is not an integer", v)
		}
		errs[i] = math.Abs(v - 1000)
	}
	sort.Float64s(errs)
	med := errs[len(errs)/2]
	if want := 0.6745 * sigma; math.Abs(med-want) > 0.25*want {
		t.Errorf("median |error| = %v, want %v ± 25%% (σ = %v)", med, want, sigma)
	}
}

// seedNoise makes every private call of the runtime draw from one seeded
// sampler until the test ends: a test that asserts on a noisy result must
// not depend on live randomness. (Only tests can do this: newSampler is
// unexported and cells never see mechanisms/noise.)
func seedNoise(t *testing.T, seed uint64) {
	t.Helper()
	seeded := noise.NewSeeded(seed)
	newSampler = func() *noise.Sampler { return seeded }
	t.Cleanup(func() { newSampler = noise.New })
}
