package release

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// private_pca's second moment on a live table is checked against the
// server's statement limit before the charge: a table of a few columns
// passes ClickHouse's, a few dozen columns do not (the statement grows
// with d(d+1)/2), and thousands are refused from the count of sums,
// without printing gigabytes; an engine without a limit checks nothing.
func TestEngineMomentsLength(t *testing.T) {
	cols := func(d int) sqlplan.Moments {
		m := sqlplan.Moments{Clip: 1}
		for j := range d {
			m.Columns = append(m.Columns, fmt.Sprintf("c%d", j))
		}
		return m
	}
	ch := &engineFacts{fn: "private_pca", name: "wide", kind: "clickhouse", dialect: sqlplan.ClickHouse, table: "db.t", limit: 255 << 10}
	for _, c := range []struct {
		d     int
		limit int
		ok    bool
	}{
		{3, ch.limit, true},
		{20, ch.limit, true},
		{40, ch.limit, false},
		{4096, ch.limit, false},
		{4096, 0, true},
	} {
		e := *ch
		e.limit = c.limit
		start := time.Now()
		err := e.checkMoments(cols(c.d))
		if (err == nil) != c.ok {
			t.Errorf("d=%d, limit %d: %v", c.d, c.limit, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "nothing was charged") || !strings.Contains(err.Error(), fmt.Sprintf("d=%d", c.d))) {
			t.Errorf("d=%d: the refusal does not say what to do: %v", c.d, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("d=%d: the check took %v", c.d, time.Since(start))
		}
	}
}
