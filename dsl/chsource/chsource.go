// Package chsource runs private SQL on a dataset that lives in a
// ClickHouse table, local or Distributed over shards (privnotes dataset
// add NAME --from clickhouse://USER@HOST:PORT/DB --table DB.TABLE): it
// reads the table's catalog (system.columns) at registration and before
// every call, and after the charge runs the one statement dsl/sqlplan
// printed in its ClickHouse dialect. Only the statement's aggregates come
// back; no row ever leaves the server.
//
// It speaks ClickHouse's HTTP interface with net/http (the maintained Go
// driver speaks a native protocol newer than Debian's 18.16 server), with
// the setting readonly=1 on every request, so that nothing privnotes
// sends can change the server. Its errors have fixed texts that name what
// to do: the server's own messages can quote values of the data and are
// never passed on. cmd/privnotes registers it with release.RegisterEngine.
package chsource

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// Kind is the EngineRef.Kind of a ClickHouse table.
const Kind = "clickhouse"

// Register links the source into the execution core.
func Register() error { return release.RegisterEngine(Kind, Open) }

// IsURL reports whether a --from value names a ClickHouse server.
func IsURL(s string) bool { return strings.HasPrefix(s, "clickhouse://") }

// The classes of a failed request; the server's message is never shown.
var (
	ErrUnreachable = errors.New("the ClickHouse server cannot be reached (is it running, and is the URL's host and HTTP port right?)")
	ErrCredentials = errors.New("the ClickHouse server refused the registered user or password (the owner checks the user's password and its networks, or registers again with the new password)")
	ErrURL         = errors.New("the connection URL cannot be parsed (clickhouse://USER@HOST:PORT/DATABASE, PORT the HTTP port)")
	errStatement   = errors.New("chsource: the statement failed")
)

// requestTimeout bounds one request: the plan's check must not hang a
// cell on an unreachable server, and a statement is one aggregate pass.
const requestTimeout = 10 * time.Minute

// maxResult bounds what a statement may return: its rows are the
// groups' aggregates.
const maxResult = 256 << 20

// client is one server's HTTP endpoint with a user and password.
type client struct {
	endpoint, user, password, database string
	http                               *http.Client
}

// newClient parses clickhouse://USER@HOST:PORT/DATABASE (no password in
// the URL: it would be stored with it).
func newClient(raw, password string) (*client, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "clickhouse" || u.Host == "" || u.Port() == "" {
		return nil, ErrURL
	}
	if _, has := u.User.Password(); has || u.RawQuery != "" {
		return nil, ErrURL
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, ErrURL
	}
	user := "default"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	return &client{
		endpoint: "http://" + u.Host + "/", user: user, password: password, database: db,
		http: &http.Client{Timeout: requestTimeout},
	}, nil
}

// query runs stmt read-only and returns its result in the format
// TabSeparatedWithNamesAndTypes, parsed (names, types, rows of fields).
// A failed request is classified by its status: 401 or 403 for the
// credentials, any other for the statement (whose text is dropped).
func (c *client) query(ctx context.Context, stmt string) (types []string, rows [][]string, err error) {
	q := url.Values{"readonly": {"1"}, "database": {c.database}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"?"+q.Encode(),
		strings.NewReader(stmt+" FORMAT TabSeparatedWithNamesAndTypes"))
	if err != nil {
		return nil, nil, ErrURL
	}
	req.SetBasicAuth(c.user, c.password)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, ErrUnreachable
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, nil, ErrCredentials
	case resp.StatusCode != http.StatusOK:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil, nil, errStatement
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxResult))
	sc.Buffer(make([]byte, 64<<10), maxResult)
	var lines [][]string
	for sc.Scan() {
		lines = append(lines, strings.Split(sc.Text(), "\t"))
	}
	if sc.Err() != nil || len(lines) < 2 || len(lines[0]) != len(lines[1]) {
		// A server error after the header (mid-stream) leaves a line
		// of another shape, caught here or by the row's conversion.
		return nil, nil, errStatement
	}
	for _, l := range lines[2:] {
		if len(l) != len(lines[1]) {
			return nil, nil, errStatement
		}
	}
	return lines[1], lines[2:], nil
}

// Column is a column of a table's catalog: its name and its ClickHouse
// type as system.columns names it.
type Column struct{ Name, Type string }

// SplitTable splits DB.TABLE (a bare TABLE is in the URL's database).
func SplitTable(table, database string) (db, name string, err error) {
	parts := strings.Split(table, ".")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return database, parts[0], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("--table %q: give DATABASE.TABLE (names without dots)", table)
}

// errCatalog is a catalog that cannot be read.
var errCatalog = errors.New("the ClickHouse catalog (system.columns) cannot be read")

// catalog reads table's columns from system.columns, in their order; it
// reads no row of the table. An absent table is an error.
func catalog(ctx context.Context, c *client, table string) ([]Column, error) {
	db, name, err := SplitTable(table, c.database)
	if err != nil {
		return nil, err
	}
	d := sqlplan.ClickHouse
	_, rows, err := c.query(ctx, "SELECT name, type FROM system.columns WHERE database = "+d.Str(db)+" AND table = "+d.Str(name))
	if errors.Is(err, errStatement) {
		return nil, errCatalog
	}
	if err != nil {
		return nil, err
	}
	var cols []Column
	for _, r := range rows {
		if len(r) != 2 {
			return nil, errCatalog
		}
		n, err1 := unescape(r[0])
		t, err2 := unescape(r[1])
		if err1 != nil || err2 != nil {
			return nil, errCatalog
		}
		cols = append(cols, Column{Name: n, Type: t})
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("the table %s.%s does not exist, or the registered user may not read it", db, name)
	}
	return cols, nil
}

// base is a type without its Nullable wrapper.
func base(typ string) string {
	if strings.HasPrefix(typ, "Nullable(") && strings.HasSuffix(typ, ")") {
		return typ[len("Nullable(") : len(typ)-1]
	}
	return typ
}

// Numeric reports whether a catalog type is a number the dialect reads as
// Float64 (toFloat64 cannot fail on any of them).
func Numeric(typ string) bool {
	switch t := base(typ); t {
	case "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64":
		return true
	default:
		return strings.HasPrefix(t, "Decimal")
	}
}

// OrderType reports whether a catalog type can be a row order (--order):
// integers, Date or DateTime, not Nullable, whose comparisons are exact
// and total (a float's NaN and a NULL would need rules of their own).
func OrderType(typ string) bool {
	switch typ {
	case "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Date", "DateTime":
		return true
	}
	return false
}

// Text reports whether a catalog type is text (a categorical column's).
func Text(typ string) bool { return base(typ) == "String" }

// Source is one call's session with a registered table.
type Source struct {
	c   *client
	ref ledger.EngineRef
	sc  ledger.Schema
}

var _ release.EngineSource = (*Source)(nil)

// Open prepares requests to ref's server with the password in secretPath
// (an absent file: no password). It sends nothing: Check is the first
// request.
func Open(ctx context.Context, ref ledger.EngineRef, sc ledger.Schema, secretPath string) (release.EngineSource, error) {
	if ref.Kind != Kind {
		return nil, fmt.Errorf("chsource: a %s dataset", ref.Kind)
	}
	password, err := release.EngineSecret(secretPath)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ref.URL, password)
	if err != nil {
		return nil, err
	}
	return &Source{c: c, ref: ref, sc: sc}, nil
}

// Dialect implements release.EngineSource: ClickHouse's, over the
// projection Table of the registered table, so that an aggregate
// statement is written over the table itself (sqlplan.ClickHouseOver)
// and a Distributed table's shards compute its partial aggregates.
func (s *Source) Dialect() sqlplan.Dialect {
	table, cols := s.projection()
	return sqlplan.ClickHouseOver(s.Table(), table, cols)
}

// MaxStatementBytes is the longest statement the server parses: its
// default max_query_size (256 KiB), which a readonly=1 request cannot
// raise, less a margin for what the client appends. The execution core
// refuses a longer statement before the charge.
func (s *Source) MaxStatementBytes() int { return 256<<10 - 1<<10 }

// projection is the registered table (quoted) and each registered
// column's value as a statement reads it: the column as it is, a
// categorical value outside its declared domain being NULL (a
// snapshot's "other" bucket).
func (s *Source) projection() (table string, cols map[string]string) {
	db, name, _ := SplitTable(s.ref.Table, s.c.database)
	d := sqlplan.ClickHouse
	cols = map[string]string{}
	for _, c := range s.sc.Columns {
		cols[c] = d.Ident(c)
	}
	for _, c := range release.CategoricalColumns(s.sc) {
		cols[c] = release.InDomain(d, s.sc, c)
	}
	if s.sc.UserColumn != "" {
		cols[s.sc.UserColumn] = d.Ident(s.sc.UserColumn)
	}
	return d.Ident(db) + "." + d.Ident(name), cols
}

// Table is the registered table as the statement reads it: a subquery of
// the registered columns only, as a snapshot holds them (projection).
// ClickHouse would read an alias equal to a column's name as a cycle, so
// the inner query names its columns __pn_cI and the outer one gives them
// back their names.
func (s *Source) Table() string {
	table, cols := s.projection()
	d := sqlplan.ClickHouse
	var inner, outer []string
	col := func(expr, as string) {
		tmp := d.Ident("__pn_c" + strconv.Itoa(len(inner)))
		inner = append(inner, expr+" AS "+tmp)
		outer = append(outer, tmp+" AS "+d.Ident(as))
	}
	for _, c := range s.sc.Columns {
		col(d.Ident(c), c)
	}
	for _, c := range release.CategoricalColumns(s.sc) {
		col(cols[c], c)
	}
	if s.sc.UserColumn != "" {
		col(d.Ident(s.sc.UserColumn), s.sc.UserColumn)
	}
	if s.ref.Order != "" {
		// The row order of a bounded plan (sqlplan.RowColumn).
		col(d.Ident(s.ref.Order), sqlplan.RowColumn)
	}
	return "(SELECT " + strings.Join(outer, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + table + "))"
}

// Check compares the catalog with the registration: every registered
// column is still there with its registered type.
func (s *Source) Check(ctx context.Context) error {
	cols, err := catalog(ctx, s.c, s.ref.Table)
	if err != nil {
		return err
	}
	now := make(map[string]string, len(cols))
	for _, c := range cols {
		now[c.Name] = c.Type
	}
	return release.CheckColumns(s.ref, now)
}

// Query runs stmt (read-only) and returns its rows: counts as int64 (or
// uint64), exact Decimal sums as *big.Int, keys as float64 or string
// (nil for NULL), a histogram (the dialect's Int64 array: the bins, then
// their counts) as bin, count pairs.
func (s *Source) Query(ctx context.Context, stmt string) ([][]any, error) {
	types, rows, err := s.c.query(ctx, stmt)
	if err != nil {
		return nil, errStatement
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = make([]any, len(r))
		for j, f := range r {
			if out[i][j], err = convert(types[j], f); err != nil {
				return nil, errStatement
			}
		}
	}
	return out, nil
}

// convert reads one field of type typ (TabSeparated text).
func convert(typ, f string) (any, error) {
	if t := base(typ); t != typ {
		if f == `\N` {
			return nil, nil
		}
		typ = t
	}
	switch {
	case typ == "String":
		return unescape(f)
	case typ == "Float64" || typ == "Float32":
		return strconv.ParseFloat(f, 64)
	case strings.HasPrefix(typ, "UInt"):
		u, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, err
		}
		if u <= 1<<63-1 {
			return int64(u), nil
		}
		return u, nil
	case strings.HasPrefix(typ, "Int"):
		return strconv.ParseInt(f, 10, 64)
	case strings.HasPrefix(typ, "Decimal") && strings.HasSuffix(typ, ", 0)"):
		x, ok := new(big.Int).SetString(f, 10)
		if !ok {
			return nil, errStatement
		}
		return x, nil
	case typ == "Array(Int64)":
		return pairs(f)
	}
	return nil, errStatement
}

// pairs reads the dialect's histogram array, [b1,…,bk,c1,…,ck]: the bins
// then their counts (nil for a group without values).
func pairs(f string) (any, error) {
	if !strings.HasPrefix(f, "[") || !strings.HasSuffix(f, "]") {
		return nil, errStatement
	}
	body := f[1 : len(f)-1]
	if body == "" {
		return nil, nil
	}
	parts := strings.Split(body, ",")
	if len(parts)%2 != 0 {
		return nil, errStatement
	}
	k := len(parts) / 2
	out := make([][2]any, k)
	for i := range k {
		b, err1 := strconv.ParseInt(parts[i], 10, 64)
		c, err2 := strconv.ParseInt(parts[k+i], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, errStatement
		}
		out[i] = [2]any{b, c}
	}
	return out, nil
}

// unescape reads a TabSeparated string field: a backslash escapes the
// next byte (\t, \n, \r, \b, \f, \0, or the byte itself).
func unescape(f string) (string, error) {
	if !strings.Contains(f, `\`) {
		return f, nil
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '\\' {
			b.WriteByte(f[i])
			continue
		}
		if i++; i == len(f) {
			return "", errStatement
		}
		switch f[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '0':
			b.WriteByte(0)
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String(), nil
}

// Close releases the idle connections.
func (s *Source) Close() error {
	s.c.http.CloseIdleConnections()
	return nil
}

// Describe reads table's catalog and says what a registration of it
// holds: numeric columns, the text columns given categories, and the user
// column ("" for row-level data), with their types, and the row order
// column ("" for none; OrderType); skipped lists the other columns (name
// and type), which are not registered.
//
// ClickHouse declares no unique columns, so the order may have ties:
// the bounded statement breaks them by the rows' values
// (sqlplan.ClickHouse's BoundedRows), which keeps what a unit keeps a
// function of its own rows.
func Describe(ctx context.Context, rawURL, password, table string, categories map[string][]string, user, order string) (ref *ledger.EngineRef, cols ledger.EngineColumns, skipped []string, err error) {
	c, err := newClient(rawURL, password)
	if err != nil {
		return nil, cols, nil, err
	}
	if _, _, err := SplitTable(table, c.database); err != nil {
		return nil, cols, nil, err
	}
	cat, err := catalog(ctx, c, table)
	if err != nil {
		return nil, cols, nil, err
	}
	typeOf := make(map[string]string, len(cat))
	for _, col := range cat {
		typeOf[col.Name] = col.Type
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
	ref = &ledger.EngineRef{Kind: Kind, URL: rawURL, Table: table, Types: map[string]string{}, Order: order}
	if order != "" {
		typ, ok := typeOf[order]
		if !ok {
			return nil, cols, nil, fmt.Errorf("--order %s: the table has no column %q", order, order)
		}
		if !OrderType(typ) {
			return nil, cols, nil, fmt.Errorf("--order %s: the column is %s; the row order is a column of integers, Date or DateTime without NULL", order, typ)
		}
		ref.Types[order] = typ
	}
	if user != "" {
		typ, ok := typeOf[user]
		if !ok {
			return nil, cols, nil, fmt.Errorf("--unit user:%s: the table has no column %q", user, user)
		}
		cols.User, ref.Types[user] = user, typ
	}
	for _, col := range cat {
		switch {
		case col.Name == user:
		case categories[col.Name] != nil:
			if cols.Categorical == nil {
				cols.Categorical = map[string][]string{}
			}
			cols.Categorical[col.Name], ref.Types[col.Name] = categories[col.Name], col.Type
		case Numeric(col.Type):
			cols.Numeric, ref.Types[col.Name] = append(cols.Numeric, col.Name), col.Type
		default:
			skipped = append(skipped, col.Name+" ("+col.Type+")")
		}
	}
	return ref, cols, skipped, nil
}
