package main

// dataset add NAME --from postgres://USER@HOST:PORT/DB --table SCHEMA.TABLE
// (or --from clickhouse://USER@HOST:PORT/DB --table DB.TABLE): a dataset
// that stays in the owner's PostgreSQL or ClickHouse table. Registration
// reads the table's catalog only; private_sql runs in the server
// (dsl/pgsource, dsl/chsource). One flag set serves both engines: the
// URL's scheme chooses the engine.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/chsource"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func init() {
	if err := pgsource.Register(); err != nil {
		panic(err) // a second PostgreSQL driver linked in: a build error
	}
	if err := chsource.Register(); err != nil {
		panic(err)
	}
}

// liveEngine is what registration needs of one engine.
type liveEngine struct {
	name, form, table string // "PostgreSQL", its URL's form, its table's form
	describe          func(ctx context.Context, url, password, table string, categories map[string][]string, user, order string) (*ledger.EngineRef, ledger.EngineColumns, []string, error)
}

// liveEngineOf is the engine that a --from URL names by its scheme (nil
// for none).
func liveEngineOf(from string) *liveEngine {
	switch {
	case pgsource.IsURL(from):
		return &liveEngine{"PostgreSQL", "postgres://USER@HOST:PORT/DATABASE", "SCHEMA.TABLE", pgsource.Describe}
	case chsource.IsURL(from):
		return &liveEngine{"ClickHouse", "clickhouse://USER@HOST:HTTP_PORT/DATABASE", "DATABASE.TABLE", chsource.Describe}
	}
	return nil
}

// isLiveURL reports whether --from names a live table's server.
func isLiveURL(from string) bool { return liveEngineOf(from) != nil }

// datasetAddLive registers a live PostgreSQL or ClickHouse table.
func datasetAddLive(name string, f *addFlags, bounds map[string][2]float64, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "privnotes dataset add: %v\n", err)
		return code
	}
	eng := liveEngineOf(f.from)
	switch {
	case eng == nil:
		return fail(2, errors.New("--table, --password-file and --password-env are for --from postgres://USER@HOST:PORT/DATABASE or clickhouse://USER@HOST:HTTP_PORT/DATABASE"))
	case f.table == "":
		return fail(2, fmt.Errorf("--from %s: give the table with --table %s", eng.form, eng.table))
	case f.order != "" && !strings.HasPrefix(f.unit, "user:"):
		return fail(2, errors.New("--order orders each user's rows for user-level data (--unit user:COLUMN); row-level data need none"))
	case f.passwordFile != "" && f.passwordEnv != "":
		return fail(2, errors.New("give the password with one of --password-file or --password-env"))
	case f.label != "":
		return fail(2, fmt.Errorf("--label: a live table registers numeric and categorical columns for %s; register a snapshot (--sql) for regression", catalog.PrivateSQL.Name))
	case f.csv != "" || f.sql != "" || f.header != "auto" || f.columns != "" || f.badRows != "reject" || f.center != "none" || f.mean != "":
		return fail(2, errors.New("--csv, --sql, --header, --columns, --bad-rows, --center and --mean are for files; a live table is registered as it is"))
	}
	u, err := url.Parse(f.from)
	if err != nil {
		return fail(2, fmt.Errorf("--from: the URL cannot be parsed (%s)", eng.form))
	}
	if _, has := u.User.Password(); has || u.Query().Has("password") {
		// A password in the URL would be stored with it, and shown by
		// dataset show --owner: it goes to the private secrets file only.
		return fail(2, errors.New("--from: leave the password out of the URL; give it with --password-file FILE or --password-env VARIABLE"))
	}
	password := ""
	switch {
	case f.passwordFile != "":
		b, err := os.ReadFile(f.passwordFile)
		if err != nil {
			return fail(1, fmt.Errorf("--password-file: %v", err))
		}
		password = strings.TrimRight(string(b), "\r\n")
	case f.passwordEnv != "":
		v, ok := os.LookupEnv(f.passwordEnv)
		if !ok {
			return fail(2, fmt.Errorf("--password-env %s: the variable is not set", f.passwordEnv))
		}
		password = v
	}
	cats, err := parseCategories(f.categories)
	if err != nil {
		return fail(2, err)
	}
	user := ""
	switch {
	case f.unit == "row":
	case strings.HasPrefix(f.unit, "user:") && len(f.unit) > len("user:"):
		user = strings.TrimPrefix(f.unit, "user:")
	default:
		return fail(2, fmt.Errorf("--unit %q: use row or user:COLUMN", f.unit))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref, ec, skipped, err := eng.describe(ctx, f.from, password, f.table, cats, user, f.order)
	if err != nil {
		return fail(1, fmt.Errorf("--from %s --table %s: %v", f.from, f.table, err))
	}
	mode, _ := accounting.ParseMode(f.accountant)
	nb, _ := accounting.ParseNeighbour(f.neighbour)
	st, err := openForRegistration(f.state, name)
	if err != nil {
		return fail(1, err)
	}
	defer st.Close()
	owner, err := st.Register(ctx, ledger.Registration{
		Name: name, Budget: accounting.Budget{Eps: f.eps, Delta: f.delta}, Accountant: mode,
		Neighbour: nb, Clip: f.clip, Bounds: bounds, Source: ref.Kind + " " + ref.URL + " table " + ref.Table, PublicN: f.publicN,
		Engine: ref, EngineColumns: ec, EngineSecret: password,
	})
	if err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "registered dataset %q in %s (a live %s table: %s runs in the server; no row was read)\n", name, st.Dir(), eng.name, catalog.PrivateSQL.Name)
	writeOwnerInfo(stdout, owner, nil)
	if len(skipped) > 0 {
		sort.Strings(skipped)
		fmt.Fprintf(stdout, "not registered (neither numeric nor text with --categories): %s\n", strings.Join(skipped, ", "))
	}
	if password != "" {
		fmt.Fprintf(stdout, "the password is kept in %s (mode 0600), never in the registry\n", st.EngineSecretPath(name))
	}
	return 0
}

// liveTable reports whether a registration is a live table's, whose
// registration read no row (no count, no data hash).
func liveTable(info *ledger.OwnerInfo) bool {
	return info.DataHash == "" && (strings.HasPrefix(info.Source, pgsource.Kind+" ") || strings.HasPrefix(info.Source, chsource.Kind+" "))
}
