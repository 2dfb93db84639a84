package release

import (
	"errors"
	"sync"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// SnapshotReader reads a dataset stored as a snapshot file (dsl/snapshot's
// Reader): a source over any of its columns, and Close.
type SnapshotReader interface {
	Source(columns []string) (rows.Source, error)
	Close() error
}

// SnapshotOpener opens a snapshot file whose registered hash is hash.
type SnapshotOpener func(path, hash string) (SnapshotReader, error)

var (
	snapshotsMu sync.Mutex
	snapshots   SnapshotOpener
)

// RegisterSnapshots sets how executors open snapshot files: the data
// engine (DuckDB, cgo) is linked in by the binary that wants it, as a
// database/sql driver is, so that this package and its callers build
// without it. A nil opener or a second registration is an error (a build
// that links two data engines): the binary's init decides what to do.
func RegisterSnapshots(open SnapshotOpener) error {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	if open == nil {
		return errors.New("release: RegisterSnapshots with a nil opener")
	}
	if snapshots != nil {
		return errors.New("release: RegisterSnapshots called twice")
	}
	snapshots = open
	return nil
}

func snapshotOpener() SnapshotOpener {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	return snapshots
}

// errNoEngine is the load failure of a snapshot dataset in a build without
// the data engine.
var errNoEngine = Errorf(NameLedgerError, "this dataset is stored as a snapshot file, and this build of privnotes has no data engine to read it")

// snapshotData opens a snapshot dataset's data.
func snapshotData(sc ledger.Schema, path, hash string) (*Data, error) {
	open := snapshotOpener()
	if open == nil {
		return nil, errNoEngine
	}
	rd, err := open(path, hash)
	if err != nil {
		return nil, err
	}
	features := sc.Columns
	if len(features) == 0 {
		// A dataset of categorical columns only: its rows (for counts)
		// come with the first of them.
		cats := CategoricalColumns(sc)
		features = cats[:min(1, len(cats))]
	}
	src, err := rd.Source(features)
	if err != nil {
		rd.Close()
		return nil, err
	}
	return &Data{Schema: sc, Rows: src, Columns: rd.Source, close: rd.Close}, nil
}

// Close releases what the data hold open (a snapshot reader).
func (d *Data) Close() error {
	if d == nil || d.close == nil {
		return nil
	}
	err := d.close()
	d.close = nil
	return err
}
