// Package pgsource runs private SQL on a dataset that lives in a
// PostgreSQL table (privnotes dataset add NAME --from postgres://… --table
// SCHEMA.TABLE): it reads the table's catalog at registration and before
// every call, and after the charge runs the one statement dsl/sqlplan
// printed in its PostgreSQL dialect, in a read-only transaction. Only the
// statement's aggregates come back; no row ever leaves the server. Both
// take a session from the dataset's own pool (pool.go), kept warm between
// calls.
//
// Its errors have fixed texts that name what to do: the server's own
// messages can quote values of the data and are never passed on.
// cmd/privnotes registers it with release.RegisterEngine, so that the
// execution core imports no driver.
package pgsource

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// Kind is the EngineRef.Kind of a PostgreSQL table.
const Kind = "postgres"

// Register links the driver into the execution core.
func Register() error { return release.RegisterEngine(Kind, Open) }

// IsURL reports whether a --from value names a PostgreSQL server.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// connectTimeout bounds a connection attempt: the plan's check must not
// hang a cell on an unreachable server.
const connectTimeout = 10 * time.Second

// connConfig sets a session's password ("" for the URL's own or none)
// and its parameters, so that the printed statements
// mean what the dialect says: standard strings, read-only transactions.
func connConfig(cfg *pgx.ConnConfig, password string) {
	if password != "" {
		cfg.Password = password
	}
	cfg.ConnectTimeout = connectTimeout
	cfg.RuntimeParams["application_name"] = "privnotes"
	cfg.RuntimeParams["standard_conforming_strings"] = "on"
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
}

// errURL is an unparsable --from URL.
var errURL = errors.New("the connection URL cannot be parsed (postgres://USER@HOST:PORT/DATABASE)")

// connect opens one session to url with password, for a registration
// (Describe), which a pool would outlive.
func connect(ctx context.Context, url, password string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errURL
	}
	connConfig(cfg, password)
	// No fallback to other hosts or TLS modes with their own errors: the
	// first failure is the one classified.
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(err)
	}
	return conn, nil
}

// ErrUnreachable and ErrCredentials classify a failed connection.
var (
	ErrUnreachable = errors.New("the PostgreSQL server cannot be reached (is it running, and is the URL's host and port right?)")
	ErrCredentials = errors.New("the PostgreSQL server refused the registered user or password (the owner checks the user's password and its right to connect, or registers again with the new password)")
	ErrConnect     = errors.New("the PostgreSQL server refused the connection (the owner checks the server's log and pg_hba.conf)")
)

// connectError keeps only the class of a connection failure.
func connectError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return ErrCredentials
		case "3D000": // invalid_catalog_name
			return errors.New("the PostgreSQL server has no database of the registered name")
		}
		return ErrConnect
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrNotExist) {
		return ErrUnreachable
	}
	// pgconn wraps dial failures in its own type; what is left is a
	// server that answered without letting us in, or did not answer.
	if strings.Contains(err.Error(), "dial") || strings.Contains(err.Error(), "connect") {
		return ErrUnreachable
	}
	return ErrConnect
}

// Column is a column of a table's catalog: its name and its PostgreSQL
// type as information_schema.columns names it.
type Column struct{ Name, Type string }

// SplitTable splits SCHEMA.TABLE (a bare TABLE is in public).
func SplitTable(table string) (schema, name string, err error) {
	parts := strings.Split(table, ".")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return "public", parts[0], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("--table %q: give SCHEMA.TABLE (names without dots)", table)
}

// catalog reads table's columns from the catalog, in their order; it
// reads no row. An absent table (or one the user may not see) is an error.
func catalog(ctx context.Context, conn *pgx.Conn, table string) ([]Column, error) {
	schema, name, err := SplitTable(table)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, name)
	if err != nil {
		return nil, errors.New("the PostgreSQL catalog (information_schema.columns) cannot be read")
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		if err := rows.Scan(&c.Name, &c.Type); err != nil {
			return nil, errors.New("the PostgreSQL catalog (information_schema.columns) cannot be read")
		}
		cols = append(cols, c)
	}
	if rows.Err() != nil {
		return nil, errors.New("the PostgreSQL catalog (information_schema.columns) cannot be read")
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("the table %s.%s does not exist, or the registered user may not read it", schema, name)
	}
	return cols, nil
}

// Numeric reports whether a catalog type is a number the dialect reads as
// double precision.
func Numeric(typ string) bool {
	switch typ {
	case "smallint", "integer", "bigint", "real", "double precision", "numeric":
		return true
	}
	return false
}

// Text reports whether a catalog type is text (a categorical column's).
func Text(typ string) bool {
	switch typ {
	case "text", "character varying", "character":
		return true
	}
	return false
}

// Source is one call's session with a registered table: a connection
// of its dataset's pool (pool.go), held until Close.
type Source struct {
	conn  *pgxpool.Conn
	lease *lease
	ref   ledger.EngineRef
	sc    ledger.Schema
}

var _ release.EngineSource = (*Source)(nil)

// Open takes a session to ref's server, with the password in secretPath
// (an absent file: no password), from the dataset's pool: the catalog
// check before the charge and the run after it share one warm session
// instead of connecting and authenticating twice. The session is pinged
// first, so that a server that went down since is "cannot be reached"
// here, as a new connection's failure is, and not a failed statement.
func Open(ctx context.Context, ref ledger.EngineRef, sc ledger.Schema, secretPath string) (release.EngineSource, error) {
	if ref.Kind != Kind {
		return nil, fmt.Errorf("pgsource: a %s dataset", ref.Kind)
	}
	password, err := release.EngineSecret(secretPath)
	if err != nil {
		return nil, err
	}
	l, err := pools.take(secretPath, ref.URL, password)
	if err != nil {
		return nil, err
	}
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		l.done()
		return nil, connectError(err)
	}
	return &Source{conn: conn, lease: l, ref: ref, sc: sc}, nil
}

// Dialect implements release.EngineSource.
func (s *Source) Dialect() sqlplan.Dialect { return sqlplan.PostgreSQL }

// Table is the registered table as the statement reads it: a subquery of
// the registered columns only, as a snapshot holds them. A categorical
// value outside its declared domain is NULL (a snapshot's "other"
// bucket), and a numeric value is a double precision, NULL beyond the
// doubles' range (a numeric column can hold 1e400, whose cast would be an
// error on the data).
func (s *Source) Table() string {
	schema, name, _ := SplitTable(s.ref.Table)
	d := sqlplan.PostgreSQL
	var cols []string
	for _, c := range s.sc.Columns {
		q := d.Ident(c)
		if s.ref.Types[c] == "numeric" {
			cols = append(cols, "CASE WHEN abs("+q+") < CAST('1e308' AS numeric) THEN CAST("+q+" AS double precision) END AS "+q)
			continue
		}
		cols = append(cols, q)
	}
	for _, c := range release.CategoricalColumns(s.sc) {
		cols = append(cols, release.InDomain(d, s.sc, c)+" AS "+d.Ident(c))
	}
	if s.sc.UserColumn != "" {
		cols = append(cols, d.Ident(s.sc.UserColumn))
	}
	if s.ref.Order != "" {
		// The row order of a bounded plan (sqlplan.RowColumn).
		cols = append(cols, d.Ident(s.ref.Order)+" AS "+d.Ident(sqlplan.RowColumn))
	}
	return "(SELECT " + strings.Join(cols, ", ") + " FROM " + d.Ident(schema) + "." + d.Ident(name) + ") AS " + d.Ident("__pn_table")
}

// Check compares the catalog with the registration: every registered
// column is still there with its registered type.
func (s *Source) Check(ctx context.Context) error {
	cols, err := catalog(ctx, s.conn.Conn(), s.ref.Table)
	if err != nil {
		return err
	}
	now := make(map[string]string, len(cols))
	for _, c := range cols {
		now[c.Name] = c.Type
	}
	if s.ref.Order != "" {
		if err := uniqueOrder(ctx, s.conn.Conn(), s.ref.Table, s.ref.Order); err != nil {
			return err
		}
	}
	return release.CheckColumns(s.ref, now)
}

// errStatement is every failure of the statement: its message is fixed,
// since the server's could quote the data.
var errStatement = errors.New("pgsource: the statement failed")

// Query runs stmt in a read-only transaction and returns its rows: counts
// as int64, exact sums as *big.Int, a histogram (the dialect's bigint
// array: the bins, then their counts) as bin, count pairs.
func (s *Source) Query(ctx context.Context, stmt string) ([][]any, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, errStatement
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, stmt, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, errStatement
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, errStatement
		}
		for i, v := range vals {
			if vals[i], err = convert(v); err != nil {
				return nil, errStatement
			}
		}
		out = append(out, vals)
	}
	if rows.Err() != nil {
		return nil, errStatement
	}
	return out, nil
}

// convert maps a value of the statement's result to what the execution
// core reads.
func convert(v any) (any, error) {
	switch x := v.(type) {
	case pgtype.Numeric:
		if !x.Valid {
			return nil, nil
		}
		return exactInt(x)
	case []any:
		return pairs(x)
	case int32:
		return int64(x), nil
	}
	return v, nil
}

// exactInt is an integral numeric as a *big.Int (a sum of integers is
// one; anything else is an error).
func exactInt(n pgtype.Numeric) (*big.Int, error) {
	if !n.Valid || n.NaN || n.InfinityModifier != pgtype.Finite || n.Int == nil {
		return nil, errStatement
	}
	x := new(big.Int).Set(n.Int)
	if n.Exp == 0 {
		return x, nil
	}
	ten := big.NewInt(10)
	if n.Exp > 0 {
		return x.Mul(x, new(big.Int).Exp(ten, big.NewInt(int64(n.Exp)), nil)), nil
	}
	d := new(big.Int).Exp(ten, big.NewInt(int64(-n.Exp)), nil)
	q, r := new(big.Int).QuoRem(x, d, new(big.Int))
	if r.Sign() != 0 {
		return nil, errStatement
	}
	return q, nil
}

// pairs reads the dialect's histogram array: 2k integers, the bins then
// their counts.
func pairs(a []any) (any, error) {
	if len(a)%2 != 0 {
		return nil, errStatement
	}
	k := len(a) / 2
	out := make([][2]any, k)
	for i := range k {
		b, ok1 := a[i].(int64)
		c, ok2 := a[k+i].(int64)
		if !ok1 || !ok2 {
			return nil, errStatement
		}
		out[i] = [2]any{b, c}
	}
	return out, nil
}

// Close gives the session back to its pool (a broken one, or one left in
// a transaction, is closed by the pool instead).
func (s *Source) Close() error {
	if s.lease == nil {
		return nil // closed already: the lease is counted once
	}
	s.conn.Release()
	s.lease.done()
	s.lease = nil
	return nil
}

// uniqueOrder checks that column order of table has a unique index of
// its own and no NULL (NOT NULL): its values order the rows without ties.
func uniqueOrder(ctx context.Context, conn *pgx.Conn, table, order string) error {
	schema, name, err := SplitTable(table)
	if err != nil {
		return err
	}
	var ok bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
		WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = $3 AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attnotnull)`, schema, name, order).Scan(&ok)
	if err != nil {
		return errors.New("the PostgreSQL catalog (pg_index) cannot be read")
	}
	if !ok {
		return fmt.Errorf("--order %s: the column must be NOT NULL with a unique index of its own (a primary key, say), so that its values order the rows without ties", order)
	}
	return nil
}

// Describe reads table's catalog and says what a registration of it
// holds: numeric columns, the text columns given categories, and the user
// column ("" for row-level data), with their types, and the row order
// column ("" for none), which must be unique and NOT NULL; skipped lists
// the other columns (name and type), which are not registered.
func Describe(ctx context.Context, url, password, table string, categories map[string][]string, user, order string) (ref *ledger.EngineRef, cols ledger.EngineColumns, skipped []string, err error) {
	if _, _, err := SplitTable(table); err != nil {
		return nil, cols, nil, err
	}
	conn, err := connect(ctx, url, password)
	if err != nil {
		return nil, cols, nil, err
	}
	defer conn.Close(context.Background())
	cat, err := catalog(ctx, conn, table)
	if err != nil {
		return nil, cols, nil, err
	}
	if order != "" {
		if err := uniqueOrder(ctx, conn, table, order); err != nil {
			return nil, cols, nil, err
		}
	}
	typeOf := make(map[string]string, len(cat))
	for _, c := range cat {
		typeOf[c.Name] = c.Type
	}
	for name := range categories {
		typ, ok := typeOf[name]
		if !ok {
			return nil, cols, nil, fmt.Errorf("--categories %s=…: the table has no column %q", name, name)
		}
		if !Text(typ) {
			return nil, cols, nil, fmt.Errorf("--categories %s=…: the column is %s; categorical columns of a live table are text", name, typ)
		}
	}
	ref = &ledger.EngineRef{Kind: Kind, URL: url, Table: table, Types: map[string]string{}, Order: order}
	if order != "" {
		ref.Types[order] = typeOf[order]
	}
	if user != "" {
		typ, ok := typeOf[user]
		if !ok {
			return nil, cols, nil, fmt.Errorf("--unit user:%s: the table has no column %q", user, user)
		}
		cols.User, ref.Types[user] = user, typ
	}
	for _, c := range cat {
		switch {
		case c.Name == user:
		case categories[c.Name] != nil:
			if cols.Categorical == nil {
				cols.Categorical = map[string][]string{}
			}
			cols.Categorical[c.Name], ref.Types[c.Name] = categories[c.Name], c.Type
		case Numeric(c.Type):
			cols.Numeric, ref.Types[c.Name] = append(cols.Numeric, c.Name), c.Type
		default:
			skipped = append(skipped, c.Name+" ("+c.Type+")")
		}
	}
	return ref, cols, skipped, nil
}
