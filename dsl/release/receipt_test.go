package release

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/receipt_*.json from the current encoding")

// goldenReceipts are receipts with every field set (a charged release, a
// federated one with its providers' charges) and none: what the notebook's
// output metadata, a download's JSON and `privnotes notebook verify`
// read.
func goldenReceipts() map[string]*Receipt {
	full := &Receipt{Dataset: "people | age >= 30", Function: "private_pca", Mechanism: "pca/npm <zcdp> & co",
		Eps: 0.5, Delta: 1e-6, Cost: accounting.GaussianZcdpFor(0.5, 1e-6),
		NoiseScale: "σ=0.25", Note: "a note", Charged: true, Params: map[string]any{"k": 2, "method": "npm"},
		DryRun: true, Name: "first", Replayed: true, ReleaseHash: "ab12"}
	full.Accountant, full.Filter, full.LedgerID, full.Block = "zcdp", "zCDP filter ρ=0.03056", 7, "block 1 (ε=2)"
	full.Remaining = accounting.Budget{Eps: 1.5, Delta: 1e-5}
	fed := &Receipt{Dataset: "p1:x + p2:x", Function: "private_pca", Mechanism: "pca/federated", Eps: 1, Delta: 1e-6,
		Cost: accounting.Pure(1), Charged: true, Providers: []ProviderCharge{
			{Member: "p1:x", Charged: true, LedgerID: 3, Cost: "ε=1", Remaining: accounting.Budget{Eps: 9}},
			{Member: "p2:x", Charged: true, LedgerID: 4, Cost: "ε=1", Remaining: accounting.Budget{Eps: 8}}}}
	fed.Accountant = "pure"
	return map[string]*Receipt{"full": full, "federated": fed, "empty": {}}
}

// A receipt's JSON is byte-identical to the recorded encoding of the
// receipt as it was before it embedded its Charge (field order
// included), as a value, in a download's indented form, and after a
// round trip through its decoding.
func TestReceiptEncodingGolden(t *testing.T) {
	for name, r := range goldenReceipts() {
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		testfix.Golden(t, filepath.Join("testdata", "receipt_"+name+".json"), append(got, '\n'), *updateGolden)
		want := got // the other forms must agree with it
		if byValue, _ := json.Marshal(*r); !bytes.Equal(byValue, want) {
			t.Errorf("%s: receipt value encodes as\n%s\nwant\n%s", name, byValue, want)
		}
		indented, _ := json.MarshalIndent(r, "", "  ")
		var wantIndented bytes.Buffer
		if err := json.Indent(&wantIndented, want, "", "  "); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(indented, wantIndented.Bytes()) {
			t.Errorf("%s: indented receipt encodes as\n%s\nwant\n%s", name, indented, wantIndented.Bytes())
		}
		var back Receipt
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(&back); !bytes.Equal(again, want) {
			t.Errorf("%s: decoded and encoded again:\n%s\nwant\n%s", name, again, want)
		}
	}
}
