package main

import (
	"errors"
	"flag"
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
	fs := flag.NewFlagSet("privnotes ledger "+sub, flag.ContinueOnError)
	switch sub {
	case "show":
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
		st, _, code := openState(fs, args, stderr, false)
		if st == nil {
			return code
		}
		defer st.Close()
		if err := st.Verify(); err != nil {
			fmt.Fprintf(stderr, "privnotes ledger verify: %v\n", err)
			var ce *ledger.ChainError
			if errors.As(err, &ce) {
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
