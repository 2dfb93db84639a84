package main

// privnotes dataset show: a dataset's public schema, the facts an analyst
// needs to write a call before spending budget (issue 29): the columns
// with their kinds, public bounds and categorical domains, the privacy
// unit, the clip norm, the accountant, the budget and what remains. Only
// --owner adds what the registry holds about the data itself.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/privnotes/privnotes/dsl/ledger"
)

func datasetShow(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dataset show", "dataset show NAME [--owner] [--state DIR]", `Shows a dataset's public schema, as notebooks see it: its columns with
their kinds, public bounds (--bounds) and categorical domains
(--categories), the privacy unit, clip norm, neighbouring relation,
accountant, budget, spent and remaining. Nothing in it is derived from the
data; the number of units appears only when the owner declared it public
(--public-n). --owner adds the facts only the data owner may see: rows,
users, source, data hash, registration time.`, stderr)
	owner := fs.Bool("owner", false, "also show the facts only the data owner may see (rows, users, source, data hash)")
	st, name, code := openState(fs, args, stderr, true)
	if st == nil {
		return code
	}
	defer st.Close()
	// One snapshot for the schema and the budget's status: a charge
	// committed between two reads would show a spent that is not the
	// remaining's.
	var info *ledger.OwnerInfo
	var status *ledger.Status
	err := st.View(context.Background(), func(v *ledger.View) (err error) {
		if info, err = v.OwnerInfo(name); err != nil {
			return err
		}
		status, err = v.Status(name)
		return err
	})
	if err != nil {
		fmt.Fprintf(stderr, "privnotes dataset show: %v\n", err)
		return 1
	}
	writePublicSchema(stdout, info.Schema, status)
	if *owner {
		writeOwnerOnly(stdout, info)
	}
	return 0
}

// writePublicSchema prints what a notebook may see of a dataset.
func writePublicSchema(w io.Writer, sc ledger.Schema, st *ledger.Status) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset %s (public schema: what notebooks see)\n", sc.Name)
	if o := sc.Synthetic; o != nil {
		fmt.Fprintf(tw, "  PUBLIC\tsynthetic rows of release %q of dataset %q (ledger record %d): calls charge nothing\n", o.Release, o.Dataset, o.Record)
	}
	if ms := sc.Matrix; sc.IsMatrix() && ms != nil {
		kind := "symmetric"
		if !ms.Symmetric {
			kind = "rectangular"
		}
		fmt.Fprintf(tw, "  matrix\t%d×%d (%s)\n", ms.Rows, ms.Cols, kind)
		fmt.Fprintf(tw, "  neighbours\tentry: one entry (and its mirror, if symmetric) replaced by any value in [-%g, %g]\n", ms.EntryBound, ms.EntryBound)
	} else {
		if sc.Unit == "user" {
			fmt.Fprintf(tw, "  privacy unit\tuser (column %s)\n", sc.UserColumn)
		} else {
			fmt.Fprintf(tw, "  privacy unit\trow\n")
		}
		if sc.PublicN > 0 {
			unit := "rows"
			if sc.Unit == "user" {
				unit = "users"
			}
			how := "declared public with --public-n"
			if sc.Public() {
				how = "the synthetic table's, public"
			}
			fmt.Fprintf(tw, "  public n\t%d %s (%s)\n", sc.PublicN, unit, how)
		}
		fmt.Fprintf(tw, "  clip norm\t%s\n", clipLabel(sc.Clip))
		fmt.Fprintf(tw, "  neighbours\t%s\n", sc.Neighbour)
		fmt.Fprintf(tw, "  bad rows\t%s\n", sc.BadRows)
	}
	fmt.Fprintf(tw, "  budget\tε=%g, δ=%g (%s accountant)\n", sc.Budget.Eps, sc.Budget.Delta, accountantLabel(sc.Accountant))
	fmt.Fprintf(tw, "  spent\tε=%.6g, δ=%.3g in %d charges\n", st.Spent.Eps, st.Spent.Delta, st.Charges)
	fmt.Fprintf(tw, "  remaining\tε=%.6g, δ=%.3g\n", st.Remaining.Eps, st.Remaining.Delta)
	tw.Flush()
	cols := sc.PublicColumns()
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "  columns (d=%d numeric features):\n", sc.D)
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "    COLUMN\tKIND\tPUBLIC")
	for _, f := range cols {
		fmt.Fprintf(tw, "    %s\t%s\t%s\n", f.Name, f.Kind, f.Public(0))
	}
	tw.Flush()
}

// writeOwnerOnly prints the registry's facts about the data itself, which
// never reach a notebook.
func writeOwnerOnly(w io.Writer, info *ledger.OwnerInfo) {
	sc := info.Schema
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "owner only (never shown to notebooks)")
	live := liveTable(info)
	if live {
		fmt.Fprintf(tw, "  rows\tnot counted (a live table: registration reads no row)\n")
	}
	if !sc.IsMatrix() && !live {
		fmt.Fprintf(tw, "  rows\t%d\n", info.Rows)
		if sc.Unit == "user" {
			fmt.Fprintf(tw, "  users\t%d\n", info.Users)
		}
		if info.Dropped > 0 {
			fmt.Fprintf(tw, "  dropped at registration\t%d bad rows\n", info.Dropped)
		}
	}
	fmt.Fprintf(tw, "  source\t%s\n", strings.TrimSpace(info.Source))
	if !live {
		fmt.Fprintf(tw, "  data hash (salted)\t%s\n", info.DataHash)
	}
	fmt.Fprintf(tw, "  registered\t%s\n", info.Created.Format("2006-01-02 15:04:05 UTC"))
	tw.Flush()
}
