package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/testtier"
)

// spikedCSV is n rows of d columns with a strong direction e1: x = 3·g·e1
// + 0.3·N(0, I) (seeded), for federated PCA tests.
func spikedCSV(t *testing.T, dir, name string, n, d int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 11))
	var b strings.Builder
	for j := range d {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "x%d", j+1)
	}
	b.WriteByte('\n')
	for range n {
		g := r.NormFloat64()
		for j := range d {
			if j > 0 {
				b.WriteByte(',')
			}
			v := 0.3 * r.NormFloat64()
			if j == 0 {
				v += 3 * g
			}
			fmt.Fprintf(&b, "%.6f", v)
		}
		b.WriteByte('\n')
	}
	return writeCSV(t, dir, name, b.String())
}

var alignRe = regexp.MustCompile(`align (\d\.\d+)`)

// alignments returns every "align X" value of out.
func alignments(t *testing.T, out string) []float64 {
	var xs []float64
	for _, m := range alignRe.FindAllStringSubmatch(out, -1) {
		x, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	return xs
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// fedEnv is three servers p1..p3 each holding dataset "part" (300 spiked
// rows, d = 10, ε = 20), and a client state holding their union "all".
type fedEnv struct {
	dir, tls string
	states   [3]string
	srv      [3]*server
	client   string
}

func newFedEnv(t *testing.T, budgets [3]string) *fedEnv {
	e := &fedEnv{}
	e.dir, e.tls = newServeDir(t)
	e.client = filepath.Join(e.dir, "client")
	var union strings.Builder
	for i := range e.states {
		csv := spikedCSV(t, e.dir, fmt.Sprintf("part%d.csv", i+1), 300, 10, uint64(i+1))
		e.states[i] = filepath.Join(e.dir, fmt.Sprintf("p%d", i+1))
		if code, _, errs := runCLI("dataset", "add", "part", "--csv", csv, "--eps", budgets[i], "--delta", "1e-5", "--clip", "5", "--state", e.states[i]); code != 0 {
			t.Fatalf("dataset add: %s", errs)
		}
		e.srv[i] = startServe(t, e.states[i], e.tls, "127.0.0.1:0")
		b := readFile(t, csv)
		if i > 0 {
			b = b[strings.IndexByte(b, '\n')+1:]
		}
		union.WriteString(b)
	}
	all := writeCSV(t, e.dir, "all.csv", union.String())
	if code, _, errs := runCLI("dataset", "add", "all", "--csv", all, "--eps", "100", "--delta", "1e-5", "--clip", "5", "--state", e.client); code != 0 {
		t.Fatalf("dataset add all: %s", errs)
	}
	return e
}

func (e *fedEnv) servers() string {
	return fmt.Sprintf("p1=%s,p2=%s,p3=%s", e.srv[0].addr, e.srv[1].addr, e.srv[2].addr)
}

// run runs script against the servers.
func (e *fedEnv) run(t *testing.T, script string) (int, string, string) {
	path := writeCSV(t, e.dir, fmt.Sprintf("s%d.pn", time.Now().UnixNano()), script)
	var out, errb bytes.Buffer
	code := runScript([]string{path, "--state", e.client, "--servers", e.servers(), "--tls-dir", e.tls}, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func (e *fedEnv) charges(t *testing.T, i int) int {
	_, out, _ := runCLI("ledger", "show", "--dataset", "part", "--state", e.states[i])
	return recordRows(out) - 1 // less the registration
}

const fedOpen = `fed := federate(dataset("part", server="p1"), dataset("part", server="p2"), dataset("part", server="p3"))
`

// TestFederateServers runs private_pca on a federation of three real
// server processes: each server charges its own ledger once per call and
// the receipt lists the three charges; its accuracy matches the
// in-process federated method with 3 providers on the union of the same
// rows; a member whose budget is short refuses the call before any
// member is charged.
func TestFederateServers(t *testing.T) {
	testtier.Integration(t)
	e := newFedEnv(t, [3]string{"20", "20", "20"})
	const runs = 7
	script := fedOpen + `for i := 0; i < 7; i++ {
	r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=5)
	fmt.Printf("align %.4f\n", math.Abs(r.Component(1)[0]))
	if i == 0 { fmt.Println(r.Receipt) }
}
`
	code, out, errs := e.run(t, script)
	if code != 0 {
		t.Fatalf("federated run: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("federated receipt:\n%s", out)
	for i, p := range []string{"p1", "p2", "p3"} {
		if !strings.Contains(out, p+":part: charged zCDP") {
			t.Errorf("the receipt does not list %s's charge:\n%s", p, out)
		}
		if c := e.charges(t, i); c != runs {
			t.Errorf("%s's ledger has %d charges, want %d (one per call)", p, c, runs)
		}
	}
	remote := alignments(t, out)
	code, out, errs = e.run(t, `ds := dataset("all")
for i := 0; i < 7; i++ {
	r := private_pca(ds, k=1, eps=1, delta=1e-6, method="federated", providers=3, iters=5)
	fmt.Printf("align %.4f\n", math.Abs(r.Component(1)[0]))
}
`)
	if code != 0 {
		t.Fatalf("in-process run: exit %d\n%s\n%s", code, out, errs)
	}
	local := alignments(t, out)
	if len(remote) != runs || len(local) != runs {
		t.Fatalf("alignments: remote %v, local %v", remote, local)
	}
	// The same protocol, noise and rows: both medians of |⟨v, e1⟩| are
	// near 1 (signal 9·n/25 per coordinate against a noise std about 10
	// per provider); the tolerance 0.05 is far above the spread of the
	// medians of 7 runs at this signal-to-noise ratio.
	mr, ml := median(remote), median(local)
	t.Logf("median alignment: servers %.4f, in-process %.4f (runs %v / %v)", mr, ml, remote, local)
	if mr < 0.95 || ml < 0.95 || mr-ml > 0.05 || ml-mr > 0.05 {
		t.Errorf("median alignment over servers %.4f, in-process %.4f: want both ≥ 0.95 and within 0.05", mr, ml)
	}
}

// TestFederateRefusesBeforeCharge: p3 cannot pay the call; nothing is
// charged anywhere.
func TestFederateRefusesBeforeCharge(t *testing.T) {
	testtier.Integration(t)
	e := newFedEnv(t, [3]string{"20", "20", "0.5"})
	code, out, errs := e.run(t, fedOpen+`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=5)
`)
	t.Logf("refusal: %s", errs)
	if code == 0 || !strings.Contains(errs, "BudgetExceeded") || !strings.Contains(errs, "p3:part") {
		t.Errorf("a short budget at p3: exit %d\n%s\n%s", code, out, errs)
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 0 {
			t.Errorf("p%d charged %d times after a refusal, want 0", i+1, c)
		}
	}
}

// TestFederateKillRestart kills p2 during a federated call and restarts
// it on its port: the client retries the round it was waiting for, the
// restarted server resumes the call from its ledger charge and the
// rounds it kept, and the call finishes with one charge per server. Then
// p2 is killed between calls: the next call fails before any charge,
// naming p2, and works again after a restart.
func TestFederateKillRestart(t *testing.T) {
	testtier.Integration(t)
	e := newFedEnv(t, [3]string{"50", "50", "50"})
	t.Setenv(envTimeout, "20s")
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := e.run(t, fedOpen+`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=300)
fmt.Printf("align %.4f\n", math.Abs(r.Component(1)[0]))
fmt.Println(r.Receipt)
`)
		done <- result{code, out, errs}
	}()
	// Kill p2 once it has answered a few rounds.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.srv[1].log.String(), "round 20:") {
		if time.Now().After(deadline) {
			t.Fatalf("p2 answered no rounds: %s", e.srv[1].log)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.srv[1].kill()
	before := e.srv[1].log.String()
	select {
	case r := <-done:
		t.Fatalf("the call ended while p2 was down: exit %d\n%s\n%s", r.code, r.out, r.errs)
	case <-time.After(500 * time.Millisecond):
	}
	e.srv[1] = startServe(t, e.states[1], e.tls, e.srv[1].addr)
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the call did not finish after the restart")
	}
	last := regexp.MustCompile(`round (\d+):`).FindAllStringSubmatch(before, -1)
	t.Logf("transcript: p2 killed (SIGKILL) after answering round %s of 302; restarted on %s; the client retried the round it was waiting for; p2's log after the restart:\n%s\ncall output:\n%s%s",
		last[len(last)-1][1], e.srv[1].addr, firstLines(e.srv[1].log.String(), 4), r.out, r.errs)
	if r.code != 0 || len(alignments(t, r.out)) != 1 {
		t.Fatalf("the call across the restart: exit %d\n%s\n%s", r.code, r.out, r.errs)
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 1 {
			t.Errorf("p%d has %d charges after a call with a restart, want 1", i+1, c)
		}
	}
	_, ledger, _ := runCLI("ledger", "show", "--dataset", "part", "--state", e.states[1])
	t.Logf("p2's ledger after the call:\n%s", ledger)

	// Between calls: p2 down, then back.
	e.srv[1].kill()
	t.Setenv(envTimeout, "2s")
	call := fedOpen + `r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=5)
fmt.Println(r.Receipt)
`
	code, out, errs := e.run(t, call)
	t.Logf("p2 down between calls: %s", errs)
	if code == 0 || !strings.Contains(errs, "ProviderFailed: p2") {
		t.Errorf("p2 down: exit %d\n%s\n%s", code, out, errs)
	}
	if c := e.charges(t, 0); c != 1 {
		t.Errorf("p1 charged a call that p2 could not join: %d charges, want 1", c)
	}
	e.srv[1] = startServe(t, e.states[1], e.tls, e.srv[1].addr)
	t.Setenv(envTimeout, "20s")
	if code, out, errs := e.run(t, call); code != 0 || !strings.Contains(out, "p2:part: charged") {
		t.Errorf("after p2's restart: exit %d\n%s\n%s", code, out, errs)
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 2 {
			t.Errorf("p%d: %d charges, want 2", i+1, c)
		}
	}
}

func firstLines(s string, n int) string {
	ls := strings.SplitAfter(s, "\n")
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, "")
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFederateDownAtPrepare: p3 answers the dry run, then goes down
// while the call is being prepared (its ledger is held by another
// writer so that its prepare cannot finish, then it is killed). The call
// fails naming p3, says nothing was charged anywhere, and afterwards no
// ledger has a charge or a live reservation: p1's and p2's reservations
// were aborted, p3's was never made. After a restart the call runs.
func TestFederateDownAtPrepare(t *testing.T) {
	testtier.Integration(t)
	e := newFedEnv(t, [3]string{"20", "20", "20"})
	t.Setenv(envTimeout, "3s")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.states[2], ledger.DBName)+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := e.run(t, fedOpen+`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=5)
fmt.Println(r.Receipt)
`)
		done <- result{code, out, errs}
	}()
	// Hold p3's write lock once it has answered the dry run (a read),
	// before the coordinator prepares p1, p2 and then p3 in turn.
	waitLog(t, e.srv[2], "/DryRun")
	tx, err := db.Begin() // BEGIN IMMEDIATE: p3's prepare waits for it
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, e.srv[1], "/FedPrepare")
	time.Sleep(300 * time.Millisecond) // p3's prepare is waiting on the lock
	e.srv[2].kill()
	tx.Rollback()
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the call did not end")
	}
	t.Logf("p3 down at prepare: %s", r.errs)
	for _, want := range []string{"ProviderFailed: p3:part", "nothing was charged anywhere", "the reservations at p1:part, p2:part were released"} {
		if r.code == 0 || !strings.Contains(r.errs, want) {
			t.Errorf("the error does not say %q: exit %d\n%s\n%s", want, r.code, r.out, r.errs)
		}
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 0 {
			t.Errorf("p%d has %d charges after a call that failed at prepare, want 0", i+1, c)
		}
		if h := held(t, e.states[i]); h != 0 {
			t.Errorf("p%d holds %d live reservations, want 0", i+1, h)
		}
	}
	e.srv[2] = startServe(t, e.states[2], e.tls, e.srv[2].addr)
	t.Setenv(envTimeout, "20s")
	if code, out, errs := e.run(t, fedOpen+`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", iters=5)
fmt.Println(r.Receipt)
`); code != 0 {
		t.Fatalf("after p3's restart: exit %d\n%s\n%s", code, out, errs)
	}
	for i := range e.states {
		if c := e.charges(t, i); c != 1 {
			t.Errorf("p%d: %d charges, want 1", i+1, c)
		}
	}
}

// waitLog waits until s's log holds what.
func waitLog(t *testing.T, s *server, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(s.log.String(), what) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged %q: %s", what, s.log)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// held is the number of live reservations of dataset "part" in state.
func held(t *testing.T, state string) int {
	t.Helper()
	st, err := ledger.OpenExisting(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.Held("part")
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}
