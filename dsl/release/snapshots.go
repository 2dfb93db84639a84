package release

import (
	"context"
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

// SQLReader is what a snapshot reader implements to run private SQL
// (private_sql): the one statement dsl/sqlplan printed from the plan runs
// over Table(), the reader's own reference to the snapshot's rows (a
// read_parquet of the verified file). Query returns every row of the
// result (integers as int64, uint64 or *big.Int, a MAP as its [][2]any
// key, value pairs); its error must have a fixed text (the engine's message can
// quote values of the data), since it happens after the charge.
type SQLReader interface {
	Query(ctx context.Context, stmt string) ([][]any, error)
	Table() string
}

// SQLParser returns the engine's own syntax tree of a query as JSON
// (dsl/snapshot.ParseSQL: DuckDB's json_serialize_sql), without running it.
type SQLParser func(ctx context.Context, query string) ([]byte, error)

var sqlParser SQLParser

// RegisterSQLParser sets the parser private_sql plans with; like
// RegisterSnapshots, the binary that links the data engine registers it.
// A nil parser or a second registration is an error.
func RegisterSQLParser(parse SQLParser) error {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	if parse == nil {
		return errors.New("release: RegisterSQLParser with a nil parser")
	}
	if sqlParser != nil {
		return errors.New("release: RegisterSQLParser called twice")
	}
	sqlParser = parse
	return nil
}

func registeredSQLParser() SQLParser {
	snapshotsMu.Lock()
	defer snapshotsMu.Unlock()
	return sqlParser
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
	d := &Data{Schema: sc, Rows: src, Columns: rd.Source, close: rd.Close}
	if q, ok := rd.(SQLReader); ok {
		d.SQL = q
	}
	return d, nil
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
