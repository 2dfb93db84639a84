package accounting_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A session with budget (ε=1, δ=1e-6), composed in zCDP (the default).
// Mechanisms report their cost as events; the accountant is asked before
// anything runs.
func ExampleAccountant() {
	acct, err := accounting.NewAccountant(accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A Gaussian step calibrated to (0.7, 1e-6) on its own: ρ from the tight
	// inverse of the CKS conversion.
	pca := accounting.ZcdpFor(0.7, 1e-6)
	pca.Mechanism = "pca/npm"
	// A Laplace count, pure ε = 0.05, costs ρ = ε²/2 in zCDP.
	count := accounting.Pure(0.05)
	count.Mechanism = "count"

	if err := acct.Spend(pca, count); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pca)
	fmt.Printf("spent:     %v\n", acct.Spent())
	fmt.Printf("remaining: %v\n", acct.Remaining())

	// zCDP composes sub-additively in ε: two (0.7, 1e-6) steps would be
	// ε=1.4 under basic composition, but here the question is whether the
	// composed ρ still converts to ε ≤ 1.
	err = acct.Spend(accounting.ZcdpFor(0.7, 1e-6))
	var ex *accounting.ExceededError
	if errors.As(err, &ex) {
		fmt.Printf("refused: would spend %v\n", ex.WouldSpend)
	}
	// A smaller step fits; nothing of the refused one was recorded.
	fmt.Println(acct.Check(accounting.ZcdpFor(0.1, 1e-6)), len(acct.Events()))

	// (Values cross-checked against a brute-force minimisation over Rényi
	// orders in Python: ε(ρ=0.01249)=0.6999, ε(ρ+0.00125)=0.7364.)

	// Output:
	// pca/npm: zCDP ρ=0.01249 (calibrated to ε=0.7, δ=1e-06)
	// spent:     ε=0.736524, δ=1e-06
	// remaining: ε=0.263476, δ=1e-06
	// refused: would spend ε=1.04063, δ=1e-06
	// <nil> 2
}

// A durable ledger keeps an accountant's State next to its records and
// resumes from it, instead of replaying every earlier charge. The text form
// is exact: each sum is a hexadecimal binary fraction (0.125 = 0x.8p-2,
// 0.25 = 0x.8p-1, 0.5 = 0x.8p+0).
func ExampleResume() {
	budget := accounting.Budget{Eps: 1, Delta: 0}
	acct, _ := accounting.NewAccountant(accounting.ModeBasic, budget)
	if err := acct.Spend(accounting.Pure(0.5)); err != nil {
		fmt.Println(err)
		return
	}
	text, _ := acct.State().MarshalText()
	fmt.Println(string(text))

	var st accounting.State
	if err := st.UnmarshalText(text); err != nil {
		fmt.Println(err)
		return
	}
	later, _ := accounting.Resume(accounting.ModeBasic, budget, st)
	fmt.Println(later.Spend(accounting.Pure(0.25)), later.Spent(), later.State().Events())
	fmt.Println(later.Check(accounting.Pure(0.5)) != nil)

	// Output:
	// accounting-state/1 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0
	// <nil> ε=0.75, δ=0 2
	// true
}

// The ε each accountant reports for the same Gaussian releases, at the
// session's δ: basic composition (sum of the calls' targets), zCDP with
// the classic and the tight (CKS) conversion, and exact Gaussian DP (the
// gdp accountant). docs/accounting.md quotes this output.
func Example_accountantsCompared() {
	type session struct {
		name  string
		n     int
		eps   float64 // each call's target
		delta float64
		D     float64 // the session's δ
	}
	for _, s := range []session{
		{"μ=1 (one call, σ=Δ)", 1, 0, 0, 1e-5},
		{"10 × (0.1, 1e-7)", 10, 0.1, 1e-7, 1e-5},
		{"50 × (0.1, 1e-7)", 50, 0.1, 1e-7, 1e-5},
		{"14 × (1, 1e-5)", 14, 1, 1e-5, 1e-5},
		{"16 × (1, 1e-5)", 16, 1, 1e-5, 1e-5},
	} {
		var rho float64
		basic := "-"
		if s.eps == 0 {
			rho = 0.5 // μ = 1
		} else {
			rho = float64(s.n) * accounting.RhoForTarget(s.eps, s.delta)
			basic = fmt.Sprintf("%.4g", float64(s.n)*s.eps)
		}
		fmt.Printf("%-20s basic %-5s zcdp-classic %.4f  zcdp-tight %.4f  gdp %.4f\n", s.name, basic,
			accounting.ZCDPToEpsClassic(rho, s.D), accounting.ZCDPToEps(rho, s.D), accounting.GDPEps(math.Sqrt(2*rho), s.D))
	}
	fmt.Printf("pure ε=0.3: zcdp ρ=%.4g (as μ=%.4f), gdp μ=%.4f\n", accounting.PureToRho(0.3), math.Sqrt(2*accounting.PureToRho(0.3)), accounting.PureToMu(0.3))
	// Output:
	// μ=1 (one call, σ=Δ)  basic -     zcdp-classic 5.2985  zcdp-tight 4.7284  gdp 4.3772
	// 10 × (0.1, 1e-7)     basic 1     zcdp-classic 0.3442  zcdp-tight 0.2601  gdp 0.2354
	// 50 × (0.1, 1e-7)     basic 5     zcdp-classic 0.7768  zcdp-tight 0.6205  gdp 0.5656
	// 14 × (1, 1e-5)       basic 14    zcdp-classic 4.8663  zcdp-tight 4.3242  gdp 4.0002
	// 16 × (1, 1e-5)       basic 16    zcdp-classic 5.2339  zcdp-tight 4.6679  gdp 4.3207
	// pure ε=0.3: zcdp ρ=0.045 (as μ=0.3000), gdp μ=0.3754
}
