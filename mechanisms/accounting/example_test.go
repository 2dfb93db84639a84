package accounting_test

import (
	"errors"
	"fmt"

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
