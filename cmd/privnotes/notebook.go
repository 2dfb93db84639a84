package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/verify"
)

func init() {
	register(&command{
		name:    "notebook",
		summary: "shared notebooks: verify FILE.ipynb [--state DIR | --ledger LEDGER.json] | receipts FILE.ipynb",
		run:     runNotebook,
	})
}

const notebookUsage = `Usage: privnotes notebook verify FILE.ipynb [--state DIR | --ledger LEDGER.json]
       privnotes notebook receipts FILE.ipynb

Checks a saved notebook's outputs against the ledger, or lists what its
receipts say it spent (docs/shared-notebooks.md).
`

func runNotebook(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, notebookUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "verify":
		return notebookVerify(args, stdout, stderr)
	case "receipts":
		return notebookReceipts(args, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, notebookUsage)
		return 0
	}
	fmt.Fprintf(stderr, "privnotes notebook: unknown subcommand %q\n\n%s", sub, notebookUsage)
	return 2
}

// notebookFile parses fs with one positional FILE, before or after the
// flags.
func notebookFile(fs *flag.FlagSet, args []string, stderr io.Writer) (string, int, bool) {
	file := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", 0, false
		}
		return "", 2, false
	}
	rest := fs.Args()
	if file == "" && len(rest) > 0 {
		file, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments: %s\n", fs.Name(), strings.Join(rest, " "))
		return "", 2, false
	}
	if file == "" {
		fmt.Fprintf(stderr, "%s: give the notebook FILE.ipynb\n", fs.Name())
		return "", 2, false
	}
	return file, 0, true
}

func notebookVerify(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("notebook verify", "notebook verify FILE.ipynb [--state DIR | --ledger LEDGER.json]", `Checks every output of the notebook that carries a privnotes receipt against
a ledger: the state directory's (--state, default $PRIVNOTES_STATE) or a file
written by `+"`privnotes ledger export --json`"+` (--ledger). For each output: its
ledger record exists and the hash chain verifies, the release stored with the
record has the receipt's release hash, and the output is exactly what the
kernel shows for the stored release with the receipt rebuilt from the ledger
alone: the full receipt, every rendering (text/plain, text/html, ...) and the
metadata. Nothing the notebook carries is trusted. Dry runs, public synthetic
data, and budget blocks or receipts the ledger does not record are listed as
UNVERIFIED: the ledger cannot back what they show. Per dataset, the
notebook's charges must fit the registered budget. Prints one line per
output and a total per dataset.
Exit status: 0 nothing fails (unverified outputs are listed, not failed), 1
something fails (the line says why and names the cell), 2 usage.`, stderr)
	state := fs.String("state", "", "state directory holding the ledger (default $PRIVNOTES_STATE, else ~/.local/share/privnotes)")
	ledgerFile := fs.String("ledger", "", "an exported ledger (privnotes ledger export --json) instead of a state directory")
	file, code, ok := notebookFile(fs, args, stderr)
	if !ok {
		return code
	}
	if *state != "" && *ledgerFile != "" {
		fmt.Fprintln(stderr, "privnotes notebook verify: give --state or --ledger, not both")
		return 2
	}
	nb, err := verify.ReadNotebook(file)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes notebook verify: %v\n", err)
		return 1
	}
	doc, source, err := loadLedger(*state, *ledgerFile)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes notebook verify: %v\n", err)
		return 1
	}
	led, err := ledger.VerifyExport(doc)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes notebook verify: the ledger (%s) does not verify: %v\n", source, err)
		return 1
	}
	rep := verify.Check(nb, led)
	for _, l := range rep.Lines {
		fmt.Fprintln(stdout, l)
	}
	for _, t := range rep.Totals {
		fmt.Fprintln(stdout, t)
	}
	if len(rep.Lines) == 0 {
		fmt.Fprintf(stdout, "%s shows no output with a privnotes receipt: nothing to verify\n", file)
	}
	verifiedN, unverifiedN := rep.Count()
	if unverifiedN > 0 {
		fmt.Fprintf(stdout, "%d output(s) UNVERIFIED (listed above): the ledger cannot back what they show; read them as the notebook's own text\n", unverifiedN)
	}
	if rep.Unchecked > 0 {
		fmt.Fprintf(stdout, "%d output(s) without a receipt not checked (public computations and printed text; nothing in them is verified)\n", rep.Unchecked)
	}
	if !rep.OK() {
		fmt.Fprintf(stdout, "FAILED: %s does not verify against %s\n", file, source)
		return 1
	}
	fmt.Fprintf(stdout, "verified: %d output(s) of %s against %s (head record %d, hash %s; the head covers every record and, through the seal records, every stored value)\n",
		verifiedN, file, source, doc.HeadID, ledger.ShortHash(doc.HeadHash))
	if len(led.Datasets) > 0 {
		fmt.Fprintf(stdout, "the ledger is a partial export of %s: every other dataset's record is in its chain as its id and hashes only (docs/shared-notebooks.md)\n", strings.Join(led.Datasets, ", "))
	}
	if *ledgerFile != "" {
		// The head suffices to pin the ledger (docs/shared-notebooks.md);
		// the file's digest is an extra for a reader with the owner's copy.
		if b, err := os.ReadFile(*ledgerFile); err == nil {
			sum := sha256.Sum256(b)
			fmt.Fprintf(stdout, "ledger file %s: sha256 %x (an extra check against the owner's copy)\n", *ledgerFile, sum)
		}
	}
	return 0
}

// loadLedger reads the ledger to verify against: an exported file, or the
// state directory's, which must pass `privnotes ledger verify` first.
func loadLedger(state, file string) (*ledger.ExportDoc, string, error) {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		doc, err := ledger.ReadExport(f)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", file, err)
		}
		return doc, file, nil
	}
	dir, err := ledger.ResolveStateDir(state)
	if err != nil {
		return nil, "", err
	}
	st, err := ledger.OpenExisting(dir)
	if err != nil {
		return nil, "", err
	}
	defer st.Close()
	// One snapshot (ledger.View): the document checked against is the
	// ledger that verified, though a live server charges meanwhile.
	var doc *ledger.ExportDoc
	err = st.View(context.Background(), func(v *ledger.View) error {
		if err := v.Verify(); err != nil {
			return fmt.Errorf("the ledger in %s does not verify: %w", dir, err)
		}
		var err error
		doc, err = v.ExportDoc()
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return doc, "the ledger in " + dir, nil
}

func notebookReceipts(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("notebook receipts", "notebook receipts FILE.ipynb", `Prints what the notebook spent, from its outputs' receipts alone: one line
per output with a receipt, then per dataset its charges and their costs.
It trusts the receipts; `+"`privnotes notebook verify`"+` checks them against a ledger.`, stderr)
	file, code, ok := notebookFile(fs, args, stderr)
	if !ok {
		return code
	}
	nb, err := verify.ReadNotebook(file)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes notebook receipts: %v\n", err)
		return 1
	}
	sp, err := verify.Receipts(nb)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes notebook receipts: %v\n", err)
		return 1
	}
	if len(sp.Lines) == 0 {
		fmt.Fprintf(stdout, "%s shows no output with a privnotes receipt: it spent nothing\n", file)
		return 0
	}
	for _, l := range sp.Lines {
		fmt.Fprintln(stdout, l)
	}
	for _, d := range sp.Datasets {
		fmt.Fprintln(stdout, d)
	}
	return 0
}
