package notebooks_test

import (
	"fmt"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The worked numbers of docs/accounting.md, computed by the accountant the
// ledger uses. If an output here changes, update the document.
func Example_accountingWorkedNumbers() {
	const delta = 1e-6

	// 1. Calibrating one Gaussian step to (ε, δ) = (1, 1e-6).
	rhoTight := accounting.RhoForTarget(1, delta)
	rhoClassic := accounting.RhoForTargetClassic(1, delta)
	mu := accounting.MuForTarget(1, delta)
	fmt.Printf("ρ tight %.5f, classic %.5f (classic: %.0f%% more noise variance), μ exact %.4f\n",
		rhoTight, rhoClassic, 100*(rhoTight/rhoClassic-1), mu)
	// Noise multiplier σ/Δ of the Gaussian mechanism: 1/√(2ρ) in zCDP, 1/μ exact.
	fmt.Printf("σ/Δ: %.3f (zCDP, tight), %.3f (zCDP, classic), %.3f (exact GDP)\n",
		1/math.Sqrt(2*rhoTight), 1/math.Sqrt(2*rhoClassic), 1/mu)

	// 2. n Gaussian steps of (0.1, 1e-7) each, composed two ways, in a
	// session whose budget δ is 1e-5.
	for _, n := range []int{10, 50} {
		steps := make([]accounting.Event, n)
		for i := range steps {
			steps[i] = accounting.ZcdpFor(0.1, 1e-7)
		}
		for _, m := range []accounting.Mode{accounting.ModeBasic, accounting.ModeZCDP} {
			a, _ := accounting.NewAccountant(m, accounting.Budget{Eps: 100, Delta: 1e-5})
			if err := a.Spend(steps...); err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%d × (0.1, 1e-7), %-8s → %v\n", n, m, a.Spent())
		}
	}

	// 3. A pure-ε count in a zCDP session: ε = 0.1 costs ρ = ε²/2.
	fmt.Printf("pure ε=0.1 → ρ=%.4g\n", accounting.PureToRho(0.1))

	// 4. The quickstart's dataset: budget (3, 1e-6), zCDP accountant, a
	// PCA and a Gaussian count (private_count with delta).
	a, _ := accounting.NewAccountant(accounting.ModeZCDP, accounting.Budget{Eps: 3, Delta: delta})
	pca := accounting.ZcdpFor(1, delta)
	count := accounting.ZcdpFor(0.3, delta)
	if err := a.Spend(pca, count); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("after PCA (1, 1e-6) + Gaussian count (0.3, 1e-6): spent %v, remaining %v\n", a.Spent(), a.Remaining())
	fmt.Printf("the count's noise: std %.4g (ρ=%.4g)\n", 1/math.Sqrt(2*accounting.RhoForTarget(0.3, delta)), accounting.RhoForTarget(0.3, delta))
	fmt.Printf("under basic composition the same two would spend ε=%.4g\n", 1.0+0.3)
	lap, _ := accounting.NewAccountant(accounting.ModeZCDP, accounting.Budget{Eps: 3, Delta: delta})
	if err := lap.Spend(pca, accounting.Pure(0.3)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("with a Laplace count of ε=0.3 (no delta) instead: spent %v\n", lap.Spent())
	for _, eps := range []float64{1.94, 2.5, 3} {
		next := accounting.ZcdpFor(eps, delta)
		total, _ := a.Preview(next)
		fmt.Printf("a further (%v, 1e-6) step: total %v, refused: %v\n", eps, total, a.Check(next) != nil)
	}

	// 5. An approximate-DP event (DP-PCA under its paper calibration) in a
	// zCDP session: (0.5, 1e-7) costs ρ = 0.5²/2 plus δ = 1e-7.
	z, _ := accounting.NewAccountant(accounting.ModeZCDP, accounting.Budget{Eps: 3, Delta: delta})
	if err := z.Spend(accounting.Approx(0.5, 1e-7)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("approx (0.5, 1e-7) in zcdp: spent %v\n", z.Spent())
	b, _ := accounting.NewAccountant(accounting.ModeBasic, accounting.Budget{Eps: 3, Delta: delta})
	if err := b.Spend(accounting.Approx(0.5, 1e-7)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("approx (0.5, 1e-7) in basic: spent %v\n", b.Spent())

	// Output:
	// ρ tight 0.02436, classic 0.01747 (classic: 39% more noise variance), μ exact 0.2367
	// σ/Δ: 4.531 (zCDP, tight), 5.350 (zCDP, classic), 4.225 (exact GDP)
	// 10 × (0.1, 1e-7), basic    → ε=1, δ=1e-06
	// 10 × (0.1, 1e-7), zcdp     → ε=0.260093, δ=1e-05
	// 50 × (0.1, 1e-7), basic    → ε=5, δ=5e-06
	// 50 × (0.1, 1e-7), zcdp     → ε=0.62047, δ=1e-05
	// pure ε=0.1 → ρ=0.005
	// after PCA (1, 1e-6) + Gaussian count (0.3, 1e-6): spent ε=1.05457, δ=1e-06, remaining ε=1.94543, δ=1e-06
	// the count's noise: std 14.03 (ρ=0.00254)
	// under basic composition the same two would spend ε=1.3
	// with a Laplace count of ε=0.3 (no delta) instead: spent ε=1.75612, δ=1e-06
	// a further (1.94, 1e-6) step: total ε=2.25875, δ=1e-06, refused: false
	// a further (2.5, 1e-6) step: total ε=2.76593, δ=1e-06, refused: false
	// a further (3, 1e-6) step: total ε=3.2331, δ=1e-06, refused: true
	// approx (0.5, 1e-7) in zcdp: spent ε=2.43007, δ=1e-06
	// approx (0.5, 1e-7) in basic: spent ε=0.5, δ=1e-07
}
