package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/service"
	"github.com/privnotes/privnotes/service/client"
	"github.com/privnotes/privnotes/service/tlsdir"
)

// fixture is a server over a state directory with one dataset "tab"
// (200 rows, 3 columns, budget ε=2, δ=1e-5) on a loopback port.
type fixture struct {
	t     testing.TB
	state string
	tls   string
	st    *ledger.Store
	addr  string
	g     *grpc.Server
	done  chan struct{}
	// block, if set, holds every mechanism run after its charge until
	// it is closed; running is signalled when a run starts.
	block   chan struct{}
	running chan struct{}
	// authz, if set before start, is the server's authz file.
	authz *service.Authz
}

func init() { service.SetLog(io.Discard) }

func newFixture(t testing.TB) *fixture {
	return newFixtureBudget(t, accounting.Budget{Eps: 2, Delta: 1e-5})
}

func newFixtureBudget(t testing.TB, budget accounting.Budget) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, state: filepath.Join(dir, "state"), tls: filepath.Join(dir, "tls"), running: make(chan struct{}, 8)}
	if err := tlsdir.Init(f.tls, []string{"127.0.0.1", "localhost"}, "tester"); err != nil {
		t.Fatal(err)
	}
	st := testfix.Store(t, f.state)
	f.st = st
	r := rand.New(rand.NewPCG(1, 2))
	tab := &dataset.Table{Rows: 200, Columns: []string{"x1", "x2", "x3"}}
	for range 200 * 3 {
		tab.X = append(tab.X, 0.3*r.NormFloat64())
	}
	testfix.Register(t, st, ledger.Registration{Name: "tab", Table: tab, Budget: budget,
		Accountant: accounting.ModeZCDP, Clip: 1, Source: "test"})
	f.start("127.0.0.1:0")
	t.Cleanup(f.stop)
	return f
}

// start serves the fixture's state on addr.
func (f *fixture) start(addr string) {
	f.t.Helper()
	exec := &release.Local{
		Store: func() (*ledger.Store, error) { return f.st, nil },
		Wrap: func() release.RunWrapper {
			return func(run func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error) {
				return func(ctx context.Context, d *release.Data) (any, error) {
					if f.block != nil {
						f.running <- struct{}{}
						select {
						case <-f.block:
						case <-ctx.Done():
							return nil, ctx.Err()
						}
					}
					return run(ctx, d)
				}
			}
		},
	}
	srv, err := service.NewServer(f.st, exec)
	if err != nil {
		f.t.Fatal(err)
	}
	srv.SetAuthz(f.authz)
	cfg, err := tlsdir.Server(f.tls)
	if err != nil {
		f.t.Fatal(err)
	}
	g, err := service.NewGRPC(srv, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	var lis net.Listener
	for try := 0; ; try++ { // a restart on the same port may wait for the old socket
		if lis, err = net.Listen("tcp", addr); err == nil || try == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.addr, f.g, f.done = lis.Addr().String(), g, make(chan struct{})
	go func(done chan struct{}) { service.Serve(context.Background(), g, lis); close(done) }(f.done)
}

// stop ends the server abruptly: connections close, calls in flight end.
func (f *fixture) stop() {
	if f.g != nil {
		f.g.Stop()
		<-f.done
		f.g = nil
	}
}

func (f *fixture) client(timeout time.Duration) *client.Client {
	f.t.Helper()
	return f.clientFrom(f.tls, timeout)
}

// clientFrom is a client with the credentials of TLS directory dir.
func (f *fixture) clientFrom(dir string, timeout time.Duration) *client.Client {
	f.t.Helper()
	cfg, err := tlsdir.Client(dir)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := client.New("p1", f.addr, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	c.Timeout = timeout
	f.t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) charges() int {
	f.t.Helper()
	s, err := f.st.Status("tab")
	if err != nil {
		f.t.Fatal(err)
	}
	return s.Charges
}

// call builds a call of fn with every keyword of its table, defaults
// filled in as the DSL runtime fills them, and kw over them.
func call(t testing.TB, fn, ds string, kw map[string]any) release.Call {
	t.Helper()
	a, err := release.ArgsFor(fn, kw)
	if err != nil {
		t.Fatal(err)
	}
	return release.Call{Func: fn, Dataset: release.Ref{Name: ds}, Args: a, Cell: "[1]"}
}

// TestRemoteCalls: releases of every value type come back as the
// in-process executor makes them, with receipts of the server's ledger;
// the server's plan is its own.
func TestRemoteCalls(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	sc, err := c.Describe(ctx, "tab")
	if err != nil || sc.D != 3 || sc.Budget.Eps != 2 {
		t.Fatalf("Describe: %+v, %v", sc, err)
	}
	local := &release.Local{Store: func() (*ledger.Store, error) { return f.st, nil }}
	cases := []struct {
		fn   string
		kw   map[string]any
		want func(any) bool
	}{
		{"private_count", map[string]any{"eps": 0.2}, func(v any) bool { _, ok := v.(*release.Count); return ok }},
		// The mean's noisy sums and count travel with it: its intervals
		// (release.ErrorModel.RatioInterval) are computed from them.
		{"private_mean", map[string]any{"eps": 0.2, "delta": 1e-7}, func(v any) bool {
			m, ok := v.(*release.Mean)
			return ok && len(m.Values) == 3 && len(m.Sums) == 3 && len(m.Counts) == 1
		}},
		{"private_pca", map[string]any{"eps": 0.2, "delta": 1e-7, "k": 2, "method": "gauss"}, func(v any) bool {
			p, ok := v.(*release.PCA)
			if !ok {
				return false
			}
			r, k := p.Components.Dims()
			return r == 3 && k == 2
		}},
	}
	for i, tc := range cases {
		cl := call(t, tc.fn, "tab", tc.kw)
		lp, err := local.Plan(release.Call{Func: cl.Func, Dataset: release.Ref{Name: "tab", Schema: sc}, Args: cl.Args})
		if err != nil {
			t.Fatal(err)
		}
		rp, err := c.Plan(cl)
		if err != nil {
			t.Fatalf("%s: Plan: %v", tc.fn, err)
		}
		if rp.Event() != lp.Event() || rp.Noise != lp.Noise {
			t.Errorf("%s: remote plan %v %q, local %v %q", tc.fn, rp.Event(), rp.Noise, lp.Event(), lp.Noise)
		}
		rel, err := c.Execute(ctx, cl, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.fn, err)
		}
		if !tc.want(rel.Value) {
			t.Errorf("%s: value %#v", tc.fn, rel.Value)
		}
		// The public noise description arrives in the receipt's Params, so
		// the client shows the same intervals as a local call.
		if m, ok := release.ErrorOf(rel.Receipt.Params); tc.fn != "private_pca" && (!ok || m.Kind == "") {
			t.Errorf("%s: the receipt carries no error model over the wire: %v", tc.fn, rel.Receipt.Params)
		}
		left, _ := f.st.Remaining("tab")
		rc := rel.Receipt
		if !rc.Charged || rc.LedgerID == 0 || rc.Remaining != left || rc.Function != tc.fn || f.charges() != i+1 {
			t.Errorf("%s: receipt %+v; server remaining %v, %d charges", tc.fn, rc, left, f.charges())
		}
	}
	dry := call(t, "private_count", "tab", map[string]any{"eps": 0.1})
	rc, err := c.DryRun(ctx, dry, nil)
	if err != nil || !rc.DryRun || f.charges() != len(cases) {
		t.Errorf("DryRun: %+v, %v, %d charges", rc, err, f.charges())
	}
}

// TestRemoteErrors: refusals arrive as the DSL's errors, nothing charged.
func TestRemoteErrors(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	_, err := c.Execute(ctx, call(t, "private_count", "tab", map[string]any{"eps": 5.0}), nil)
	var be *release.BudgetError
	if !errors.As(err, &be) || be.Budget.Eps != 2 {
		t.Errorf("over budget: %v, want a BudgetError of the server's budget", err)
	}
	_, err = c.Execute(ctx, call(t, "private_count", "nope", map[string]any{"eps": 0.1}), nil)
	if name(err) != release.NameDatasetError || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown dataset: %v", err)
	}
	_, err = c.Execute(ctx, call(t, "private_pca", "tab", map[string]any{"eps": 0.1, "delta": 1e-7, "k": 9}), nil)
	if name(err) != release.NameArgumentError {
		t.Errorf("k > d: %v", err)
	}
	if n := f.charges(); n != 0 {
		t.Errorf("refused calls charged %d times", n)
	}
}

func name(err error) string {
	var e interface{ ErrorName() string }
	if errors.As(err, &e) {
		return e.ErrorName()
	}
	return ""
}

// TestRetryIsNotChargedTwice: the same call id gets the first answer.
func TestRetryIsNotChargedTwice(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	cl := call(t, "private_count", "tab", map[string]any{"eps": 0.3})
	cl.ID = "retry-1"
	var wg sync.WaitGroup
	rels := make([]*release.Release, 3)
	errs := make([]error, 3)
	for i := range rels { // concurrent retries as well as sequential ones
		wg.Add(1)
		go func() { defer wg.Done(); rels[i], errs[i] = c.Execute(context.Background(), cl, nil) }()
	}
	wg.Wait()
	again, err := c.Execute(context.Background(), cl, nil)
	rels, errs = append(rels, again), append(errs, err)
	for i, r := range rels {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Value.(*release.Count).Value != rels[0].Value.(*release.Count).Value || r.Receipt.LedgerID != rels[0].Receipt.LedgerID {
			t.Errorf("retry %d: %v (record %d), first %v (record %d)", i, r.Value, r.Receipt.LedgerID, rels[0].Value, rels[0].Receipt.LedgerID)
		}
	}
	if n := f.charges(); n != 1 {
		t.Errorf("%d charges for one call id, want 1", n)
	}
}

// gate records which of commit and abort the executor called.
type gate struct{ commits, aborts int }

func (g *gate) Admit(ctx context.Context, ev accounting.Event, ds release.Ref) (func() string, func(), error) {
	return func() string { g.commits++; return "block" }, func() { g.aborts++ }, nil
}

// TestServerDiesMidCall: the server stops after charging, before its
// release; the client fails with ProviderFailed naming the server, and
// its retry of the same call at the restarted server is not charged again
// nor run again (a second run would be a second release on one charge).
func TestServerDiesMidCall(t *testing.T) {
	f := newFixture(t)
	f.block = make(chan struct{})
	c := f.client(3 * time.Second)
	cl := call(t, "private_count", "tab", map[string]any{"eps": 0.3})
	cl.ID = "dies-1"
	g := &gate{}
	errc := make(chan error, 1)
	go func() { _, err := c.Execute(context.Background(), cl, g); errc <- err }()
	<-f.running // charged, mechanism running
	addr := f.addr
	f.stop()
	f.block = nil
	f.start(addr) // restarted while the client retries
	err := <-errc
	if name(err) != release.NameProviderFailed || !strings.Contains(err.Error(), "p1 ("+addr+")") || !strings.Contains(err.Error(), "not run again") {
		t.Errorf("died mid-call: %v", err)
	}
	t.Log(err)
	if g.commits != 1 || g.aborts != 0 {
		t.Errorf("gate: %d commits, %d aborts; a charged call counts against the caller's block", g.commits, g.aborts)
	}
	if n := f.charges(); n != 1 {
		t.Errorf("%d charges, want 1", n)
	}
	// The restarted server goes on from its ledger.
	rel, err := c.Execute(context.Background(), call(t, "private_count", "tab", map[string]any{"eps": 0.3}), nil)
	if err != nil || rel.Receipt.LedgerID <= 1 || f.charges() != 2 {
		t.Errorf("after the restart: %v, %v, %d charges", rel, err, f.charges())
	}
}

// TestServerDown: a call to a server that is not there fails within the
// client's timeout with ProviderFailed naming it; nothing is charged.
func TestServerDown(t *testing.T) {
	f := newFixture(t)
	c := f.client(time.Second)
	f.stop()
	g := &gate{}
	start := time.Now()
	_, err := c.Execute(context.Background(), call(t, "private_count", "tab", map[string]any{"eps": 0.3}), g)
	want := fmt.Sprintf("p1 (%s) did not answer within 1s", f.addr)
	if name(err) != release.NameProviderFailed || !strings.Contains(err.Error(), want) {
		t.Errorf("server down: %v, want ProviderFailed %q", err, want)
	}
	t.Log(err)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if g.commits+g.aborts != 0 || f.charges() != 0 {
		t.Errorf("gate %+v, %d charges: a call that was never planned asks no gate", g, f.charges())
	}
}

// TestWrongCertificate: a client whose certificate another CA signed is
// refused with an authentication error at once; nothing is charged.
func TestWrongCertificate(t *testing.T) {
	f := newFixture(t)
	other := t.TempDir()
	if err := tlsdir.Init(other, []string{"127.0.0.1"}, "mallory"); err != nil {
		t.Fatal(err)
	}
	good, _ := tlsdir.Client(f.tls)
	bad, err := tlsdir.Client(other)
	if err != nil {
		t.Fatal(err)
	}
	bad.RootCAs = good.RootCAs // trusts the server; its own certificate is not the server's CA's
	c, err := client.New("p1", f.addr, bad)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 20 * time.Second
	start := time.Now()
	_, err = c.Execute(context.Background(), call(t, "private_count", "tab", map[string]any{"eps": 0.3}), nil)
	if name(err) != release.NameProviderFailed || !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("wrong certificate: %v", err)
	}
	t.Log(err)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("an authentication failure took %v: it should not wait for the timeout", d)
	}
	nocert := good.Clone()
	nocert.Certificates = nil
	if _, err := client.New("p1", f.addr, nocert); err == nil || !strings.Contains(err.Error(), "no client certificate") {
		t.Errorf("no certificate: %v", err)
	}
	if n := f.charges(); n != 0 {
		t.Errorf("%d charges", n)
	}
}

// BenchmarkCount compares the latency of a private_count in-process with
// the same call on a data server over loopback mutual TLS (plan and
// execute: two round trips, a ledger charge and the kept release).
func BenchmarkCount(b *testing.B) {
	f := newFixtureBudget(b, accounting.Budget{Eps: 1e5, Delta: 1e-5})
	cl := call(b, "private_count", "tab", map[string]any{"eps": 1e-3})
	sc, err := f.st.Schema("tab")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("transport=inprocess", func(b *testing.B) {
		local := &release.Local{Store: func() (*ledger.Store, error) { return f.st, nil }}
		lc := cl
		lc.Dataset.Schema = sc
		for b.Loop() {
			if _, err := local.Execute(context.Background(), lc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transport=grpc", func(b *testing.B) {
		c := f.client(10 * time.Second)
		for b.Loop() {
			if _, err := c.Execute(context.Background(), cl, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLongCallOutlivesTimeout: a call that runs longer than the client's
// timeout is waited for while its server is connected (the timeout is for
// a server that is gone), and is charged once.
func TestLongCallOutlivesTimeout(t *testing.T) {
	f := newFixture(t)
	f.block = make(chan struct{})
	c := f.client(time.Second)
	type result struct {
		rel *release.Release
		err error
	}
	done := make(chan result, 1)
	go func() {
		rel, err := c.Execute(context.Background(), call(t, "private_count", "tab", map[string]any{"eps": 0.3}), nil)
		done <- result{rel, err}
	}()
	<-f.running
	time.Sleep(2500 * time.Millisecond) // 2.5× the client's timeout
	close(f.block)
	r := <-done
	if r.err != nil || r.rel == nil || !r.rel.Receipt.Charged {
		t.Fatalf("a long call: %v, %v", r.rel, r.err)
	}
	if n := f.charges(); n != 1 {
		t.Errorf("%d charges, want 1", n)
	}
}

// TestInterruptedCallKeepsRelease: a client that stops waiting (an
// interrupted cell) does not cancel a started call at the server: it runs
// to its release, which a retry of the same call id gets, uncharged.
func TestInterruptedCallKeepsRelease(t *testing.T) {
	f := newFixture(t)
	f.block = make(chan struct{})
	c := f.client(5 * time.Second)
	cl := call(t, "private_count", "tab", map[string]any{"eps": 0.3})
	cl.ID = "interrupted-1"
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Execute(ctx, cl, nil); errc <- err }()
	<-f.running
	cancel()
	if err := <-errc; name(err) != release.NameInterrupted {
		t.Fatalf("interrupted call: %v", err)
	}
	close(f.block) // the server finishes the run the client left
	f.block = nil
	var rel *release.Release
	var err error
	for try := 0; try < 50; try++ { // the retry waits for the first run's lock, then gets its release
		if rel, err = c.Execute(context.Background(), cl, nil); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || rel == nil || !rel.Receipt.Charged {
		t.Fatalf("retry after the interrupt: %v, %v", rel, err)
	}
	if n := f.charges(); n != 1 {
		t.Errorf("%d charges, want 1 (the retry is the first call's release)", n)
	}
}

// TestKeptReleaseBoundToRequestAndClient: a kept release answers only a
// retry of the same request from the same client certificate. Another
// request under the call id, or another analyst who learned the id (no
// authz file: every CA-signed client may use the dataset), gets an error
// and nothing, and nothing more is charged.
func TestKeptReleaseBoundToRequestAndClient(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.client(10 * time.Second)
	first := call(t, "private_count", "tab", map[string]any{"eps": 0.3})
	first.ID = "bound-1"
	rel, err := c.Execute(ctx, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Execute(ctx, first, nil)
	if err != nil || again.Receipt.LedgerID != rel.Receipt.LedgerID {
		t.Fatalf("the same request from the same client: %v, %v", again, err)
	}

	other := call(t, "private_count", "tab", map[string]any{"eps": 0.2})
	other.ID = "bound-1"
	if r, err := c.Execute(ctx, other, nil); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "different request") || r != nil {
		t.Errorf("another request under the call id: %v, %v", r, err)
	}

	dir := filepath.Join(t.TempDir(), "mallory")
	if err := tlsdir.Issue(f.tls, "mallory", dir); err != nil {
		t.Fatal(err)
	}
	m := f.clientFrom(dir, 10*time.Second)
	if r, err := m.Execute(ctx, first, nil); !notYours(err) || r != nil {
		t.Errorf("another client replaying the call id: %v, %v", r, err)
	}
	if n := f.charges(); n != 1 {
		t.Errorf("%d charges, want the first call's 1", n)
	}
}
