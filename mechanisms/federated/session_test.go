package federated

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

func sessionFixture(t *testing.T, seed uint64) (*PCAPlan, []*PCAProvider) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	var ps []*PCAProvider
	for j := range 3 {
		x := mat.NewDense(200, 8, nil)
		for i := range 200 {
			g := r.NormFloat64()
			for c := range 8 {
				v := 0.05 * r.NormFloat64()
				if c == 2 {
					v += 0.3 * g
				}
				x.Set(i, c, v)
			}
		}
		p, err := NewPCAProvider(x, noise.NewSeeded(seed+uint64(j)))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	pl, err := PlanPCA(PCAOptions{K: 2, Sparsity: 4, Iters: 4, Eps: 2, Delta: 1e-6}, 8)
	if err != nil {
		t.Fatal(err)
	}
	return pl, ps
}

// sessionTransport answers through Sessions, as a data service does.
type sessionTransport struct{ ss []*Session }

func (t *sessionTransport) Providers() int { return len(t.ss) }
func (t *sessionTransport) Round(ctx context.Context, req PCARequest, recv func(int, PCAReply) error) error {
	req.Sigma = 0 // a coordinator's σ is ignored: the sessions use their plan's
	for i, s := range t.ss {
		rep, err := s.Answer(ctx, req)
		if err != nil {
			return err
		}
		if err := recv(i, rep); err != nil {
			return err
		}
	}
	return nil
}

// TestSessionMatchesInProcess: a run whose providers answer through
// Sessions (count withheld, σ from their own plan) releases bit for bit
// what the in-process run releases with the same noise streams: the
// unnormalised aggregate differs from the normalised one by a positive
// scale, which no step of the coordinator sees.
func TestSessionMatchesInProcess(t *testing.T) {
	ctx := context.Background()
	pl, ps := sessionFixture(t, 5)
	want, err := pl.Coordinate(ctx, NewLocal([]Provider[PCARequest, PCAReply]{ps[0], ps[1], ps[2]}).WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	pl, ps = sessionFixture(t, 5)
	tr := &sessionTransport{}
	for _, p := range ps {
		s, err := NewSession(pl, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr.ss = append(tr.ss, s)
	}
	got, err := pl.Coordinate(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSupport(got.Support, want.Support) {
		t.Fatalf("support %v, in-process %v", got.Support, want.Support)
	}
	// Same subspace: ‖QᵀQ'‖_F² = k up to rounding.
	var m mat.Dense
	m.Mul(got.Q.T(), want.Q)
	if f := mat.Norm(&m, 2); math.Abs(f*f-2) > 1e-9 {
		t.Errorf("‖QᵀQ'‖_F² = %v, want 2", f*f)
	}
	for _, s := range tr.ss {
		if !s.Done() {
			t.Errorf("a session is not done after the run (next %d of %d)", s.Next(), pl.Rounds())
		}
	}
}

func equalSupport(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSessionRefuses: rounds out of order, of the wrong step, with a
// support of the wrong size or a basis that is not orthonormal are
// refused (ErrRound) without reading or advancing; replies carry no count.
func TestSessionRefuses(t *testing.T) {
	ctx := context.Background()
	pl, ps := sessionFixture(t, 9)
	s, err := NewSession(pl, ps[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	q := mat.NewDense(8, 2, nil)
	q.Set(0, 0, 1)
	q.Set(1, 1, 1)
	big := mat.DenseCopyOf(q)
	big.Scale(1000, big)
	cases := []struct {
		name string
		req  PCARequest
	}{
		{"round 1 first", PCARequest{Round: 1, Step: StepBlock, Support: []int{0, 1, 2, 3}}},
		{"product at round 0", PCARequest{Round: 0, Step: StepProduct, Q: q}},
	}
	for _, c := range cases {
		if _, err := s.Answer(ctx, c.req); !errors.Is(err, ErrRound) || s.Next() != 0 {
			t.Errorf("%s: %v, next %d", c.name, err, s.Next())
		}
	}
	rep, err := s.Answer(ctx, PCARequest{Round: 0, Step: StepDiag})
	if err != nil || rep.Count != 0 || rep.Value == nil {
		t.Fatalf("diag: %v, count %d", err, rep.Count)
	}
	if _, err := s.Answer(ctx, PCARequest{Round: 0, Step: StepDiag}); !errors.Is(err, ErrRound) {
		t.Errorf("round 0 twice: %v", err)
	}
	for _, sup := range [][]int{{0, 1}, {0, 1, 2, 9}, {3, 2, 1, 0}} {
		if _, err := s.Answer(ctx, PCARequest{Round: 1, Step: StepBlock, Support: sup}); !errors.Is(err, ErrRound) {
			t.Errorf("support %v: %v", sup, err)
		}
	}
	if _, err := s.Answer(ctx, PCARequest{Round: 1, Step: StepBlock, Support: []int{0, 1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	nan := mat.DenseCopyOf(q)
	nan.Set(3, 1, math.NaN())
	for name, b := range map[string]*mat.Dense{"scaled ×1000": big, "nil": nil, "NaN": nan, "wrong shape": mat.NewDense(8, 1, nil)} {
		if _, err := s.Answer(ctx, PCARequest{Round: 2, Step: StepProduct, Q: b}); !errors.Is(err, ErrRound) || s.Next() != 2 {
			t.Errorf("basis %s: %v", name, err)
		}
	}
	if _, err := s.Answer(ctx, PCARequest{Round: 2, Step: StepProduct, Q: q}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSession(pl, ps[0], pl.Rounds()+1); err == nil {
		t.Error("a session resumed past its last round")
	}
}

// TestSessionNoiseIsThePlans: a request with σ = 0 still gets the plan's
// noise. With zero data the diagonal reply is pure noise; its entries'
// spread over many replies matches DiagStd (tolerance 10%: 8·200 samples).
func TestSessionNoiseIsThePlans(t *testing.T) {
	ctx := context.Background()
	pl, err := PlanPCA(PCAOptions{K: 1, Sparsity: 8, Iters: 2, Eps: 1, Delta: 1e-6}, 8)
	if err != nil {
		t.Fatal(err)
	}
	var ss float64
	m := 0
	for seed := range uint64(200) {
		p, err := NewPCAProvider(mat.NewDense(4, 8, nil), noise.NewSeeded(seed))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewSession(pl, p, 0)
		rep, err := s.Answer(ctx, PCARequest{Round: 0, Step: StepDiag, Sigma: 0})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range rep.Value.RawMatrix().Data {
			ss += v * v
			m++
		}
	}
	if got := math.Sqrt(ss / float64(m)); math.Abs(got/pl.DiagStd-1) > 0.1 {
		t.Errorf("noise std %.4g, the plan's DiagStd %.4g", got, pl.DiagStd)
	}
}
