package chsource_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/internal/chtest"
)

// shardQuery is what the shards did for one statement of the analyst:
// the rows they read and the rows they sent back to the initiator.
type shardQuery struct {
	read, sent int
	query      string // one of the shards' statements
}

// shardRows runs fn and returns, for each statement the user analyst
// sent to a Distributed table meanwhile, what its shards did, from
// system.query_log (the shards' queries are the non-initial ones).
func shardRows(t testing.TB, srv *chtest.Server, fn func()) []shardQuery {
	t.Helper()
	const q = "SELECT initial_query_id, sum(read_rows), sum(result_rows), any(query) FROM system.query_log" +
		" WHERE type = 2 AND is_initial_query = 0 AND initial_user = 'analyst' GROUP BY initial_query_id"
	seen := map[string]bool{}
	srv.Exec(t, "SYSTEM FLUSH LOGS", "")
	for _, l := range lines(srv.Query(t, q)) {
		seen[strings.Split(l, "\t")[0]] = true
	}
	fn()
	srv.Exec(t, "SYSTEM FLUSH LOGS", "")
	var out []shardQuery
	for _, l := range lines(srv.Query(t, q)) {
		f := strings.SplitN(l, "\t", 4)
		if len(f) != 4 {
			t.Fatalf("query_log row %q", l)
		}
		if seen[f[0]] {
			continue
		}
		read, err1 := strconv.Atoi(f[1])
		sent, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("query_log row %q", l)
		}
		out = append(out, shardQuery{read: read, sent: sent, query: f[3]})
	}
	return out
}

// lines splits a TabSeparated result into its rows (none for "").
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// On the Distributed table the shards aggregate: a grouped private_sql
// query and a grouped column analysis make each shard send its partial
// aggregate of each group (O(groups) rows), not its rows (O(n)), which
// the initiator would otherwise aggregate alone.
func TestShardsAggregate(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name   string
		groups int // the statement's groups on each shard
		run    func() error
	}{
		// Four regions by two sexes, each key with its NULL group, which
		// the statement groups and the reader drops (a region outside the
		// domain reads as NULL; sqlplan's groupsDropNull).
		{"private_sql", 15, func() error {
			_, err := call(t, f.live, 1, map[string]any{"query": "SELECT region, sex, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a, VARIANCE(hours, 0, 60) AS v FROM people GROUP BY region, sex", "eps": 1.0}, nil, nil)
			return err
		}},
		// Four regions and the others (NULL).
		{"private_sum(by=)", 5, func() error {
			_, err := callTab(t, f.live, "people", 1, tabCall{"private_sum", map[string]any{"col": "age", "by": "region"}, nil})
			return err
		}},
	} {
		var err error
		got := shardRows(t, f.srv, func() { err = c.run() })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d distributed statements, want 1: %+v", c.name, len(got), got)
		}
		// Each shard holds 1 500 rows, of every group.
		s := got[0]
		t.Logf("%s: the shards read %d rows and sent %d", c.name, s.read, s.sent)
		if s.read != 3000 {
			t.Errorf("%s: the shards read %d rows, want 3000", c.name, s.read)
		}
		if s.sent > 2*c.groups {
			t.Errorf("%s: the shards sent %d rows, want at most one per group each; a shard's statement: %.300s", c.name, s.sent, s.query)
		}
	}
}
