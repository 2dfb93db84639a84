package fedrep

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// refUsers is a copy of the grouping rule the runtime used before
// UsersFromSource (dsl/runtime/fedrep.go, fedrepUsers and userRows): the
// rows of unit index j in row order, repeated cyclically up to MinRecords,
// MinRecords zero records for an index without rows, indices outside
// [0, n) ignored.
func refUsers(t testing.TB, x *mat.Dense, y []float64, units []int32, n int) []*User {
	t.Helper()
	_, d := x.Dims()
	rs := make([][]int, n)
	for i, u := range units {
		if int(u) >= 0 && int(u) < n {
			rs[u] = append(rs[u], i)
		}
	}
	users := make([]*User, n)
	for j, r := range rs {
		m := max(len(r), MinRecords)
		ux := mat.NewDense(m, d, nil)
		uy := make([]float64, m)
		for k := 0; len(r) > 0 && k < m; k++ {
			i := r[k%len(r)]
			ux.SetRow(k, x.RawRowView(i))
			uy[k] = y[i]
		}
		u, err := NewUserSeeded(ux, uy, uint64(j))
		if err != nil {
			t.Fatal(err)
		}
		users[j] = u
	}
	return users
}

func seeded(j int, x *mat.Dense, y []float64) (*User, error) {
	return NewUserSeeded(x, y, uint64(j))
}

// sameUsers reports the first difference, bit for bit, between two user
// lists.
func sameUsers(t *testing.T, what string, got, want []*User) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d users, want %d", what, len(got), len(want))
	}
	for j := range want {
		g, w := got[j], want[j]
		gr, gc := g.x.Dims()
		wr, wc := w.x.Dims()
		if gr != wr || gc != wc || g.m0 != w.m0 || g.seed != w.seed || len(g.y) != len(w.y) {
			t.Fatalf("%s: user %d is %d×%d (m0 %d, seed %d), want %d×%d (m0 %d, seed %d)", what, j, gr, gc, g.m0, g.seed, wr, wc, w.m0, w.seed)
		}
		for r := range wr {
			if !sameBits(g.x.RawRowView(r), w.x.RawRowView(r)) {
				t.Fatalf("%s: user %d record %d: %v, want %v", what, j, r, g.x.RawRowView(r), w.x.RawRowView(r))
			}
		}
		if !sameBits(g.y, w.y) {
			t.Fatalf("%s: user %d responses %v, want %v", what, j, g.y, w.y)
		}
	}
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// randomUsersData draws rows for n users, each with 0 to 9 rows (so some
// have none and some fewer than MinRecords), shuffled, plus, when outside,
// rows of indices outside [0, n); one row has a NaN and one an infinity.
func randomUsersData(seed uint64, n, d int, outside bool) (*mat.Dense, []float64, []int32) {
	rng := rand.New(rand.NewPCG(seed, 5))
	var units []int32
	for j := range n {
		for range rng.IntN(10) {
			units = append(units, int32(j))
		}
	}
	if outside {
		for range 7 {
			units = append(units, int32(n+rng.IntN(3)), int32(-1-rng.IntN(3)))
		}
	}
	rng.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	m := max(len(units), 1)
	x := mat.NewDense(m, d, nil)
	y := make([]float64, m)
	for i := range m {
		for c := range d {
			x.Set(i, c, rng.NormFloat64()*math.Pow(2, float64(rng.IntN(20)-10)))
		}
		y[i] = rng.NormFloat64()
	}
	if m > 2 {
		x.Set(1, 0, math.NaN())
		y[2] = math.Inf(1)
	}
	if len(units) == 0 { // one row of no user
		units = []int32{-1}
	}
	return x, y, units
}

// TestUsersFromSourceMatchesRuntimeRule: on random data, the users built
// from rows.FromDense and from a stream of random batch sizes are those of
// the runtime's former rule, bit for bit, and a seeded run on them gives
// the same representation.
func TestUsersFromSourceMatchesRuntimeRule(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		n, d := 1+rng.IntN(40), 1+rng.IntN(6)
		if seed == 1 {
			n = 1
		}
		for _, outside := range []bool{false, true} {
			x, y, units := randomUsersData(seed, n, d, outside)
			want := refUsers(t, x, y, units, n)
			if !outside {
				src, err := rows.FromDense(x).WithLabels(y)
				if err != nil {
					t.Fatal(err)
				}
				if src, err = src.WithUnits(units, n); err != nil {
					t.Fatal(err)
				}
				got, err := UsersFromSource(ctx, src, n, seeded)
				if err != nil {
					t.Fatal(err)
				}
				sameUsers(t, "dense", got, want)
			}
			got, err := UsersFromSource(ctx, &unitSource{x: x, y: y, units: units, seed: seed}, n, seeded)
			if err != nil {
				t.Fatal(err)
			}
			sameUsers(t, "stream", got, want)
			if seed == 3 && outside {
				compareRuns(t, got, want, d)
			}
		}
	}
}

// compareRuns runs seeded Private FedRep on two user lists and fails
// unless the released representations agree bit for bit.
func compareRuns(t *testing.T, a, b []*User, d int) {
	t.Helper()
	var us [2]*mat.Dense
	for i, users := range [][]*User{a, b} {
		pl, err := PlanRun(Options{K: 1, Iters: 3, Eta: 0.5, Psi: 2, PsiInit: 2, Eps: 2, Delta: 1e-5, Noise: noise.NewSeeded(7)}, d, len(users))
		if err != nil {
			t.Fatal(err)
		}
		ps := make([]federated.Provider[Request, Reply], len(users))
		for j, u := range users {
			ps[j] = u
		}
		res, err := pl.Coordinate(context.Background(), federated.NewLocal(ps))
		if err != nil {
			t.Fatal(err)
		}
		us[i] = res.U
	}
	if !sameBits(us[0].RawMatrix().Data, us[1].RawMatrix().Data) {
		t.Errorf("runs differ: %v, %v", mat.Formatted(us[0]), mat.Formatted(us[1]))
	}
}

// TestUsersFromSourceRules: refusals name only public facts; rows without
// a unit index belong to no user; no users need no pass; the default
// constructor is NewUser; a failing or cancelled pass fails.
func TestUsersFromSourceRules(t *testing.T) {
	ctx := context.Background()
	x, y, units := randomUsersData(4, 5, 3, false)
	good := &unitSource{x: x, y: y, units: units}
	for _, c := range []struct {
		src  rows.Source
		n    int
		want string
	}{
		{nil, 5, "fedrep: no data source"},
		{good, -1, "fedrep: the number of users must be in 0..fedrep.MaxUsers = 2^30, got -1"},
		{good, MaxUsers + 1, "fedrep: the number of users must be in 0..fedrep.MaxUsers = 2^30, got 1073741825"},
		{&unitSource{x: x, y: y, units: units, d: -1}, 5, "fedrep: the data have no feature column"},
		{&unitSource{x: x, units: units}, 5, "fedrep: the data have no label column (the regression target)"},
		{rows.FromDense(x), 5, "fedrep: the data have no label column (the regression target)"},
		{plainSource{good}, 5, "fedrep: the data carry no user index (rows.Units)"},
	} {
		if _, err := UsersFromSource(ctx, c.src, c.n, seeded); err == nil || err.Error() != c.want {
			t.Errorf("%T, n=%d: %v, want %q", c.src, c.n, err, c.want)
		}
	}

	// A labelled matrix without unit indices: every row is no user's, so
	// every user gets MinRecords zero records.
	lab, _ := rows.FromDense(x).WithLabels(y)
	got, err := UsersFromSource(ctx, lab, 3, seeded)
	if err != nil {
		t.Fatal(err)
	}
	sameUsers(t, "no units", got, refUsers(t, x, y, nil, 3))

	if got, err := UsersFromSource(ctx, &unitSource{x: x, y: y, units: units, fail: 1}, 0, seeded); err != nil || len(got) != 0 {
		t.Errorf("no users: %v, %v", got, err)
	}
	if got, err := UsersFromSource(ctx, good, 5, nil); err != nil || len(got) != 5 || got[0].seed == got[1].seed {
		t.Errorf("NewUser: %v", err)
	}
	_, err = UsersFromSource(ctx, &unitSource{x: x, y: y, units: units, fail: 3}, 5, seeded)
	if err == nil || err.Error() != "fedrep: reading the users' records: disk on fire" {
		t.Errorf("failing source: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	dense, _ := rows.FromDense(x).WithLabels(y)
	if dense, err = dense.WithUnits(units, 5); err != nil {
		t.Fatal(err)
	}
	for _, src := range []rows.Source{good, dense} {
		if _, err := UsersFromSource(cctx, src, 5, seeded); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "fedrep: ") {
			t.Errorf("%T, cancelled: %v", src, err)
		}
	}
	boom := errors.New("constructor")
	if _, err := UsersFromSource(ctx, good, 5, func(int, *mat.Dense, []float64) (*User, error) { return nil, boom }); err != boom {
		t.Errorf("constructor error: %v", err)
	}
}

// unitSource serves rows with labels (nil y: none) and unit indices in
// batches of random sizes, through rows.Labeled and rows.Units only (no
// RandomAccess, unlike rows.Dense); it accepts indices outside [0, n).
// d < 0 reports no columns; fail > 0 fails the pass after that many rows.
type unitSource struct {
	x     *mat.Dense
	y     []float64
	units []int32
	seed  uint64
	d     int
	fail  int
}

func (s *unitSource) Dim() int {
	if s.d < 0 {
		return 0
	}
	_, c := s.x.Dims()
	return c
}

func (s *unitSource) HasLabels() bool { return s.y != nil }

// NumUnits is never used by UsersFromSource: n comes from the caller.
func (s *unitSource) NumUnits() int { return -1 }

func (s *unitSource) Scan(ctx context.Context) (rows.Cursor, error) {
	return &unitCursor{s: s, rng: rand.New(rand.NewPCG(s.seed, 2))}, nil
}

type unitCursor struct {
	s    *unitSource
	rng  *rand.Rand
	next int
}

func (c *unitCursor) Next(b *rows.Batch) error {
	b.N = 0
	s, d := c.s, c.s.Dim()
	if s.fail > 0 && c.next >= s.fail {
		return errors.New("disk on fire")
	}
	if c.next >= len(s.units) {
		return io.EOF
	}
	k := min(1+c.rng.IntN(b.Cap(d)), len(s.units)-c.next)
	for i := range k {
		copy(b.X[i*d:(i+1)*d], s.x.RawRowView(c.next+i))
		if s.y != nil && len(b.Label) >= k {
			b.Label[i] = s.y[c.next+i]
		}
		if len(b.Unit) >= k {
			b.Unit[i] = s.units[c.next+i]
		}
	}
	c.next += k
	b.N = k
	return nil
}

func (c *unitCursor) Close() error { return nil }

// plainSource hides every optional interface but rows.Labeled.
type plainSource struct{ s *unitSource }

func (p plainSource) Dim() int                                      { return p.s.Dim() }
func (p plainSource) HasLabels() bool                               { return p.s.HasLabels() }
func (p plainSource) Scan(ctx context.Context) (rows.Cursor, error) { return p.s.Scan(ctx) }

// BenchmarkUsersFromSource groups 200000 rows (20000 users of 10 records
// on average, d = 50, the shape of the round benchmarks) from a matrix and
// from a stream, against the runtime's former rule on the same matrix.
func BenchmarkUsersFromSource(b *testing.B) {
	const n, m, d = 20000, 10, 50
	rng := rand.New(rand.NewPCG(1, 1))
	x := mat.NewDense(n*m, d, nil)
	y := make([]float64, n*m)
	units := make([]int32, n*m)
	for i := range units {
		units[i] = int32(rng.IntN(n))
		y[i] = rng.NormFloat64()
		for c := range d {
			x.Set(i, c, rng.NormFloat64())
		}
	}
	src, _ := rows.FromDense(x).WithLabels(y)
	src, _ = src.WithUnits(units, n)
	b.Run("dense", func(b *testing.B) {
		for range b.N {
			if _, err := UsersFromSource(context.Background(), src, n, seeded); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream", func(b *testing.B) {
		for range b.N {
			if _, err := UsersFromSource(context.Background(), &unitSource{x: x, y: y, units: units}, n, seeded); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("former", func(b *testing.B) {
		for range b.N {
			refUsers(b, x, y, units, n)
		}
	})
}
