package verify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/runtime"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// shared is one executed notebook and its ledger: cell 1 opens the
// dataset, cell 2 a named count on people (record 3), cell 3 an unnamed
// mean on people (record 5), cell 4 a count on others (record 7), cell 5
// a dry run, cell 6 a count on public synthetic data, cell 7 the named
// count again from a new session (a replay of record 3), cell 8 a dry run
// of it (it would replay record 3). Each charge is followed by the seal
// record of its release.
type shared struct {
	dir string
	nb  *Notebook
	led *ledger.Verified
}

func executed(t *testing.T) shared {
	t.Helper()
	dir := newState(t, false)
	s := newSession(t, dir)
	s.cell(`ds := dataset("people")`)
	s.cell(`c := private_count(ds, eps=0.5, name="n")
c`)
	s.cell(`m := private_mean(ds, col="age", eps=0.5)
m`)
	s.cell(`o := private_count(dataset("others"), eps=0.25)
o`)
	s.cell(`d := private_count(ds, eps=0.5, dry_run=true)
d`)
	s.cell(`sy := private_count(synth_spiked(n=50, d=2, k=1, seed=1), eps=1)
sy`)
	again := newSession(t, dir)
	again.cells = s.cells
	again.cell(`r := private_count(dataset("people"), eps=0.5, name="n")
r`)
	again.cell(`private_count(dataset("people"), eps=0.5, name="n", dry_run=true)`)
	return shared{dir: dir, nb: &Notebook{Cells: clone(t, again.cells)}, led: verified(t, dir)}
}

// stamp returns output 0 of cell i's privnotes metadata as a map, to edit.
func (sh shared) meta(t *testing.T, i int) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sh.nb.Cells[i].Outputs[0].Metadata["privnotes"], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (sh shared) setMeta(t *testing.T, i int, m map[string]any) {
	sh.nb.Cells[i].Outputs[0].Metadata["privnotes"] = mustJSON(t, m)
}

// editText replaces old by new in output 0 of cell i's mime rendering.
func (sh shared) editText(t *testing.T, i int, mime, old, new string) {
	t.Helper()
	o := sh.nb.Cells[i].Outputs[0]
	s, err := text(o.Data[mime])
	if err != nil || !strings.Contains(s, old) {
		t.Fatalf("cell %d %s does not show %q:\n%s", i+1, mime, old, s)
	}
	o.Data[mime] = mustJSON(t, strings.Replace(s, old, new, 1))
}

// forge rewrites output 0 of cell i the way a careful forger would: the
// full receipt edited, then the summary and every rendering made again
// from it and the ledger's stored release of record, so that all agree.
func (sh shared) forge(t *testing.T, i int, record int64, edit func(*release.Receipt)) {
	t.Helper()
	var st Stamp
	if err := json.Unmarshal(sh.nb.Cells[i].Outputs[0].Metadata["privnotes"], &st); err != nil || st.Receipt == nil {
		t.Fatalf("cell %d has no full receipt: %v", i+1, err)
	}
	rc := st.Receipt
	edit(rc)
	rel := sh.led.Releases[record]
	v, cols, err := release.Decode([]byte(rel.Value))
	if err != nil {
		t.Fatal(err)
	}
	res, err := runtime.Result(rc.Function, &release.Release{Value: v, Receipt: rc, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	sh.nb.Cells[i].Outputs[0] = output(t, interp.Render(res))
}

// forgeDryRun rewrites output 0 of cell i, a dry run, consistently: its
// full receipt edited, then the summary and every rendering made again
// from it.
func (sh shared) forgeDryRun(t *testing.T, i int, edit func(*release.Receipt)) {
	t.Helper()
	var st Stamp
	if err := json.Unmarshal(sh.nb.Cells[i].Outputs[0].Metadata["privnotes"], &st); err != nil || st.Receipt == nil || !st.DryRun {
		t.Fatalf("cell %d is not a dry run with a full receipt: %v", i+1, err)
	}
	edit(st.Receipt)
	res, err := runtime.Result(st.Receipt.Function, &release.Release{Receipt: st.Receipt})
	if err != nil {
		t.Fatal(err)
	}
	sh.nb.Cells[i].Outputs[0] = output(t, interp.Render(res))
}

func TestCheck(t *testing.T) {
	base := executed(t)
	honestLines := []string{
		`ok    cell 2 [2]: count/laplace on people: record 3 (charged, name "n"), release `,
		`ok    cell 3 [3]: bounded-mean/laplace on people: record 5 (charged), release `,
		`ok    cell 4 [4]: count/laplace on others: record 7 (charged), release `,
		`UNVERIFIED  cell 5 [5]: count/laplace on people: unverified (dry run: nothing was released or charged; the receipt it shows is the notebook's, the ledger holds none)`,
		`UNVERIFIED  cell 6 [6]: count/laplace on synthetic:spiked: unverified (public synthetic data: nothing was charged or stored in the ledger; its values are public)`,
		`ok    cell 7 [7]: count/laplace on people: record 3 (replayed, name "n"), release `,
		`UNVERIFIED  cell 8 [8]: count/laplace on people: unverified (dry run: nothing was released or charged; the receipt it shows is the notebook's, the ledger holds none)`,
	}
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, sh shared)
		// line is the verdict on the line of cell (1-based) that must
		// differ from the honest one; 0 when every line is honest.
		cell   int
		line   string
		totals []string
	}{
		{name: "honest", tamper: func(*testing.T, shared) {},
			totals: []string{
				"ok    dataset others: 1 output(s) from 1 charge(s) (records 7), 0 replay(s); notebook spent ε=0.25, δ=0; ledger spent ε=0.25, δ=0 of budget ε=1, δ=1e-05 (basic): within budget",
				"ok    dataset people: 3 output(s) from 2 charge(s) (records 3, 5), 1 replay(s); notebook spent ε=1, δ=0; ledger spent ε=1, δ=0 of budget ε=2, δ=1e-05 (basic): within budget",
			}},
		{name: "text/plain number", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.editText(t, 2, "text/plain", "  age     ", "  age     1")
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: text/plain is not the rendering of the release stored with ledger record 5: line 2 shows \"  age     1"},
		{name: "text/html number", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.editText(t, 1, "text/html", "<b>", "<b>1")
		}, line: "FAIL  cell 2 [2]: count/laplace on people: text/html is not the rendering of the release stored with ledger record 3: line 1 shows"},
		{name: "application/json added", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[1].Outputs[0].Data["application/json"] = json.RawMessage(`{"value": 12}`)
		}, line: "FAIL  cell 2 [2]: count/laplace on people: the output shows application/json, which the stored release does not render"},
		{name: "text/markdown added", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[1].Outputs[0].Data["text/markdown"] = json.RawMessage(`"private count ≈ **9999**"`)
		}, line: "FAIL  cell 2 [2]: count/laplace on people: the output shows text/markdown, which the stored release does not render"},
		{name: "only html kept", tamper: func(t *testing.T, sh shared) {
			delete(sh.nb.Cells[1].Outputs[0].Data, "text/plain")
		}, cell: 2, line: `ok    cell 2 [2]: count/laplace on people: record 3 (charged, name "n"), release `},
		{name: "no rendering left", tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[1].Outputs[0].Data = nil
		}, cell: 2, line: "FAIL  cell 2 [2]: count/laplace on people: the output shows nothing this check can compare"},
		{name: "missing release hash", cell: 3, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 2)
			delete(m, "release_hash")
			sh.setMeta(t, 2, m)
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt (ledger record 5) carries no release hash"},
		{name: "wrong ledger id", cell: 3, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 2)
			m["ledger_id"] = 99
			sh.setMeta(t, 2, m)
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: ledger record 99 is not a charge of this ledger"},
		{name: "ledger id of the registration", cell: 3, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 2)
			m["ledger_id"] = 1
			sh.setMeta(t, 2, m)
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: ledger record 1 is not a charge of this ledger"},
		{name: "release hash of another record", cell: 3, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 2)
			m["release_hash"] = sh.led.Releases[3].ValueHash
			sh.setMeta(t, 2, m)
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: release hash " + ledger.ShortHash(executedHash(t, base, 3)) + " differs from the one stored with ledger record 5"},
		{name: "receipt parts disagree", cell: 3, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 2)
			m["ledger_id"] = 3
			m["release_hash"] = sh.led.Releases[3].ValueHash
			sh.setMeta(t, 2, m)
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's parts disagree"},
		{name: "receipt cost edited", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 1, 3, func(rc *release.Receipt) { rc.Cost.Eps = 0.05 })
		}, line: "FAIL  cell 2 [2]: count/laplace on people: the receipt's cost pure ε=0.05 is not what ledger record 3 charged"},
		{name: "full receipt missing", cell: 2, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 1)
			delete(m, "receipt")
			sh.setMeta(t, 1, m)
		}, line: "FAIL  cell 2 [2]: count/laplace on people: the output's metadata lacks the full receipt"},
		{name: "receipt metadata stripped", cell: 2, tamper: func(t *testing.T, sh shared) {
			delete(sh.nb.Cells[1].Outputs[0].Metadata, "privnotes")
			sh.editText(t, 1, "text/plain", "≈ ", "≈ 1")
		}, line: "FAIL  cell 2 [2]: the output shows a privnotes receipt but its metadata carries none"},
		{name: "unreadable receipt", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[1].Outputs[0].Metadata["privnotes"] = json.RawMessage(`{"ledger_id": "three"}`)
		}, line: "FAIL  cell 2 [2]: its privnotes receipt cannot be read"},
		// Holes a careful forger could use before the receipt was bound
		// to the ledger: every rendering is consistent with the edited
		// receipt.
		{name: "summary names another dataset", cell: 4, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 3)
			m["dataset"] = "people"
			sh.setMeta(t, 3, m)
		}, line: "FAIL  cell 4 [4]: count/laplace on people: the metadata's receipt summary (dataset, mechanism, cost, name, …) is not the full receipt's"},
		{name: "summary cost edited", cell: 4, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 3)
			m["cost"] = "pure ε=0.01"
			sh.setMeta(t, 3, m)
		}, line: "FAIL  cell 4 [4]: count/laplace on others: the metadata's receipt summary"},
		{name: "release of another dataset", cell: 4, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 3, 7, func(rc *release.Receipt) { rc.Dataset = "people" })
		}, line: `FAIL  cell 4 [4]: count/laplace on people: the receipt names dataset "people", ledger record 7 stores a release on "others"`},
		{name: "release shown as another function", cell: 2, tamper: func(t *testing.T, sh shared) {
			// A sum's result type cannot hold a count: rendering it
			// panics in dsl/runtime, which must not crash the check.
			m := sh.meta(t, 1)
			m["receipt"].(map[string]any)["Function"] = "private_sum"
			sh.setMeta(t, 1, m)
		}, line: "FAIL  cell 2 [2]: count/laplace on people: the receipt names function private_sum, ledger record 3 stores a release of private_count"},
		{name: "name edited", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 1, 3, func(rc *release.Receipt) { rc.Name = "official" })
		}, line: `FAIL  cell 2 [2]: count/laplace on people: the receipt names the release "official", ledger record 3 stores it as "n"`},
		{name: "remaining budget edited", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Remaining.Eps = 1.9 })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt says ε=1.9, δ=1e-05 remained, after ledger record 5 ε=1, δ=1e-05 did"},
		// What still fits after the charge is derived from the ledger
		// too; a receipt made before it was recorded has none.
		{name: "what fits edited", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) {
				if rc.Fits == nil {
					t.Fatal("a charged receipt records no Fits")
				}
				f := *rc.Fits
				f.Pure *= 2
				rc.Fits = &f
			})
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's Fits is not what ledger record 5 holds"},
		{name: "receipt from before Fits", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Fits = nil })
		}, line: "ok    cell 3 [3]: bounded-mean/laplace on people: record 5 (charged), release "},
		{name: "accountant edited", cell: 4, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 3, 7, func(rc *release.Receipt) { rc.Accountant = "zcdp" })
		}, line: `FAIL  cell 4 [4]: count/laplace on others: the receipt names accountant "zcdp", dataset "others" was registered with "basic"`},
		{name: "filter edited", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 1, 3, func(rc *release.Receipt) { rc.Filter = "basic composition ε=0.05, δ=0" })
		}, line: `FAIL  cell 2 [2]: count/laplace on people: the receipt says priced by "basic composition ε=0.05, δ=0", ledger record 3 was priced by "basic composition ε=0.5, δ=0"`},
		// A replay names the filter that priced the charge it replays
		// (issue 29); one of an earlier version names none, and verifies.
		{name: "replay's filter edited", cell: 7, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 6, 3, func(rc *release.Receipt) { rc.Filter = "basic composition ε=0.05, δ=0" })
		}, line: `FAIL  cell 7 [7]: count/laplace on people: the receipt says priced by "basic composition ε=0.05, δ=0", ledger record 3 was priced by "basic composition ε=0.5, δ=0"`},
		{name: "replay of an earlier version names no filter", cell: 7, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 6, 3, func(rc *release.Receipt) { rc.Filter = "" })
		}, line: `ok    cell 7 [7]: count/laplace on people: record 3 (replayed, name "n"), release `},
		{name: "unnamed release shown as replayed", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Replayed, rc.Charged = true, false })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt says replayed, but only a named release is replayed"},
		{name: "charge shown as public", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Charged = false })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt says not charged, but ledger record 5 is a charge"},
		// What the receipt says of the call is bound to the stored release.
		{name: "target ε forged", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Eps = 0.01 })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's ε or δ: not what ledger record 5 stored with the release"},
		{name: "noise forged", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.NoiseScale = "Laplace scale 400 per coordinate" })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's noise: not what ledger record 5 stored with the release"},
		{name: "note forged", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Note = "clipped to [18, 30]" })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's Note is not what ledger record 5 holds"},
		// The runtime extends a stored note only by the block-δ sentence,
		// with the stored call's δ.
		{name: "note ends with another δ", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Note = runtime.BlockDeltaNote(rc.Note, 0.5) })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's Note is not what ledger record 5 holds"},
		{name: "metadata added", cell: 2, tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[1].Outputs[0].Metadata["text/plain"] = json.RawMessage(`{"exact": 4242}`)
		}, line: `FAIL  cell 2 [2]: count/laplace on people: the output's metadata "text/plain" is not what the kernel attaches`},
		{name: "parameters forged", cell: 3, tamper: func(t *testing.T, sh shared) {
			sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.Params = map[string]any{"eps": 0.01} })
		}, line: "FAIL  cell 3 [3]: bounded-mean/laplace on people: the receipt's parameters: not what ledger record 5 stored with the release"},
		// Receipts the ledger cannot back (dry runs, synthetic data) must
		// read as such, so they cannot carry a released number.
		{name: "charge relabelled dry run", cell: 2, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 1)
			m["dry_run"] = true
			for _, k := range []string{"release_hash", "receipt", "name"} {
				delete(m, k)
			}
			m["charged"], m["ledger_id"] = false, 0
			sh.setMeta(t, 1, m)
			sh.editText(t, 1, "text/plain", "≈ ", "≈ 1")
		}, line: `FAIL  cell 2 [2]: count/laplace on people: the receipt says dry run, but the output's metadata lacks the full receipt`},
		{name: "dry run with a stored release", cell: 5, tamper: func(t *testing.T, sh shared) {
			sh.forgeDryRun(t, 4, func(rc *release.Receipt) { rc.LedgerID, rc.ReleaseHash = 3, sh.led.Releases[3].ValueHash })
		}, line: "FAIL  cell 5 [5]: count/laplace on people: the receipt says dry run, but it carries a stored release"},
		{name: "dry run of a replay names another release", cell: 8, tamper: func(t *testing.T, sh shared) {
			sh.forgeDryRun(t, 7, func(rc *release.Receipt) { rc.ReleaseHash = sh.led.Releases[5].ValueHash })
		}, line: "FAIL  cell 8 [8]: count/laplace on people: the receipt says dry run, but the release it would replay (ledger record 3, hash "},
		{name: "dry run shows markdown", cell: 5, tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[4].Outputs[0].Data["text/markdown"] = json.RawMessage(`"private count ≈ 9"`)
		}, line: "FAIL  cell 5 [5]: count/laplace on people: the receipt says dry run, but it shows text/markdown, which a dry run does not render"},
		{name: "dry run html edited", cell: 5, tamper: func(t *testing.T, sh shared) {
			sh.editText(t, 4, "text/html", "<b>dry run</b>", "<b>count 9</b>")
		}, line: `FAIL  cell 5 [5]: count/laplace on people: the receipt says dry run, but its text/html is not the rendering of its receipt: line 1 shows`},
		{name: "dry run text hides a number", cell: 5, tamper: func(t *testing.T, sh shared) {
			sh.editText(t, 4, "text/plain", "no data read", "no data read (count 607)")
		}, line: `FAIL  cell 5 [5]: count/laplace on people: the receipt says dry run, but its text/plain is not the rendering of its receipt: line 1 shows`},
		{name: "dry run summary edited", cell: 5, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 4)
			m["cost"] = "ε=0"
			sh.setMeta(t, 4, m)
		}, line: "FAIL  cell 5 [5]: count/laplace on people: the receipt says dry run, but the metadata's receipt summary"},
		{name: "synthetic receipt on a registered dataset", cell: 6, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 5)
			m["dataset"] = "people"
			sh.setMeta(t, 5, m)
		}, line: `FAIL  cell 6 [6]: count/laplace on people: the receipt says public synthetic data, but names dataset "people"`},
		{name: "synthetic receipt on an unknown dataset", cell: 6, tamper: func(t *testing.T, sh shared) {
			m := sh.meta(t, 5)
			m["dataset"] = "census"
			sh.setMeta(t, 5, m)
			sh.editText(t, 5, "text/plain", "synthetic:spiked", "census")
		}, line: `FAIL  cell 6 [6]: count/laplace on census: the receipt says public synthetic data, but names dataset "census"`},
		{name: "synthetic text edited to another dataset", cell: 6, tamper: func(t *testing.T, sh shared) {
			sh.editText(t, 5, "text/plain", "synthetic:spiked", "people")
		}, line: `FAIL  cell 6 [6]: count/laplace on synthetic:spiked: the receipt says public synthetic data, but its text/plain does not say "privacy receipt: count/laplace on synthetic:spiked,"`},
		{name: "two outputs of one record", tamper: func(t *testing.T, sh shared) {
			sh.nb.Cells[0].Outputs = clone(t, sh.nb.Cells[1:2])[0].Outputs
		}, cell: 1, line: `ok    cell 1 [1]: count/laplace on people: record 3 (charged, name "n"), release `,
			totals: []string{"", "ok    dataset people: 4 output(s) from 2 charge(s) (records 3, 5), 1 replay(s); notebook spent ε=1, δ=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := shared{dir: base.dir, nb: &Notebook{Cells: clone(t, base.nb.Cells)}, led: base.led}
			tc.tamper(t, sh)
			rep := Check(sh.nb, sh.led)
			var got []string
			for _, l := range rep.Lines {
				got = append(got, l.String())
			}
			want := append([]string(nil), honestLines...)
			if tc.cell == 1 {
				want = append([]string{tc.line}, want...)
			} else if tc.cell > 0 {
				want[tc.cell-2] = tc.line
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Errorf("line %d:\n got %s\nwant %s…", i+1, got[i], want[i])
				}
			}
			wantOK := tc.cell == 0 || strings.HasPrefix(tc.line, "ok") || strings.HasPrefix(tc.line, "UNVERIFIED")
			if rep.OK() != wantOK {
				t.Errorf("OK() = %v, want %v", rep.OK(), wantOK)
			}
			for i, w := range tc.totals {
				if w == "" {
					continue
				}
				if i >= len(rep.Totals) || !strings.HasPrefix(rep.Totals[i].String(), w) {
					t.Errorf("total %d: got %v, want %s…", i, rep.Totals, w)
				}
			}
		})
	}
}

func executedHash(t *testing.T, sh shared, record int64) string {
	t.Helper()
	h := sh.led.Releases[record].ValueHash
	if h == "" {
		t.Fatalf("record %d stores no release", record)
	}
	return h
}

// The notebook's charges are composed under the dataset's accountant and
// checked against its registered budget: a budget lower than what the
// notebook's records cost fails the dataset's total, naming the record.
func TestCheckTotalsOverBudget(t *testing.T) {
	sh := executed(t)
	led := *sh.led
	led.Totals = map[string]ledger.DatasetBudget{}
	for k, v := range sh.led.Totals {
		led.Totals[k] = v
	}
	p := led.Totals["people"]
	p.Budget = accounting.Budget{Eps: 0.75}
	led.Totals["people"] = p
	rep := Check(sh.nb, &led)
	if rep.OK() {
		t.Fatal("a notebook spending ε=1 of a budget of ε=0.75 verified")
	}
	if len(rep.Totals) != 2 || rep.Totals[0].Err != "" {
		t.Fatalf("totals %v", rep.Totals)
	}
	if got := rep.Totals[1].String(); !strings.HasPrefix(got, "FAIL  dataset people:") || !strings.Contains(got, "the notebook's charges exceed the registered budget at record 5") {
		t.Errorf("total: %s", got)
	}
	for _, l := range rep.Lines {
		if !l.OK && !l.Unverified {
			t.Errorf("an output failed: %s", l)
		}
	}
}

func TestWhere(t *testing.T) {
	n := 7
	for _, tc := range []struct {
		i    int
		c    Cell
		want string
	}{
		{0, Cell{}, "cell 1"},
		{3, Cell{ExecutionCount: &n}, "cell 4 [7]"},
	} {
		if got := Where(tc.i, tc.c); got != tc.want {
			t.Errorf("Where(%d) = %q, want %q", tc.i, got, tc.want)
		}
	}
}

// compare: notebook text is a string or a list of lines; JSON is compared
// as values.
func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		mime  string
		shown string
		want  any
		diff  string
	}{
		{"text/plain", `"a\nb"`, "a\nb", ""},
		{"text/plain", `["a\n", "b"]`, "a\nb", ""},
		{"text/plain", `["a\n", "c"]`, "a\nb", `line 2 shows "c", the stored release renders "b"`},
		{"text/plain", `["a\n", 1]`, "a\nb", "not text"},
		{"text/plain", `"a\nb\n"`, "a\nb", `line 3 shows "", the stored release renders no line 3`},
		{"text/plain", `["a"]`, "a\nb", `the output has no line 2, the stored release renders "b"`},
		{"application/json", `{"v": 1.0, "w": [1e-7]}`, map[string]any{"v": 1, "w": []float64{1e-7}}, ""},
		{"application/json", `{"v": 2}`, map[string]any{"v": 1}, "the JSON differs"},
		{"application/json", `{"v": 1, "x": 0}`, map[string]any{"v": 1}, "the JSON differs"},
		{"application/json", `{"v": `, map[string]any{"v": 1}, "the JSON differs"},
		{"image/png", `"AAAA"`, "AAAA", ""},
		{"image/png", `"AAAB"`, "AAAA", `line 1 shows "AAAB"`},
	} {
		got := compare(tc.mime, json.RawMessage(tc.shown), tc.want)
		if (tc.diff == "") != (got == "") || !strings.HasPrefix(got, tc.diff) {
			t.Errorf("compare(%s, %s) = %q, want %q", tc.mime, tc.shown, got, tc.diff)
		}
	}
}

// Honest outputs of every kind of call a notebook makes verify: each
// result type, a derived dataset (its receipt names the lineage), a
// budget block, a zCDP dataset, a display() of a release next to the
// cell's result, and a dry run of a stored name (it would replay).
func TestCheckHonestKinds(t *testing.T) {
	dir := newState(t, true)
	s := newSession(t, dir)
	s.cell(`ds := dataset("people")
zc := dataset("zc")`)
	cells := []string{
		`private_sum(ds, col="income", eps=0.2, name="s")`,
		`private_histogram(ds, col="age", bins=4, eps=0.2)`,
		`private_quantile(ds, col="age", q=0.5, eps=0.2)`,
		`private_mean(ds, columns=[]string{"age", "income"}, eps=0.2, delta=1e-6)`,
		`private_count(filter(ds, col="age", op=">=", value=30), eps=0.2, name="old")`,
		"var b *CountResult\nbudget eps=0.3 {\n\tb = private_count(ds, eps=0.2)\n}\nb",
		`private_count(zc, eps=0.5, delta=1e-6)`,
		`private_mean(zc, col="age", eps=0.5, delta=1e-6, name="zm")`,
		`private_sum(ds, col="income", eps=0.2, name="s", dry_run=true)`,
		`private_pca(zc, k=1, eps=0.5, delta=1e-6, method="gauss")`,
		// the receipt alone, without the value
		`private_count(ds, eps=0.2, name="rc").Receipt`,
		// a call taking its block's δ: the runtime adds a sentence to
		// the note after the release is stored (runtime.BlockDeltaNote)
		"var g *PCAResult\nbudget eps=0.6, delta=1e-6 {\n\tg = private_pca(zc, k=1, eps=0.5, method=\"gauss\")\n}\ng",
	}
	for _, c := range cells {
		s.cell(c)
	}
	nb := s.notebook()
	rep := Check(nb, verified(t, dir))
	if len(rep.Lines) != len(cells) {
		t.Fatalf("%d lines for %d outputs", len(rep.Lines), len(cells))
	}
	for i, l := range rep.Lines {
		// The dry run (cell 10) is listed as unverified: the ledger
		// holds nothing of it.
		if !l.OK && !(i == 8 && l.Unverified) {
			t.Errorf("an honest output did not verify: %s", l)
		}
	}
	for _, tot := range rep.Totals {
		if tot.Err != "" {
			t.Errorf("an honest total failed: %s", tot)
		}
	}
	if !strings.Contains(rep.Lines[4].What, "on people | age >= 30: record 12") || !strings.Contains(rep.Lines[8].What, "unverified (dry run") {
		t.Errorf("lines:\n%v", rep.Lines)
	}
	if last := nb.Cells[len(nb.Cells)-1].Outputs[0]; !strings.Contains(string(last.Metadata["privnotes"]), "budget block's (the call gave no delta)") {
		t.Errorf("the block's δ is not in the note: %s", last.Metadata["privnotes"])
	}
	if len(rep.Totals) != 2 || rep.Totals[0].Dataset != "people" || len(rep.Totals[0].Records) != 7 || rep.Totals[1].Dataset != "zc" || len(rep.Totals[1].Records) != 4 {
		t.Errorf("totals %v", rep.Totals)
	}
}

// A release stored before receipts were bound to releases carries no
// receipt: its values are still checked, but the receipt the output shows
// cannot be redrawn from the ledger, so the output is unverified.
func TestCheckReleaseWithoutReceipt(t *testing.T) {
	sh := executed(t)
	led := *sh.led
	led.Releases = map[int64]ledger.StoredRelease{}
	for k, v := range sh.led.Releases {
		led.Releases[k] = v
	}
	rel := led.Releases[5]
	v, cols, err := release.Decode([]byte(rel.Value))
	if err != nil {
		t.Fatal(err)
	}
	enc, h, err := release.Encode(v, cols)
	if err != nil {
		t.Fatal(err)
	}
	rel.Value, rel.ValueHash = string(enc), h
	led.Releases[5] = rel
	sh.led = &led
	sh.forge(t, 2, 5, func(rc *release.Receipt) { rc.ReleaseHash = h })
	l := Check(sh.nb, sh.led).Lines[1]
	if want := "UNVERIFIED  cell 3 [3]: bounded-mean/laplace on people: record 5: the release stored with it carries no receipt"; !strings.HasPrefix(l.String(), want) {
		t.Errorf("got  %s\nwant %s…", l, want)
	}
	sh.editText(t, 2, "text/plain", "  age     ", "  age     1")
	if l := Check(sh.nb, sh.led).Lines[1]; l.OK || l.Unverified {
		t.Errorf("an edited value of a release without a receipt: %s", l)
	}
}
