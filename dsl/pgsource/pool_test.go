package pgsource

import "testing"

// A dataset's pool serves that dataset only, and only with the URL and
// password it was made with: a new password or registration replaces it
// (so a wrong password is refused as a new connection's would be), and
// the replaced pool is closed once its last session is back. No server is
// needed: a pool connects on its first Acquire.
func TestPoolPerDataset(t *testing.T) {
	ps := &poolSet{m: map[string]*poolEntry{}}
	const url, other = "postgres://analyst@127.0.0.1:1/db", "postgres://analyst@127.0.0.1:1/other"
	take := func(key, url, password string) *lease {
		t.Helper()
		l, err := ps.take(key, url, password)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a1 := take("a.secret", url, "pw")
	a2 := take("a.secret", url, "pw")
	b := take("b.secret", url, "pw")
	for _, c := range []struct {
		name string
		x, y *lease
		same bool
	}{
		{"one dataset, same settings", a1, a2, true},
		{"another dataset", a1, b, false},
	} {
		if (c.x.pool == c.y.pool) != c.same {
			t.Errorf("%s: shares a pool: %v, want %v", c.name, c.x.pool == c.y.pool, c.same)
		}
	}

	for _, c := range []struct{ name, url, password string }{
		{"a new password", url, "new"},
		{"another URL", other, "new"},
	} {
		old := ps.m["a.secret"]
		l := take("a.secret", c.url, c.password)
		if l.pool == old.pool || !old.retired || ps.m["a.secret"].pool != l.pool {
			t.Errorf("%s: the old pool still serves the dataset (retired %v)", c.name, old.retired)
		}
		l.done()
	}
	if a1.e.retired != true || a1.e.users != 2 {
		t.Errorf("the replaced pool: retired %v with %d users, want retired with 2", a1.e.retired, a1.e.users)
	}
	a1.done()
	a2.done()
	if a1.e.users != 0 {
		t.Errorf("the replaced pool has %d users after both are done", a1.e.users)
	}

	b.done()
	if e := ps.m["b.secret"]; e == nil || e.idle == nil {
		t.Errorf("an unused pool has no idle timer to close it")
	}
	if again := take("b.secret", url, "pw"); again.pool != b.pool || again.e.idle != nil {
		t.Errorf("a pool taken again within its idle time was not reused with its timer stopped")
	} else {
		again.done()
	}
}
