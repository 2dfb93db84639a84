package ledger

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The chain walk (ledger verify, export verify) holds a public synthetic
// dataset to its origin: a sealed release, of the value hash and name
// recorded, of a private dataset registered before it; and it refuses any
// charge to a public dataset, which would be a private dataset's charge
// recorded against public rows.
func TestChainChecksPublicDatasets(t *testing.T) {
	const hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	schema := func(name string, o *SynthOrigin) string {
		sc := Schema{Name: name, Unit: "row", Center: "none", Neighbour: "replace-one", Accountant: "basic",
			Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, BadRows: "reject", Synthetic: o}
		b, _ := json.Marshal(map[string]any{"schema": sc, "data_hash": hash})
		return string(b)
	}
	ev, _ := json.Marshal(accounting.Pure(0.1))
	seal, _ := json.Marshal(sealParams{Record: 2, Name: "share", ValueHash: hash})
	origin := &SynthOrigin{Dataset: "d", Release: "share", Record: 2, ValueHash: hash}
	base := []record{
		{Kind: "register", Dataset: "d", Params: schema("d", nil), Event: "null"},
		{Kind: "charge", Dataset: "d", Event: string(ev)},
		{Kind: "seal", Dataset: "d", Params: string(seal), Event: "null"},
	}
	pub := func(o SynthOrigin) record {
		return record{Kind: "register", Dataset: "pub", Params: schema("pub", &o), Event: "null"}
	}
	other := *origin
	other.ValueHash = strings.Repeat("f", 64)
	unsealed := *origin
	unsealed.Record = 1
	for _, tc := range []struct {
		name string
		more []record
		want string // "" for a chain that verifies
	}{
		{"valid", []record{pub(*origin)}, ""},
		{"another value hash", []record{pub(other)}, "not sealed with the value hash"},
		{"origin not a charge", []record{pub(unsealed)}, "not an earlier charge"},
		{"charge to the public dataset", []record{pub(*origin), {Kind: "charge", Dataset: "pub", Event: string(ev)}}, `charge to public dataset "pub"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newChainWalk()
			var err error
			for i, r := range append(append([]record(nil), base...), tc.more...) {
				r.ID, r.PrevHash = int64(i+1), w.prev
				r.Hash = r.computeHash()
				if err = w.step(i, r); err != nil {
					break
				}
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("verify: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("verify: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
