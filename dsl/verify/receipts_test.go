package verify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// What the executed notebook's receipts say it spent: one line per output
// with a receipt, naming its cell; per dataset the distinct charges (a
// replay adds none), without dry runs and synthetic data.
func TestReceiptsOfExecutedNotebook(t *testing.T) {
	sh := executed(t)
	sp, err := Receipts(sh.nb)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`cell 2 [2]: count/laplace on people: charged pure ε=0.5, ledger record 3, name "n"`,
		`cell 3 [3]: bounded-mean/laplace on people: charged pure ε=0.5, ledger record 5`,
		`cell 4 [4]: count/laplace on others: charged pure ε=0.25, ledger record 7`,
		`cell 5 [5]: count/laplace on people: dry run, nothing charged`,
		`cell 6 [6]: count/laplace on synthetic:spiked: public synthetic data, nothing charged`,
		`cell 7 [7]: count/laplace on people: replayed from ledger record 3, no new charge, name "n"`,
		`cell 8 [8]: count/laplace on people: dry run, nothing charged, name "n"`,
	}
	if got := strings.Join(sp.Lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	wantDS := []string{
		"dataset others: 1 output(s), 1 charge(s), 0 replay(s); charges cost ε=0.25, δ=0",
		"dataset people: 3 output(s), 2 charge(s), 1 replay(s); charges cost ε=1, δ=0",
	}
	if got := strings.Join(sp.Datasets, "\n"); got != strings.Join(wantDS, "\n") {
		t.Errorf("datasets:\n%s\nwant:\n%s", got, strings.Join(wantDS, "\n"))
	}
}

// Costs are summed per measure: ε and δ of pure and approximate events, ρ
// of zCDP events, μ as √Σμ² of GDP events; a record shown twice counts
// once; a charge shown without the full receipt is counted with the cost
// its summary states; a receipt that cannot be read is an error naming
// the cell.
func TestReceiptsSums(t *testing.T) {
	out := func(rc *release.Receipt) Output {
		t.Helper()
		md := map[string]json.RawMessage{}
		for k, v := range rc.Metadata() {
			md[k] = mustJSON(t, v)
		}
		return Output{Type: "display_data", Data: map[string]json.RawMessage{"text/plain": mustJSON(t, "x")}, Metadata: md}
	}
	charge := func(ds string, id int64, ev accounting.Event) *release.Receipt {
		return &release.Receipt{Dataset: ds, Mechanism: ev.Mechanism, Cost: ev, Charged: true, ReleaseHash: "h", Charge: release.Charge{LedgerID: id, Accountant: "zcdp"}}
	}
	one, two := 1, 2
	nb := &Notebook{Cells: []Cell{
		{Type: "code", ExecutionCount: &one, Outputs: []Output{
			out(charge("a", 2, accounting.Event{Mechanism: "m", Kind: accounting.ApproxDP, Eps: 0.5, Delta: 1e-6})),
			out(charge("a", 3, accounting.Event{Mechanism: "m", Kind: accounting.PureDP, Eps: 0.25})),
			out(charge("a", 3, accounting.Event{Mechanism: "m", Kind: accounting.PureDP, Eps: 0.25})),
			out(charge("a", 4, accounting.Event{Mechanism: "g", Kind: accounting.ZCDP, Rho: 0.01})),
			out(charge("a", 5, accounting.Event{Mechanism: "g", Kind: accounting.ZCDP, Rho: 0.02})),
		}},
		{Type: "markdown"},
		{Type: "code", ExecutionCount: &two, Outputs: []Output{
			{Type: "stream"},
			out(charge("b", 7, accounting.Event{Mechanism: "f", Kind: accounting.GDP, Mu: 0.3})),
			out(charge("b", 8, accounting.Event{Mechanism: "f", Kind: accounting.GDP, Mu: 0.4})),
			// Sealing the release failed: no release hash, so no full
			// receipt in the metadata.
			out(&release.Receipt{Dataset: "b", Mechanism: "f", Cost: accounting.Event{Kind: accounting.GDP, Mu: 0.5}, Charged: true, Charge: release.Charge{LedgerID: 9, Accountant: "gdp"}}),
		}},
	}}
	sp, err := Receipts(nb)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Lines) != 8 || sp.Lines[7] != "cell 3 [2]: f on b: charged GDP μ=0.5, ledger record 9" {
		t.Errorf("lines:\n%s", strings.Join(sp.Lines, "\n"))
	}
	want := []string{
		"dataset a: 5 output(s), 4 charge(s), 0 replay(s); charges cost ε=0.75, δ=1e-06 + ρ=0.03",
		"dataset b: 3 output(s), 3 charge(s), 0 replay(s); charges cost μ=0.5 + 1 charge(s) shown without the full receipt: GDP μ=0.5 (record 9)",
	}
	if got := strings.Join(sp.Datasets, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("datasets:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	nb.Cells[2].Outputs[1].Metadata["privnotes"] = json.RawMessage(`{"ledger_id": "x"}`)
	if _, err := Receipts(nb); err == nil || !strings.HasPrefix(err.Error(), "cell 3 [2]: its privnotes receipt cannot be read") {
		t.Errorf("an unreadable receipt: %v", err)
	}
}
