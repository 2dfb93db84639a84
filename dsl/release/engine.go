package release

// Datasets in a live database table (dataset add --from postgres://…):
// private_sql runs its one printed statement in that engine, in the
// engine's dialect, and only aggregates come back. The engine's driver is
// linked in by the binary (dsl/pgsource, registered by cmd/privnotes), as
// the snapshot engine is, so that this package imports no driver.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// EngineSource is a dataset's table in a live database, opened for one
// call.
type EngineSource interface {
	SQLReader
	// Dialect is the engine's SQL dialect, which the plan is printed in.
	Dialect() sqlplan.Dialect
	// Check compares the table's catalog with the registration (cheap: no
	// row is read). Its error is shown before the charge, so its text
	// must say what to do from public facts only (a column's name and
	// types), never quote the engine.
	Check(ctx context.Context) error
	Close() error
}

// EngineOpener connects to the table ref names, registered with schema
// sc, with the password in the file secretPath (absent: none). Its errors are shown (before a charge,
// or as the reason of a load failure after one), so their text must be
// fixed, naming what to do.
type EngineOpener func(ctx context.Context, ref ledger.EngineRef, sc ledger.Schema, secretPath string) (EngineSource, error)

var (
	enginesMu sync.Mutex
	engines   = map[string]EngineOpener{}
)

// RegisterEngine sets how executors open datasets of kind (an
// EngineRef.Kind, such as "postgres"). A nil opener or a second
// registration of a kind is an error.
func RegisterEngine(kind string, open EngineOpener) error {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if open == nil {
		return errors.New("release: RegisterEngine with a nil opener")
	}
	if engines[kind] != nil {
		return fmt.Errorf("release: RegisterEngine(%q) called twice", kind)
	}
	engines[kind] = open
	return nil
}

func engineOpener(kind string) EngineOpener {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	return engines[kind]
}

// openEngine opens dataset name's engine source; ok is false for a
// dataset stored otherwise.
func openEngine(ctx context.Context, st *ledger.Store, name string, sc ledger.Schema) (src EngineSource, ok bool, err error) {
	ref, ok, err := st.Engine(name)
	if err != nil || !ok {
		return nil, ok, err
	}
	open := engineOpener(ref.Kind)
	if open == nil {
		return nil, true, Errorf(NameNotAvailable, "dataset %q lives in a %s database, and this build of privnotes has no driver for it", name, ref.Kind)
	}
	src, err = open(ctx, *ref, sc, st.EngineSecretPath(name))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, true, e
		}
		return nil, true, Errorf(NameDatasetError, "dataset %q: %v", name, err)
	}
	return src, true, nil
}

// checkEngine refuses, before the charge, a call on an engine dataset
// that cannot run there: a function that reads rows (only private_sql
// runs in the engine), user-level data without a declared row order (the
// bounding of each user's rows keeps their first rows in it), an engine
// that cannot be reached or refuses the credentials, and a table whose
// registered columns changed type. It opens the engine for the catalog
// check only, and reads no row.
func (env *Local) checkEngine(f *catalog.Func, src Ref) error {
	if env.Store == nil || src.Synthetic() || src.Public != nil {
		return nil
	}
	st, err := env.store()
	if err != nil {
		return err
	}
	name, sc := src.Name, src.Schema
	if src.Derived != nil {
		name, sc = src.Derived.ParentSchema.Name, src.Derived.ParentSchema
	}
	ref, ok, err := st.Engine(name)
	if err != nil || !ok {
		return err
	}
	if f != catalog.PrivateSQL {
		return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, where only %s runs (inside the database; only aggregates come back); %s needs the rows, so the data owner registers a snapshot of the table for it (privnotes dataset add NAME --sql ... or --from a file export); nothing was charged", f.Name, name, ref.Kind, FnSQL, f.Name)
	}
	if sc.Unit == "user" && ref.Order == "" {
		return Errorf(NameArgumentError, "%s: dataset %q is user-level and lives in a %s table registered without --order: bounding each user's rows needs a fixed row order, which a live table gives only by a column of unique values; the data owner registers it again with --order COLUMN, or a snapshot (nothing was charged)", f.Name, name, ref.Kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), engineCheckTimeout)
	defer cancel()
	es, _, err := openEngine(ctx, st, name, sc)
	if err != nil {
		return err
	}
	defer es.Close()
	if err := es.Check(ctx); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return Errorf(NameDatasetError, "%s: dataset %q: %v (nothing was charged)", f.Name, name, err)
	}
	return nil
}

// engineCheckTimeout bounds the plan's catalog check.
const engineCheckTimeout = 15 * time.Second

// engineData opens an engine dataset's data after the charge: SQL only,
// no row source (every function that reads rows is refused before).
func engineData(st *ledger.Store, src Ref) (*Data, bool, error) {
	es, ok, err := openEngine(context.Background(), st, src.Name, src.Schema)
	if err != nil || !ok {
		return nil, ok, err
	}
	return &Data{Schema: src.Schema, SQL: es, close: es.Close}, true, nil
}

// dialectOf is the dialect a reader's statement is printed in: the
// engine's, else DuckDB's (snapshots).
func dialectOf(r SQLReader) sqlplan.Dialect {
	if e, ok := r.(interface{ Dialect() sqlplan.Dialect }); ok {
		return e.Dialect()
	}
	return sqlplan.DuckDB
}
