package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
)

func init() {
	register(&command{
		name:    "ledger",
		summary: "the privacy ledger: show [--dataset NAME] | export [--json | --csv] [--dataset NAME]... | verify",
		run:     runLedger,
	})
}

const ledgerUsage = `Usage:
  privnotes ledger show [--dataset NAME] [--state DIR]
  privnotes ledger export [--json | --csv] [--dataset NAME]... [--state DIR]
  privnotes ledger verify [--state DIR]
`

func runLedger(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, ledgerUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "show":
		fs := newFlags("ledger show", "ledger show [--dataset NAME] [--state DIR]", "Prints the ledger's records with their cost and cell: registrations, charges,\nremovals, and the cost-free seal records that commit the chain to the stored\nreleases (\"seal of record N\"), numbered as in ledger verify and the exports;\nthen the live reservations of federated calls in progress, which hold budget\nuntil they are committed, aborted or lapse.", stderr)
		name := fs.String("dataset", "", "only this dataset's records")
		st, _, code := openState(fs, args, stderr, false)
		if st == nil {
			return code
		}
		defer st.Close()
		// One snapshot: the records and the head agree while a server
		// keeps charging. It is written once the snapshot is closed: an
		// open snapshot, waiting on a slow reader of stdout, keeps the
		// write-ahead log from being checkpointed.
		var out bytes.Buffer
		err := st.View(context.Background(), func(v *ledger.View) error {
			rows, err := v.Rows(*name)
			if err == nil && *name != "" {
				_, err = v.Schema(*name)
			}
			if err != nil {
				return err
			}
			if err := ledger.WriteTable(&out, rows); err != nil {
				return err
			}
			id, head, err := v.Head()
			if err != nil {
				return err
			}
			fmt.Fprintf(&out, "head: record %d, hash %s\n", id, head)
			return showHeld(&out, v, *name)
		})
		if err != nil {
			fmt.Fprintf(stderr, "privnotes ledger show: %v\n", err)
			return 1
		}
		if _, err := out.WriteTo(stdout); err != nil {
			fmt.Fprintf(stderr, "privnotes ledger show: %v\n", err)
			return 1
		}
		return 0
	case "export":
		fs := newFlags("ledger export", "ledger export [--json | --csv] [--dataset NAME]... [--state DIR]", `Writes the ledger, for audits and other tools: a text table, one JSON
document (--json), or CSV with one row per record (--csv: a registration's
budget, accountant, unit, columns and data hash in columns of their own;
the whole schema is in the JSON). Every field is
public: the ledger holds costs, public parameters, hashes and the released
(differentially private) values, never data. The JSON document also holds
the records exactly as hashed, the stored releases and each dataset's
registered budget, so it can be committed next to an executed notebook and
checked with `+"`privnotes notebook verify FILE.ipynb --ledger FILE.json`"+`
(docs/shared-notebooks.md). With --dataset (once per dataset), only those
datasets' records: the JSON document is then a partial export, which still
verifies from the first record to the head, every other dataset's record
reduced to its id and hashes (docs/accounting.md §5).`, stderr)
		asJSON := fs.Bool("json", false, "write one JSON document (default: a text table)")
		var only ledgerDatasets
		fs.Var(&only, "dataset", "only this dataset's records (repeat for several); --json: a partial export of those datasets")
		asCSV := fs.Bool("csv", false, "write CSV, one row per record: "+strings.Join(ledgerCSVHeader, ","))
		st, _, code := openState(fs, args, stderr, false)
		if st == nil {
			return code
		}
		defer st.Close()
		if *asJSON && *asCSV {
			fmt.Fprintln(stderr, "privnotes ledger export: give --json or --csv, not both")
			return 2
		}
		// One snapshot (ledger.View): an export taken while a server
		// charges and seals verifies on its own. (Written once the
		// snapshot is closed, as ledger show.)
		var out bytes.Buffer
		err := st.View(context.Background(), func(v *ledger.View) error {
			if *asCSV {
				return writeLedgerCSV(&out, v, only...)
			}
			return v.Export(&out, *asJSON, only...)
		})
		if err == nil {
			_, err = out.WriteTo(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "privnotes ledger export: %v\n", err)
			return 1
		}
		return 0
	case "verify":
		fs := newFlags("ledger verify", "ledger verify [--state DIR]", `Checks the database's integrity, the ledger's hash chain, that no charge
exceeded its dataset's budget, the stored releases against their charges and
seal records, the datasets' running totals against their charges, and the
stored data against their hashes. A state directory of an
earlier privnotes is upgraded first.
Exit status: 0 intact, 1 error, 2 usage, 3 the chain, the totals or the data
were altered or damaged.`, stderr)
		st, _, code, err := openStateErr(fs, args, stderr, false)
		if st == nil {
			if errors.Is(err, ledger.ErrCorrupt) {
				return 3
			}
			return code
		}
		defer st.Close()
		// One snapshot (ledger.View): the check, and the head and the
		// releases it reports, are of the same ledger, whatever a live
		// server commits meanwhile.
		var id int64
		var head string
		sealed := 0
		var verr error
		err = st.View(context.Background(), func(v *ledger.View) error {
			if verr = v.Verify(); verr != nil {
				return nil
			}
			var err error
			if id, head, err = v.Head(); err != nil {
				return err
			}
			rels, err := v.Releases("")
			if err != nil {
				return err
			}
			for _, r := range rels {
				if r.Sealed() {
					sealed++
				}
			}
			return nil
		})
		if verr != nil {
			fmt.Fprintf(stderr, "privnotes ledger verify: %v\n", verr)
			var ce *ledger.ChainError
			if errors.As(verr, &ce) || errors.Is(verr, ledger.ErrCorrupt) {
				return 3
			}
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "privnotes ledger verify: %v\n", err)
			if errors.Is(err, ledger.ErrCorrupt) {
				return 3
			}
			return 1
		}
		// Verify checked that each stored release has its seal record, so
		// the head commits to their values too.
		fmt.Fprintf(stdout, "ledger OK: %d records, head hash %s (covers the %d stored release(s) through their seal records)\n", id, head, sealed)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, ledgerUsage)
		return 0
	}
	fmt.Fprintf(stderr, "privnotes ledger: unknown subcommand %q\n\n%s", sub, ledgerUsage)
	return 2
}

// ledgerDatasets is a flag given once per dataset.
type ledgerDatasets []string

func (l *ledgerDatasets) String() string { return strings.Join(*l, ",") }

func (l *ledgerDatasets) Set(name string) error {
	if name == "" {
		return errors.New("an empty dataset name")
	}
	*l = append(*l, name)
	return nil
}

// ledgerCSVHeader names the columns of ledger export --csv: the record's
// fields; its cost split into the measure and its parameters (a charge's
// only); its public parameters as JSON (a charge's and a seal's); and a
// registration's schema in columns of its own rather than one JSON cell:
// the budget and accountant it is charged against, the privacy unit, the
// numeric columns (space-separated), and the data hash (of a removal too).
// The rest of a schema (bounds, categories, label, clip, ...) is in the
// JSON export.
var ledgerCSVHeader = []string{"id", "time", "kind", "dataset", "mechanism", "measure", "eps", "delta", "rho", "mu", "cell", "params",
	"budget_eps", "budget_delta", "accountant", "unit", "columns", "data_hash", "prev_hash", "hash"}

// writeLedgerCSV writes every ledger record of v's snapshot (of datasets
// only, if any are given) as one CSV row, seal records included. Numbers
// are written in the shortest form that reads back exactly.
func writeLedgerCSV(w io.Writer, v *ledger.View, datasets ...string) error {
	doc, err := v.ExportDoc(datasets...)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(ledgerCSVHeader); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, e := range doc.Records {
		measure, eps, delta, rho, mu := "", "", "", "", ""
		if ev := e.Event; ev != nil {
			measure, eps, delta, rho, mu = ev.Kind.String(), num(ev.Eps), num(ev.Delta), num(ev.Rho), num(ev.Mu)
		}
		params := string(e.Params)
		var bEps, bDelta, acct, unit, cols, dataHash string
		if e.Kind == "register" || e.Kind == "remove" {
			var p struct {
				Schema   *ledger.Schema `json:"schema"`
				DataHash string         `json:"data_hash"`
			}
			if err := json.Unmarshal(e.Params, &p); err != nil {
				return fmt.Errorf("record %d: corrupt parameters: %v (privnotes ledger verify checks the ledger)", e.ID, err)
			}
			params, dataHash = "", p.DataHash
			if sc := p.Schema; sc != nil {
				bEps, bDelta, acct, unit, cols = num(sc.Budget.Eps), num(sc.Budget.Delta), sc.Accountant, sc.Unit, strings.Join(sc.Columns, " ")
			}
		}
		row := []string{strconv.FormatInt(e.ID, 10), e.Time.UTC().Format(time.RFC3339Nano), e.Kind, e.Dataset, e.Mechanism,
			measure, eps, delta, rho, mu, e.Cell, params, bEps, bDelta, acct, unit, cols, dataHash, e.PrevHash, e.Hash}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// showHeld writes the live reservations of dataset ("": of every dataset)
// in v's snapshot and, per dataset, what they hold beside its charges;
// nothing without any.
func showHeld(w io.Writer, v *ledger.View, dataset string) error {
	rs, err := v.Held(dataset)
	if err != nil || len(rs) == 0 {
		return err
	}
	fmt.Fprintf(w, "\n%d live reservation(s) of federated calls in progress: each counts against its dataset's budget until its coordinator commits it (a charge) or aborts it, or it lapses\n", len(rs))
	if err := ledger.WriteHeld(w, rs); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.Dataset] {
			continue
		}
		seen[r.Dataset] = true
		s, err := v.Status(r.Dataset)
		if err != nil {
			return err
		}
		if line := ledger.HeldSummary(s); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	return nil
}
