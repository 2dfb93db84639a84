package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/privnotes/privnotes/dsl/ledger"
)

func init() {
	register(&command{
		name:    "ledger",
		summary: "the privacy ledger: show [--dataset NAME] | export [--json] | verify",
		run:     runLedger,
	})
}

const ledgerUsage = `Usage:
  privnotes ledger show [--dataset NAME] [--state DIR]
  privnotes ledger export [--json] [--state DIR]
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
		fs := newFlags("ledger show", "ledger show [--dataset NAME] [--state DIR]", "Prints every ledger record (registrations and charges) with its cost and cell.", stderr)
		name := fs.String("dataset", "", "only this dataset's records")
		st, _, code := openState(fs, args, stderr, false)
		if st == nil {
			return code
		}
		defer st.Close()
		entries, err := st.Entries(*name)
		if err == nil && *name != "" {
			_, err = st.Schema(*name)
		}
		if err != nil {
			fmt.Fprintf(stderr, "privnotes ledger show: %v\n", err)
			return 1
		}
		if err := ledger.WriteTable(stdout, entries); err != nil {
			fmt.Fprintf(stderr, "privnotes ledger show: %v\n", err)
			return 1
		}
		id, head, err := st.Head()
		if err != nil {
			fmt.Fprintf(stderr, "privnotes ledger show: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "head: record %d, hash %s\n", id, head)
		return 0
	case "export":
		fs := newFlags("ledger export", "ledger export [--json] [--state DIR]", "Writes the whole ledger, for audits and other tools.", stderr)
		asJSON := fs.Bool("json", false, "write JSON (default: a text table)")
		st, _, code := openState(fs, args, stderr, false)
		if st == nil {
			return code
		}
		defer st.Close()
		if err := st.Export(stdout, *asJSON); err != nil {
			fmt.Fprintf(stderr, "privnotes ledger export: %v\n", err)
			return 1
		}
		return 0
	case "verify":
		fs := newFlags("ledger verify", "ledger verify [--state DIR]", `Checks the database's integrity, the ledger's hash chain, that no charge
exceeded its dataset's budget, the datasets' running totals against their
charges, and the stored data against their hashes. A state directory of an
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
		if err := st.Verify(); err != nil {
			fmt.Fprintf(stderr, "privnotes ledger verify: %v\n", err)
			var ce *ledger.ChainError
			if errors.As(err, &ce) || errors.Is(err, ledger.ErrCorrupt) {
				return 3
			}
			return 1
		}
		id, head, err := st.Head()
		if err != nil {
			fmt.Fprintf(stderr, "privnotes ledger verify: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "ledger OK: %d records, head hash %s\n", id, head)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, ledgerUsage)
		return 0
	}
	fmt.Fprintf(stderr, "privnotes ledger: unknown subcommand %q\n\n%s", sub, ledgerUsage)
	return 2
}
