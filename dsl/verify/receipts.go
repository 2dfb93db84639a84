package verify

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Spend is what a notebook's receipts say it spent.
type Spend struct {
	// Lines are one per output with a receipt, in notebook order.
	Lines []string
	// Datasets are one line per dataset: its charges and their costs
	// summed per measure.
	Datasets []string
}

// Receipts reads what nb spent from its receipts alone, without a ledger:
// each output's charge (or replay, dry run, synthetic data) and, per
// dataset, the distinct charges and the sum of their costs in each measure
// (ε and δ of pure and approximate events, ρ of zCDP events, μ composed as
// √Σμ² for GDP events); the dataset's accountant composes them, and
// `privnotes notebook verify` checks them against the ledger.
func Receipts(nb *Notebook) (*Spend, error) {
	type sums struct {
		records          map[int64]bool
		replays, outputs int
		eps, delta, rho  float64
		mu2              float64
		// unpriced are the costs, as their summaries state them, of
		// charges shown without the full receipt (a release the ledger
		// could not store): counted, but not summed.
		unpriced []string
	}
	per := map[string]*sums{}
	out := &Spend{}
	for ci, c := range nb.Cells {
		for _, o := range c.Outputs {
			st, err := o.stamp()
			if err != nil {
				return nil, fmt.Errorf("%s: %v", Where(ci, c), err)
			}
			if st == nil {
				continue
			}
			how := fmt.Sprintf("charged %s, ledger record %d", st.Cost, st.LedgerID)
			switch {
			case st.DryRun:
				how = "dry run, nothing charged"
			case st.Replayed:
				how = fmt.Sprintf("replayed from ledger record %d, no new charge", st.LedgerID)
			case !st.Charged:
				how = "public synthetic data, nothing charged"
			}
			if st.Name != "" {
				how += fmt.Sprintf(", name %q", st.Name)
			}
			out.Lines = append(out.Lines, fmt.Sprintf("%s: %s on %s: %s", Where(ci, c), st.Mechanism, st.Dataset, how))
			if st.DryRun || (!st.Charged && !st.Replayed) {
				continue
			}
			s := per[st.Dataset]
			if s == nil {
				s = &sums{records: map[int64]bool{}}
				per[st.Dataset] = s
			}
			s.outputs++
			if st.Replayed {
				s.replays++
			}
			if s.records[st.LedgerID] {
				continue
			}
			s.records[st.LedgerID] = true
			if st.Receipt == nil {
				s.unpriced = append(s.unpriced, fmt.Sprintf("%s (record %d)", st.Cost, st.LedgerID))
				continue
			}
			ev := st.Receipt.Cost
			switch ev.Kind {
			case accounting.PureDP, accounting.ApproxDP:
				s.eps += ev.Eps
				s.delta += ev.Delta
			case accounting.ZCDP:
				s.rho += ev.Rho
			case accounting.GDP:
				s.mu2 += ev.Mu * ev.Mu
			}
		}
	}
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := per[n]
		var costs []string
		if s.eps > 0 || s.delta > 0 {
			costs = append(costs, fmt.Sprintf("ε=%.6g, δ=%.6g", s.eps, s.delta))
		}
		if s.rho > 0 {
			costs = append(costs, fmt.Sprintf("ρ=%.6g", s.rho))
		}
		if s.mu2 > 0 {
			costs = append(costs, fmt.Sprintf("μ=%.6g", math.Sqrt(s.mu2)))
		}
		if len(s.unpriced) > 0 {
			costs = append(costs, fmt.Sprintf("%d charge(s) shown without the full receipt: %s", len(s.unpriced), strings.Join(s.unpriced, ", ")))
		}
		if len(costs) == 0 {
			costs = []string{"nothing"}
		}
		out.Datasets = append(out.Datasets, fmt.Sprintf("dataset %s: %d output(s), %d charge(s), %d replay(s); charges cost %s",
			n, s.outputs, len(s.records), s.replays, strings.Join(costs, " + ")))
	}
	return out, nil
}
