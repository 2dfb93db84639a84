package main

// privnotes dataset rm: undo a registration that was never charged.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/dsl/syntax"
)

func datasetRm(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dataset rm", "dataset rm NAME [--state DIR]", `Removes a dataset that has never been charged: its registration, its stored
data or snapshot file and its schema, in one transaction, so that a typo at
registration is not permanent and the name can be registered again. The
ledger keeps a chained "remove" record (ledger verify still holds).

A dataset with charges cannot be removed: the ledger is append-only and the
budget spent stays spent. Register the data under a new name instead. Nor can
a dataset with live reservations of federated calls in progress (privnotes
ledger show lists them): wait until their coordinator commits or aborts them
or they lapse.`, stderr)
	st, name, code := openState(fs, args, stderr, true)
	if st == nil {
		return code
	}
	defer st.Close()
	rm, err := st.Remove(context.Background(), name)
	switch {
	case errors.Is(err, ledger.ErrNoDataset):
		hint := ""
		if scs, err := st.Datasets(); err == nil {
			names := make([]string, len(scs))
			for i, sc := range scs {
				names[i] = sc.Name
			}
			if best, ok := syntax.Closest(name, names); ok {
				hint = fmt.Sprintf(" Did you mean %q?", best)
			}
		}
		fmt.Fprintf(stderr, "privnotes dataset rm: no dataset %q in %s.%s `privnotes dataset list --state %s` lists them.\n", name, st.Dir(), hint, st.Dir())
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "privnotes dataset rm: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed dataset %q from %s (ledger record %d); the name can be registered again\n", name, st.Dir(), rm.Record)
	// A live table's sessions that this process keeps in the dataset's
	// pool end now; another process's (a kernel's, the data service's)
	// end when their pool has been idle for a minute or at that process's
	// exit, since a pool belongs to the process that made it.
	pgsource.Close(st.EngineSecretPath(name))
	if rm.Snapshot != "" {
		// The snapshot and its row cache: both hold the owner's data.
		if err := snapshot.Discard(rm.Snapshot); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "warning: could not delete the snapshot files of %s (%v); they are no longer used, delete them by hand\n", rm.Snapshot, err)
		}
	}
	return 0
}
