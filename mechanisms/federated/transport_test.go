package federated

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

// echo answers with its own index plus the request; it counts concurrent
// calls to check that the transport really runs providers in parallel.
type echo struct {
	id       int
	inFlight *atomic.Int32
	maxSeen  *atomic.Int32
	sleep    time.Duration
	waitPeer time.Duration
	fail     bool
	panics   bool
}

func (e *echo) Answer(ctx context.Context, req int) (int, error) {
	n := e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	for {
		m := e.maxSeen.Load()
		if n <= m || e.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	if e.sleep > 0 {
		time.Sleep(e.sleep)
	}
	// waitPeer holds the reply until another provider is answering too (or
	// the bound passes): two workers that really run at once then always
	// overlap, however the goroutines are scheduled on a loaded machine.
	for deadline := time.Now().Add(e.waitPeer); e.maxSeen.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if e.panics {
		panic("secret record 42.5")
	}
	if e.fail {
		return 0, errors.New("disk full")
	}
	return 1000*req + e.id, nil
}

func echoProviders(n int, sleep time.Duration) ([]Provider[int, int], *atomic.Int32) {
	var inFlight, maxSeen atomic.Int32
	ps := make([]Provider[int, int], n)
	for i := range ps {
		ps[i] = &echo{id: i, inFlight: &inFlight, maxSeen: &maxSeen, sleep: sleep}
	}
	return ps, &maxSeen
}

func TestLocalDeliversInOrder(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{1, 1}, {3, 2}, {1000, 2}, {5000, 3}} {
		ps, _ := echoProviders(tc.n, 0)
		tr := NewLocal(ps).WithWorkers(tc.workers)
		if tr.Providers() != tc.n {
			t.Fatalf("Providers() = %d, want %d", tr.Providers(), tc.n)
		}
		next := 0
		err := tr.Round(context.Background(), 7, func(i, rep int) error {
			if i != next || rep != 7000+i {
				t.Fatalf("n=%d: got reply %d from provider %d, want provider %d with %d", tc.n, rep, i, next, 7000+next)
			}
			next++
			return nil
		})
		if err != nil || next != tc.n {
			t.Fatalf("n=%d: err %v after %d replies", tc.n, err, next)
		}
	}
}

func TestLocalRunsProvidersConcurrently(t *testing.T) {
	ps, maxSeen := echoProviders(8, 0)
	for _, p := range ps {
		p.(*echo).waitPeer = 2 * time.Second // a bound for the failure case only
	}
	tr := NewLocal(ps).WithWorkers(2)
	tr.block = 1
	if err := tr.Round(context.Background(), 1, func(int, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if maxSeen.Load() < 2 {
		t.Errorf("at most %d provider answered at a time with 2 workers", maxSeen.Load())
	}
}

func TestLocalErrors(t *testing.T) {
	ps, _ := echoProviders(50, 0)
	ps[17].(*echo).fail = true
	err := NewLocal(ps).WithWorkers(2).Round(context.Background(), 1, func(int, int) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "provider 17") {
		t.Errorf("provider error = %v, want it to name provider 17", err)
	}

	ps, _ = echoProviders(50, 0)
	ps[3].(*echo).panics = true
	err = NewLocal(ps).WithWorkers(2).Round(context.Background(), 1, func(int, int) error { return nil })
	if !errors.Is(err, errProviderPanic) || strings.Contains(err.Error(), "42.5") {
		t.Errorf("panic error = %v: want errProviderPanic without the panic value", err)
	}

	ps, _ = echoProviders(50, 0)
	stop := errors.New("coordinator says stop")
	seen := 0
	err = NewLocal(ps).WithWorkers(2).Round(context.Background(), 1, func(i, _ int) error {
		seen++
		if i == 9 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 10 {
		t.Errorf("recv error: got %v after %d replies, want the recv error after 10", err, seen)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ps, _ = echoProviders(50, 0)
	err = NewLocal(ps).Round(ctx, 1, func(int, int) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}
}

func TestParties(t *testing.T) {
	a, _ := NewPCAProvider(mat.NewDense(2, 3, nil), nil)
	b, _ := NewPCAProvider(mat.NewDense(4, 2, nil), nil)
	for _, tc := range []struct {
		ps   []*PCAProvider
		want string
	}{
		{nil, "no providers"},
		{[]*PCAProvider{a, nil}, "provider 1 is nil"},
		{[]*PCAProvider{a, b}, "provider 1 has 2 columns, provider 0 has 3: all providers must share the schema"},
	} {
		if _, _, err := Parties[PCAProvider, PCARequest, PCAReply](tc.ps, "provider", "columns"); err == nil || err.Error() != tc.want {
			t.Errorf("Parties: err = %v, want %q", err, tc.want)
		}
	}
	ps, d, err := Parties[PCAProvider, PCARequest, PCAReply]([]*PCAProvider{a, a}, "provider", "columns")
	if err != nil || d != 3 || len(ps) != 2 {
		t.Errorf("Parties = %d providers, d=%d, %v; want 2, 3, nil", len(ps), d, err)
	}
}
