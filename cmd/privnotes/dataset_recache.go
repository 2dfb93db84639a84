package main

// privnotes dataset recache: rebuild a snapshot's row cache (data owner).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
)

func datasetRecache(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dataset recache", "dataset recache NAME [--state DIR]", `Rebuilds the row cache of a dataset registered with --from, --csv or --sql
or --matrix (the NAME-HASH.rows file beside its snapshot, which passes read instead of
decoding Parquet), in this version's format. It verifies the snapshot
against its registered hash first, and changes nothing else: not the
registration, not the ledger, not the budget. A current cache is left as
it is. Use it when privnotes notes that a snapshot has no valid row cache
(a cache written by an older version, PNROWS01, or one removed by hand).
Only the data owner, who owns the state directory, can run it.`, stderr)
	st, name, code := openState(fs, args, stderr, true)
	if st == nil {
		return code
	}
	defer st.Close()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "privnotes dataset recache: "+format+"\n", a...)
		return 1
	}
	if _, err := st.Schema(name); errors.Is(err, ledger.ErrNoDataset) {
		return fail("no dataset %q in %s; `privnotes dataset list --state %s` lists them", name, st.Dir(), st.Dir())
	} else if err != nil {
		return fail("%v", err)
	}
	path, hash, ok, err := st.Snapshot(name)
	if err != nil {
		return fail("%v", err)
	}
	if !ok {
		return fail("dataset %q is stored in the state database (an older registration), not as a snapshot: it has no row cache to rebuild", name)
	}
	if err := ownsDir(st.SnapshotDir()); err != nil {
		return fail("%v", err)
	}
	rebuilt, err := snapshot.Recache(context.Background(), path, hash)
	if err != nil {
		return fail("dataset %q: %v; nothing was changed", name, err)
	}
	if !rebuilt {
		fmt.Fprintf(stdout, "dataset %q: the row cache %s is current and matches its snapshot; nothing to do\n", name, snapshot.CachePath(path))
		return 0
	}
	fmt.Fprintf(stdout, "dataset %q: rebuilt the row cache %s from its snapshot (hash verified); the registration, ledger and budget are unchanged\n", name, snapshot.CachePath(path))
	return 0
}

// currentUID is the user the command runs as (tests change it).
var currentUID = os.Getuid

// ownsDir refuses a directory that another user owns: the row cache is
// the owner's file, written beside the owner's snapshot, and a cache
// written by someone else would belong to them.
func ownsDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	uid, ok := fileOwner(st)
	if me := currentUID(); ok && me >= 0 && uid != me {
		return fmt.Errorf("%s belongs to user %d, not to you (user %d): only the data owner who registered the data rebuilds its row cache; run the command as that user", dir, uid, me)
	}
	return nil
}
