package pgsource_test

import (
	"context"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/dsl/release"
)

// sessions counts the server's sessions of the analyst, who is only the
// datasets' (the superuser's own connection is not one of them).
func sessions(t *testing.T, srv *server) int {
	t.Helper()
	ctx := context.Background()
	conn := superConn(t, srv)
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'analyst'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitSessions waits until the analyst has want sessions: a backend ends
// a moment after its client's goodbye.
func waitSessions(t *testing.T, srv *server, what string, want int) {
	t.Helper()
	n := -1
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n = sessions(t, srv); n == want {
			return
		}
	}
	t.Errorf("%s: the analyst has %d sessions, want %d", what, n, want)
}

// A dataset's pool keeps its session after a call, for the next one;
// Close (a dataset removed or registered anew) and CloseAll (the end of
// the process) end it, at once when no call holds it and when that
// call's Source is closed otherwise; a later Open makes a new pool.
func TestPoolClosed(t *testing.T) {
	f := newFixture(t)
	secret := f.live.EngineSecretPath("people")
	open := func() release.EngineSource {
		t.Helper()
		sc, err := f.live.Schema("people")
		if err != nil {
			t.Fatal(err)
		}
		ref, ok, err := f.live.Engine("people")
		if err != nil || !ok {
			t.Fatalf("engine: %v %v", ok, err)
		}
		s, err := pgsource.Open(context.Background(), *ref, sc, secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	pgsource.CloseAll() // the fixture's own calls' pools
	waitSessions(t, f.srv, "before", 0)

	open().Close()
	waitSessions(t, f.srv, "a call done", 1)
	pgsource.Close(f.snap.EngineSecretPath("people")) // another dataset's
	waitSessions(t, f.srv, "another dataset's pool closed", 1)
	pgsource.Close(secret)
	waitSessions(t, f.srv, "the dataset's pool closed", 0)

	// A call in progress keeps its session until it is done.
	s := open()
	pgsource.Close(secret)
	waitSessions(t, f.srv, "closed during a call", 1)
	s.Close()
	waitSessions(t, f.srv, "the call done after the close", 0)

	open().Close()
	waitSessions(t, f.srv, "a call after the close", 1)
	pgsource.CloseAll()
	waitSessions(t, f.srv, "CloseAll", 0)
}
