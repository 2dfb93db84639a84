package dppca

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// goldenDigests are the digests of the golden cases' results as the
// matrix-only implementation (commit 4a6e800, before Plan.RunSource)
// computed them with the same seeds: the port to rows.Source must not
// change a bit. (Updated when noise.GaussianScale began charging the
// discrete Gaussian's GDP slack, issue 12: σ moved by ~1e-11 relative.)
var goldenDigests = map[string]uint64{
	"dppca/pairs+shuffle":     0x8a6e84ab5f4af52e,
	"dppca/pairs+shuffle+bad": 0x43174ce11c939f01,
	"dppca/centred+keep":      0xdb4814ce8970d966,
	"dppca/mean+shuffle":      0x81fd7b72bb35b627,
	"dppca/padded":            0x5f5fe7d6ff681e16,
	"dppca/empty":             0x5592e78070677276,
	"dppca/paper":             0xca35fcb692b61d50,
	"oja/pairs+shuffle":       0x2890817e2778b37,
	"oja/centred+keep":        0x581902a9507315dd,
	"oja/mean+padded":         0xfb095055b88cc865,
	"oja/empty":               0x99feed6de0b0f300,
	"nonprivate/per-sample":   0x5bbd5bed5ab3bd75,
	"nonprivate/minibatch":    0xb8c88d60d8224aa0,
}

// TestRunSourceBitIdentical: every golden case gives the recorded result
// through Plan.Run on the matrix, and through RunSource on rows.FromDense,
// on a stream of random batch sizes (collected first) and on a
// RandomAccess source that is not a matrix (read by one goroutine).
func TestRunSourceBitIdentical(t *testing.T) {
	for _, c := range goldenCases() {
		x := c.data()
		srcs := map[string]func() rows.Source{
			"dense":  func() rows.Source { return rows.FromDense(x) },
			"jitter": func() rows.Source { return &jitterSource{x: x, d: c.d, seed: c.seed} },
			"index":  func() rows.Source { return &indexSource{t: t, x: x, d: c.d} },
		}
		run := func(how string) uint64 {
			p, err := c.plan()
			if err != nil {
				t.Fatal(c.name, err)
			}
			c.options(p)
			var r *Result
			if how == "matrix" {
				r, err = p.Run(context.Background(), x)
			} else {
				r, err = p.RunSource(context.Background(), srcs[how]())
			}
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, how, err)
			}
			return digest(r)
		}
		for _, how := range []string{"matrix", "dense", "jitter", "index"} {
			if got := run(how); got != goldenDigests[c.name] {
				t.Errorf("%s, %s: digest %#x, want %#x", c.name, how, got, goldenDigests[c.name])
			}
		}
	}
	x := goldenCase{n: 2000, d: 4, seed: 12, bad: true}.data()
	for name, o := range map[string]Options{
		"nonprivate/per-sample": {Gap: 0.5, Noise: noise.NewSeeded(12)},
		"nonprivate/minibatch":  {Gap: 0.5, Steps: 7, Noise: noise.NewSeeded(13), Workers: 2},
	} {
		r, err := Oja(context.Background(), x, o)
		if err != nil {
			t.Fatal(name, err)
		}
		if got := digest(r); got != goldenDigests[name] {
			t.Errorf("%s: digest %#x, want %#x", name, got, goldenDigests[name])
		}
	}
}

// TestRunSourceRefuses: a missing source, a wrong width, a failing or
// cancelled stream and too many rows are refused with messages that name
// no private count; too many rows are refused before any row is read.
func TestRunSourceRefuses(t *testing.T) {
	pl, err := PlanDPPCA(Options{Eps: 0.5, Delta: 1e-7}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x := mat.NewDense(5000, 3, nil)
	if _, err := pl.RunSource(ctx, nil); err == nil || err.Error() != "dppca dppca: no data source" {
		t.Errorf("nil source: %v", err)
	}
	if _, err := pl.RunSource(ctx, &jitterSource{x: x, d: 2}); err == nil || err.Error() != "dppca dppca: the data have 2 columns but the plan was made for d=3" {
		t.Errorf("wrong width: %v", err)
	}
	_, err = pl.RunSource(ctx, &jitterSource{x: x, d: 3, fail: 1234})
	if err == nil || err.Error() != "dppca dppca: reading the data: disk on fire" {
		t.Errorf("failing source: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, src := range []rows.Source{&jitterSource{x: x, d: 3}, &indexSource{t: t, x: x, d: 3}, rows.FromDense(x)} {
		if _, err := pl.RunSource(cctx, src); !errors.Is(err, context.Canceled) {
			t.Errorf("%T, cancelled context: %v", src, err)
		}
	}
	huge := &indexSource{t: t, x: x, d: 3, n: MaxRows + 1, noRead: true}
	if _, err := pl.RunSource(ctx, huge); err == nil || err.Error() != errTooManyRows(MethodDPPCA).Error() || strings.Contains(err.Error(), fmt.Sprint(MaxRows+1)) {
		t.Errorf("too many rows: %v", err)
	}
	var nilPlan *Plan
	if _, err := nilPlan.RunSource(ctx, rows.FromDense(x)); err == nil || err.Error() != "dppca: Run needs a plan from PlanDPPCA or PlanPrivateOja" {
		t.Errorf("nil plan: %v", err)
	}
}

// jitterSource serves the rows of x (d columns) in batches of random
// sizes, without RandomAccess; fail > 0 makes it fail after that many rows.
type jitterSource struct {
	x    *mat.Dense
	d    int
	seed uint64
	fail int
}

func (s *jitterSource) Dim() int { return s.d }

func (s *jitterSource) Scan(ctx context.Context) (rows.Cursor, error) {
	return &jitterCursor{s: s, rng: rand.New(rand.NewPCG(s.seed, 1))}, nil
}

type jitterCursor struct {
	s    *jitterSource
	rng  *rand.Rand
	next int
}

func (c *jitterCursor) Next(dst *rows.Batch) error {
	dst.N = 0
	n := 0
	if !c.s.x.IsEmpty() {
		n, _ = c.s.x.Dims()
	}
	if c.s.fail > 0 && c.next >= c.s.fail {
		return errors.New("disk on fire")
	}
	if c.next >= n {
		return io.EOF
	}
	d := c.s.d
	k := min(1+c.rng.IntN(dst.Cap(d)), n-c.next)
	if c.s.fail > 0 {
		k = min(k, c.s.fail-c.next)
	}
	for i := range k {
		copy(dst.X[i*d:(i+1)*d], c.s.x.RawRowView(c.next + i)[:d])
	}
	c.next += k
	dst.N = k
	return nil
}

func (c *jitterCursor) Close() error { return nil }

// indexSource is a RandomAccess source that is not a *rows.Dense: it
// fails the test if ReadRow is called from two goroutines at once (the
// interface does not promise that it may be), or at all when noRead. n > 0
// overrides the row count.
type indexSource struct {
	t      *testing.T
	x      *mat.Dense
	d, n   int
	noRead bool
	busy   atomic.Int32
}

func (s *indexSource) Dim() int { return s.d }

func (s *indexSource) NumRows() int {
	if s.n > 0 {
		return s.n
	}
	if s.x.IsEmpty() {
		return 0
	}
	r, _ := s.x.Dims()
	return r
}

func (s *indexSource) ReadRow(i int, dst []float64) {
	if s.noRead {
		s.t.Errorf("ReadRow(%d) called", i)
	}
	if s.busy.Add(1) != 1 {
		s.t.Errorf("concurrent ReadRow")
	}
	copy(dst, s.x.RawRowView(i)[:s.d])
	s.busy.Add(-1)
}

func (s *indexSource) Scan(ctx context.Context) (rows.Cursor, error) {
	return rows.FromDense(s.x).Scan(ctx)
}

// goldenCase is one seeded run whose result the matrix-only implementation
// (before rows.Source) digested; see goldenDigests.
type goldenCase struct {
	name string
	plan func() (*Plan, error)
	n, d int
	bad  bool // plant non-finite rows
	seed uint64
}

func goldenCases() []goldenCase {
	// The digests predate the whole-budget default: the DP-PCA cases keep
	// the paper's split, which still checks every bit of the run.
	dp := func(o Options, d int) func() (*Plan, error) {
		return func() (*Plan, error) { o.PaperSplit = true; return PlanDPPCA(o, d) }
	}
	oja := func(o Options, d int) func() (*Plan, error) {
		return func() (*Plan, error) { return PlanPrivateOja(o, d) }
	}
	an := CalibAnalytic
	return []goldenCase{
		{"dppca/pairs+shuffle", dp(Options{Eps: 8, Delta: 1e-5, Steps: 2, Calibration: an}, 4), 40000, 4, false, 1},
		{"dppca/pairs+shuffle+bad", dp(Options{Eps: 8, Delta: 1e-5, Steps: 2, Calibration: an}, 4), 40001, 4, true, 2},
		{"dppca/centred+keep", dp(Options{Eps: 8, Delta: 1e-5, Steps: 3, Calibration: an, Centred: true, KeepOrder: true}, 4), 30000, 4, false, 3},
		{"dppca/mean+shuffle", dp(Options{Eps: 8, Delta: 1e-5, Steps: 2, Calibration: an, Mean: []float64{0.1, -0.2, 0.3, 0, 1}}, 5), 30000, 5, true, 4},
		{"dppca/padded", dp(Options{Eps: 1, Delta: 1e-5, Steps: 3, Calibration: an}, 4), 301, 4, false, 5},
		{"dppca/empty", dp(Options{Eps: 1, Delta: 1e-5, Steps: 3, Calibration: an}, 4), 0, 4, false, 6},
		{"dppca/paper", dp(Options{Eps: 0.8, Delta: 1e-6, Steps: 1, Centred: true}, 3), 60000, 3, true, 7},
		{"oja/pairs+shuffle", oja(Options{Eps: 0.5, Delta: 1e-6, Steps: 5, Beta: 2, Gap: 0.5}, 6), 4001, 6, true, 8},
		{"oja/centred+keep", oja(Options{Eps: 2, Delta: 1e-6, Steps: 4, Beta: 3, Gap: 0.5, Centred: true, KeepOrder: true, Calibration: an}, 6), 3000, 6, false, 9},
		{"oja/mean+padded", oja(Options{Eps: 2, Delta: 1e-6, Steps: 50, Beta: 3, Gap: 0.5, Mean: []float64{1, 2, 3}, Calibration: an}, 3), 31, 3, true, 10},
		{"oja/empty", oja(Options{Eps: 2, Delta: 1e-6, Steps: 5, Beta: 3, Gap: 0.5, Calibration: an}, 3), 0, 3, false, 11},
	}
}

// data returns the case's rows: Gaussian with spread-out scales
// (so that any change of order changes the bits), with a NaN and an
// infinite row planted when bad.
func (c goldenCase) data() *mat.Dense {
	if c.n == 0 {
		return &mat.Dense{}
	}
	rng := rand.New(rand.NewPCG(c.seed, 99))
	x := mat.NewDense(c.n, c.d, nil)
	for i := range c.n {
		for j := range c.d {
			x.Set(i, j, rng.NormFloat64()*math.Pow(2, float64(rng.IntN(12)-6))*float64(1+j%2))
		}
	}
	if c.bad {
		x.Set(c.n/3, 1, math.NaN())
		x.Set(c.n/2, 0, math.Inf(-1))
	}
	return x
}

func (c goldenCase) options(p *Plan) {
	p.opt.Noise = noise.NewSeeded(c.seed)
	p.opt.Workers = 1 + int(c.seed%3)
}

// digest hashes every field of a result bit for bit.
func digest(r *Result) uint64 {
	h := fnv.New64a()
	put := func(v float64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	for _, v := range r.Components.RawMatrix().Data {
		put(v)
	}
	for _, v := range r.Eigenvalues {
		put(v)
	}
	for _, v := range r.NoiseStd {
		put(v)
	}
	fmt.Fprintf(h, "|%s|%d|%d|%d|%d|%s|%s|%v", r.Method, r.Steps, r.Batch, r.Records, r.Skipped, r.Calibration, r.Note, r.Cost)
	return h.Sum64()
}
