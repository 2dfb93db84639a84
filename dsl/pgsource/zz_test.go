package pgsource_test

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/privnotes/privnotes/internal/pgtest"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

func TestZZ(t *testing.T) {
	srv := startServer(t)
	d := sqlplan.PostgreSQL
	n := d.Num
	exprs := []string{
		d.Arith("*", d.Arith("*", "x", n(1e300)), n(1e300)),
		d.Arith("+", d.Arith("*", "x", n(1e305)), n(1e308)),
		d.Arith("/", n(1), d.Arith("-", "x", "x")),
	}
	for i, e := range exprs {
		for _, x := range []float64{0, 1, 50, 99, 180000} {
			if v := queryTextErr(t, srv, "(SELECT "+e+" FROM (SELECT CAST("+n(x)+" AS double precision) AS x) AS v)"); v != "" {
				t.Logf("expr %d x=%g: %s", i, x, v)
			}
		}
	}
}

func queryTextErr(t *testing.T, srv *server, expr string) string {
	defer func() { recover() }()
	_ = queryText
	ok := true
	func() {
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
	}()
	_ = ok
	return queryErr(t, srv, expr)
}

func queryErr(t *testing.T, srv *server, expr string) string {
	ctx := context.Background()
	cfg, _ := pgx.ParseConfig(srv.url("postgres"))
	cfg.Password = pgtest.SuperPassword
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v *float64
	if err := conn.QueryRow(ctx, "SELECT "+expr).Scan(&v); err != nil {
		return err.Error()
	}
	return ""
}
