package audit_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/privnotes/privnotes/mechanisms/audit"
)

// Auditing a counting query released with Laplace noise whose scale was
// (wrongly) set to half of 1/ε: the audit refutes the claimed ε = 1.
func Example() {
	const claimedEps = 1.0
	scale := 0.5 / claimedEps // the bug: should be 1/ε for sensitivity 1
	mech := func(neighbour bool, trial int) float64 {
		count := 100.0 // f(D)
		if neighbour {
			count = 101 // f(D′): one more individual
		}
		// Fresh, independent randomness per (side, trial). Real mechanisms
		// draw from mechanisms/noise; see the package tests.
		side := uint64(0)
		if neighbour {
			side = 1
		}
		r := rand.New(rand.NewPCG(42, uint64(trial)<<1|side))
		e := scale * r.ExpFloat64()
		if r.IntN(2) == 0 {
			e = -e
		}
		return count + e
	}
	res, err := audit.Run(audit.Config{Trials: 20000, Alpha: 0.05}, mech)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("ε lower bound > 1.5: %v\n", res.EpsLower > 1.5)
	fmt.Println("claim refuted:", res.Check(claimedEps) != nil)
	// Output:
	// ε lower bound > 1.5: true
	// claim refuted: true
}
