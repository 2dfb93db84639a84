package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// newFedRepEnv is three servers p1..p3, each a silo of 150 users of one
// planted representation (d = 6, k = 1) in dataset "part" (ε = budget).
func newFedRepEnv(t *testing.T, budget string) (*fedEnv, *synth.FedRepData) {
	const users, d = 450, 6
	data, err := synth.FedRep(21, users, 10, d, 1, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	e := &fedEnv{}
	e.dir, e.tls = newServeDir(t)
	e.client = filepath.Join(e.dir, "client")
	for s := range 3 {
		var b strings.Builder
		for j := range d {
			fmt.Fprintf(&b, "x%d,", j+1)
		}
		b.WriteString("uid,y\n")
		for u := s * users / 3; u < (s+1)*users/3; u++ {
			x, y := data.User(u)
			for r := range y {
				for j := range d {
					fmt.Fprintf(&b, "%.8f,", x.At(r, j))
				}
				fmt.Fprintf(&b, "u%d,%.8f\n", u, y[r])
			}
		}
		csv := writeCSV(t, e.dir, fmt.Sprintf("silo%d.csv", s+1), b.String())
		e.states[s] = filepath.Join(e.dir, fmt.Sprintf("p%d", s+1))
		if code, _, errs := runCLI("dataset", "add", "part", "--csv", csv, "--unit", "user:uid", "--label", "y", "--label-clip", "10", "--public-n",
			"--eps", budget, "--delta", "1e-5", "--clip", "10", "--state", e.states[s]); code != 0 {
			t.Fatalf("dataset add: %s", errs)
		}
		e.srv[s] = startServe(t, e.states[s], e.tls, "127.0.0.1:0")
	}
	return e, data
}

// TestFedRepServers runs private_fedrep on a federation of three real
// server processes, each a silo of 150 users of one planted representation
// (d = 6, k = 1): each server is charged once, the receipt lists the three
// charges, and U recovers the planted direction (‖sinΘ‖² < 0.2 at ε = 8,
// far below the ≈ 5/6 of a random direction; measured: 0.037).
func TestFedRepServers(t *testing.T) {
	testtier.Integration(t)
	const d = 6
	e, data := newFedRepEnv(t, "20")
	code, out, errs := e.run(t, fedOpen+`r := private_fedrep(fed, k=1, eps=8, delta=1e-6)
fmt.Println(r.Receipt)
fmt.Println("U", r.U.RawMatrix().Data)
`)
	if code != 0 {
		t.Fatalf("federated FedRep: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("%s", out)
	for i, p := range []string{"p1", "p2", "p3"} {
		if !strings.Contains(out, p+":part: charged") {
			t.Errorf("the receipt does not list %s's charge", p)
		}
		if c := e.charges(t, i); c != 1 {
			t.Errorf("%s's ledger has %d charges, want 1", p, c)
		}
	}
	line := out[strings.Index(out, "U [")+3:]
	line = line[:strings.Index(line, "]")]
	var u []float64
	for _, f := range strings.Fields(line) {
		var v float64
		if _, err := fmt.Sscan(f, &v); err != nil {
			t.Fatalf("U %q", line)
		}
		u = append(u, v)
	}
	if len(u) != d {
		t.Fatalf("U %q", line)
	}
	var p mat.Dense
	p.Mul(mat.NewDense(d, 1, u).T(), data.UStar)
	sin2 := 1 - p.At(0, 0)*p.At(0, 0)
	t.Logf("‖sinΘ(U, U*)‖² = %.4g", sin2)
	if !(sin2 < 0.2) {
		t.Errorf("‖sinΘ(U, U*)‖² = %.4g over three servers, want < 0.2", sin2)
	}
}

// TestFedRepKillRestart kills p2 (SIGKILL) during the rounds of a
// federated private_fedrep call. Left down, it makes the call fail with
// ProviderFailed naming it and the charges that stand (data were read;
// each server's answers so far are DP releases of its own data), and
// nothing else is charged. Restarted, it continues from its ledger (one
// charge). In a second call p2 is killed mid-rounds and restarted at
// once: the client retries the round it was waiting for, p2 resumes the
// call from its committed reservation and kept rounds, and the call
// finishes with one more charge per server, not two.
func TestFedRepKillRestart(t *testing.T) {
	testtier.Integration(t)
	e, _ := newFedRepEnv(t, "50")
	script := fedOpen + `r := private_fedrep(fed, k=1, eps=4, delta=1e-6, rounds=300)
fmt.Println(r.Receipt)
`
	type result struct {
		code      int
		out, errs string
	}
	start := func() chan result {
		done := make(chan result, 1)
		go func() {
			code, out, errs := e.run(t, script)
			done <- result{code, out, errs}
		}()
		return done
	}
	wait := func(done chan result) result {
		select {
		case r := <-done:
			return r
		case <-time.After(3 * time.Minute):
			t.Fatal("the call did not end")
		}
		return result{}
	}
	// 1. p2 killed mid-rounds and left down.
	t.Setenv(envTimeout, "3s")
	done := start()
	waitLog(t, e.srv[1], "round 20:")
	e.srv[1].kill()
	r := wait(done)
	t.Logf("p2 killed mid-rounds: %s", r.errs)
	for _, want := range []string{"ProviderFailed", "p2:part, round", "the charges at p1:part (ledger record 2), p2:part (ledger record 2), p3:part (ledger record 2) stand"} {
		if r.code == 0 || !strings.Contains(r.errs, want) {
			t.Errorf("the error does not say %q: exit %d\n%s\n%s", want, r.code, r.out, r.errs)
		}
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 1 {
			t.Errorf("p%d has %d charges after the failed call, want 1", i+1, c)
		}
	}
	// 2. Restarted: p2 continues from its ledger; a new call, during which
	// p2 is killed and restarted at once, charges each server once more.
	e.srv[1] = startServe(t, e.states[1], e.tls, e.srv[1].addr)
	if c := e.charges(t, 1); c != 1 {
		t.Errorf("p2 after its restart: %d charges, want 1", c)
	}
	t.Setenv(envTimeout, "20s")
	done = start()
	waitLog(t, e.srv[1], "round 20:")
	e.srv[1].kill()
	e.srv[1] = startServe(t, e.states[1], e.tls, e.srv[1].addr)
	r = wait(done)
	t.Logf("p2 killed and restarted mid-rounds: exit %d\n%s%s\np2's log after the restart:\n%s", r.code, r.out, r.errs, firstLines(e.srv[1].log.String(), 4))
	if r.code != 0 || !strings.Contains(r.out, "p2:part: charged") {
		t.Fatalf("the call across p2's restart: exit %d\n%s\n%s", r.code, r.out, r.errs)
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 2 {
			t.Errorf("p%d has %d charges after two calls, want 2 (the retried round was not charged)", i+1, c)
		}
	}
}
