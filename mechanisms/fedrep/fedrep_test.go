package fedrep

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// makeUsers draws the §2.5 recipe at a given size.
func makeUsers(t testing.TB, seed uint64, n, m, d, k int) (*synth.FedRepData, []*User) {
	t.Helper()
	data, err := synth.FedRep(seed, n, m, d, k, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	users := make([]*User, n)
	for i := range users {
		x, y := data.User(i)
		if users[i], err = NewUserSeeded(x, y, seed<<32|uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	return data, users
}

func populationMSE(t testing.TB, data *synth.FedRepData, users []*User, u *mat.Dense) float64 {
	t.Helper()
	_, k := u.Dims()
	heads := mat.NewDense(len(users), k, nil)
	for i, us := range users {
		v, err := us.Personalize(u)
		if err != nil {
			t.Fatal(err)
		}
		heads.SetRow(i, v)
	}
	mse, err := data.PopulationMSE(u, heads)
	if err != nil {
		t.Fatal(err)
	}
	return mse
}

// The spec's calibration table for the experiment (federated.md §2.3:
// n = 20000, ψ = 10, T = 5, δ = 1e-6, f = 0.2, replace-one, GDP).
func TestPlanMatchesSpecTable(t *testing.T) {
	rows := []struct{ eps, sigma, zStep, zInit float64 }{
		{1, 1.06e-2, 10.56, 9.45},
		{2, 5.58e-3, 5.58, 4.99},
		{4, 2.98e-3, 2.98, 2.67},
		{8, 1.63e-3, 1.63, 1.46},
	}
	for _, r := range rows {
		pl, err := PlanRun(Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: r.eps, Delta: 1e-6}, 50, 20000)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pl.StepMultiplier-r.zStep) > 0.006 || math.Abs(pl.InitMultiplier-r.zInit) > 0.006 {
			t.Errorf("ε=%v: multipliers step %.4g init %.4g, spec %.4g and %.4g", r.eps, pl.StepMultiplier, pl.InitMultiplier, r.zStep, r.zInit)
		}
		// σ̂ is the std of the noise in the released average: the std on
		// the sum divided by n.
		if math.Abs(pl.StepAverageStd-r.sigma) > 0.006*r.sigma || math.Abs(pl.StepStd/20000-r.sigma) > 0.006*r.sigma {
			t.Errorf("ε=%v: σ̂ = %.4g (sum std %.4g), spec %.3g", r.eps, pl.StepAverageStd, pl.StepStd, r.sigma)
		}
		// The sums of the clipped messages move by 2ψ when a user is
		// replaced, whatever n.
		if pl.StepSensitivity != 2*10.0 || pl.InitSensitivity != 2*20.0 {
			t.Errorf("sensitivities %g, %g; want 2ψ", pl.StepSensitivity, pl.InitSensitivity)
		}
		// μ* follows from the spec's step multiplier alone:
		// μ* = 1/(z_step·√((1−f)/T)) with f = 0.2, T = 5 (ExamplePlanRun
		// prints it for ε = 1: 1/(10.56·0.4) = 0.2367).
		if want := 1 / (r.zStep * math.Sqrt(0.8/5)); math.Abs(pl.Cost.Mu-want) > 0.006*want {
			t.Errorf("ε=%v: cost μ = %.4g, spec multiplier gives %.4g", r.eps, pl.Cost.Mu, want)
		}
		if err := pl.Cost.Validate(); err != nil || pl.Cost.Kind != accounting.GDP {
			t.Errorf("cost %v: %v", pl.Cost, err)
		}
		// The split composes to exactly μ*: μ_init² + T·μ_step² = μ*².
		mu := accounting.MuForTarget(r.eps, 1e-6)
		total := 1/(pl.InitMultiplier*pl.InitMultiplier) + 5/(pl.StepMultiplier*pl.StepMultiplier)
		if math.Abs(total-mu*mu) > 1e-9*mu*mu {
			t.Errorf("ε=%v: Σμ² = %g, μ*² = %g", r.eps, total, mu*mu)
		}
	}
	ar, err := PlanRun(Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 1, Delta: 1e-6, Neighbour: accounting.AddRemove}, 50, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if ar.StepSensitivity != 10.0 || ar.InitSensitivity != 20.0 {
		t.Errorf("add-remove sensitivities %g, %g; want ψ", ar.StepSensitivity, ar.InitSensitivity)
	}
	z, err := PlanRun(Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 1, Delta: 1e-6, Calibration: CalibZCDP}, 50, 20000)
	if err != nil {
		t.Fatal(err)
	}
	rho := accounting.RhoForTarget(1, 1e-6)
	if z.Cost.Kind != accounting.ZCDP || math.Abs(1/(z.StepMultiplier*z.StepMultiplier)/2*5/0.8-rho) > 1e-9*rho {
		t.Errorf("zCDP plan: cost %v, step multiplier %g", z.Cost, z.StepMultiplier)
	}
}

// TestPlanRejectsBadOptions: each refusal is the message meant for it.
func TestPlanRejectsBadOptions(t *testing.T) {
	ok := Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 1, Delta: 1e-6}
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"k", func(o *Options) { o.K = 0 }, "fedrep: k=0: the representation dimension must satisfy 1 ≤ k ≤ d=10"},
		{"iters", func(o *Options) { o.Iters = 0 }, "fedrep: iters=0: the number of rounds T must be in 1..10000"},
		{"eta", func(o *Options) { o.Eta = -1 }, "fedrep: eta=-1: the step size must be a number in [1e-100, 1e+100]"},
		{"psi", func(o *Options) { o.Psi = 0 }, "fedrep: psi=0: the gradient clipping bound must be a number in [1e-100, 1e+100] (the experiment uses 10)"},
		{"psi_init", func(o *Options) { o.PsiInit = math.Inf(1) }, "fedrep: psi_init=+Inf: the initialisation clipping bound must be a number in [1e-100, 1e+100] (or give a public start)"},
		{"eps", func(o *Options) { o.Eps = math.NaN() }, "fedrep: eps=NaN: the privacy parameter eps must be a finite number > 0"},
		{"delta", func(o *Options) { o.Delta = 0 }, "fedrep: delta=0: delta must satisfy 0 < delta < 1 (e.g. 1e-6; choose δ without looking at the data)"},
		{"frac", func(o *Options) { o.InitFrac = 1 }, "fedrep: init fraction 1: the share of the budget for the initialisation must be in [0.001, 0.999] (0 for the default 0.2)"},
		{"neighbour", func(o *Options) { o.Neighbour = 7 }, "fedrep: invalid neighbour relation 7"},
		{"calibration", func(o *Options) { o.Calibration = 7 }, "fedrep: invalid calibration 7: use CalibGDP or CalibZCDP"},
		{"start", func(o *Options) { o.Start = mat.NewDense(3, 2, nil) }, "fedrep: public start is 3×2; need d×k = 10×2"},
		{"batch", func(o *Options) { o.Batch = -2 }, "fedrep: batch=-2 must be in 0..2^30 (0 for the automatic rule)"},
	}
	for _, c := range cases {
		o := ok
		c.mod(&o)
		if _, err := PlanRun(o, 10, 100); err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	// A public start needs no ψ_init.
	o := ok
	o.PsiInit = 0
	o.Start = mat.NewDense(10, 2, nil)
	if _, err := PlanRun(o, 10, 100); err != nil {
		t.Errorf("public start without psi_init rejected: %v", err)
	}
	for _, n := range []int{0, -1, MaxUsers + 1} {
		want := "fedrep: no users"
		if n > 0 {
			want = "fedrep: more than fedrep.MaxUsers = 2^30 users, the most the privacy accounting covers: split the population"
		}
		if _, err := PlanRun(ok, 10, n); err == nil || err.Error() != want {
			t.Errorf("n=%d: error %v, want %q", n, err, want)
		}
	}
	if _, err := Run(context.Background(), nil, ok); err == nil || err.Error() != "fedrep: no users" {
		t.Errorf("no users: error %v", err)
	}
}

// referenceFedRep is an independent, centralised implementation of the
// noise-free algorithm: pair sums for Z_i, normal equations for the heads,
// gonum's QR for the orthonormalisation.
func referenceFedRep(users []*User, k, T int, eta float64) *mat.Dense {
	d := users[0].Dim()
	n := float64(len(users))
	zbar := mat.NewSymDense(d, nil)
	for _, u := range users {
		for j1 := range u.m0 {
			for j2 := range u.m0 {
				if j1 == j2 {
					continue
				}
				c := u.y[j1] * u.y[j2] / float64(u.m0*(u.m0-1)) / n
				for a := range d {
					for b := a; b < d; b++ {
						zbar.SetSym(a, b, zbar.At(a, b)+c*(u.x.At(j1, a)*u.x.At(j2, b)+u.x.At(j2, a)*u.x.At(j1, b))/2)
					}
				}
			}
		}
	}
	var eig mat.EigenSym
	eig.Factorize(zbar, true)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	U := mat.NewDense(d, k, nil)
	for j := range k {
		col := mat.Col(nil, d-1-j, &vecs)
		// Eigenvectors are defined up to sign: use the package's convention
		// (largest-magnitude entry positive).
		big := 0
		for i := range col {
			if math.Abs(col[i]) > math.Abs(col[big]) {
				big = i
			}
		}
		if col[big] < 0 {
			for i := range col {
				col[i] = -col[i]
			}
		}
		U.SetCol(j, col)
	}
	U = qrPositive(U)
	for t := range T {
		g := mat.NewDense(d, k, nil)
		for _, u := range users {
			bv, bg, _ := u.batches(t, T, 0, k)
			// v = (AᵀA)⁻¹Aᵀy with A = X_B U.
			a := mat.NewDense(len(bv), k, nil)
			y := mat.NewVecDense(len(bv), nil)
			for r, j := range bv {
				for c := range k {
					var s float64
					for i := range d {
						s += u.x.At(j, i) * U.At(i, c)
					}
					a.Set(r, c, s)
				}
				y.SetVec(r, u.y[j])
			}
			var ata mat.Dense
			ata.Mul(a.T(), a)
			var aty, v mat.VecDense
			aty.MulVec(a.T(), y)
			if err := v.SolveVec(&ata, &aty); err != nil {
				panic(err)
			}
			for _, j := range bg {
				var pred float64
				for i := range d {
					for c := range k {
						pred += u.x.At(j, i) * U.At(i, c) * v.AtVec(c)
					}
				}
				res := pred - u.y[j]
				for i := range d {
					for c := range k {
						g.Set(i, c, g.At(i, c)+2/float64(len(bg))*res*u.x.At(j, i)*v.AtVec(c)/n)
					}
				}
			}
		}
		var uhat mat.Dense
		uhat.Scale(-eta, g)
		uhat.Add(U, &uhat)
		U = qrPositive(&uhat)
	}
	return U
}

func qrPositive(a *mat.Dense) *mat.Dense {
	d, k := a.Dims()
	var qr mat.QR
	qr.Factorize(a)
	var q, r mat.Dense
	qr.QTo(&q)
	qr.RTo(&r)
	out := mat.NewDense(d, k, nil)
	for j := range k {
		s := 1.0
		if r.At(j, j) < 0 {
			s = -1
		}
		for i := range d {
			out.Set(i, j, s*q.At(i, j))
		}
	}
	return out
}

func TestNonPrivateMatchesReference(t *testing.T) {
	_, users := makeUsers(t, 1, 300, 10, 8, 2)
	res, err := RunNonPrivate(context.Background(), users, Options{K: 2, Iters: 5, Eta: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := referenceFedRep(users, 2, 5, 0.5)
	if !mat.EqualApprox(res.U, want, 1e-9) {
		t.Errorf("FedRep U = %v\nreference %v", mat.Formatted(res.U.T()), mat.Formatted(want.T()))
	}
	if len(res.History) != 6 {
		t.Errorf("history of %d, want T+1 = 6", len(res.History))
	}
	if res.Plan.Private || res.Cost != (accounting.Event{}) || !strings.Contains(res.Note, "NOT differentially private") {
		t.Errorf("the baseline must say it is not private: %v %q", res.Cost, res.Note)
	}
}

// ε = ∞: the private code path with noise removed and bounds too large to
// bite is exactly the non-private algorithm, bit for bit.
func TestZeroNoiseIsNonPrivate(t *testing.T) {
	_, users := makeUsers(t, 2, 200, 10, 6, 2)
	opt := Options{K: 2, Iters: 4, Eta: 0.5, Psi: 1e12, PsiInit: 1e12, Eps: 1, Delta: 1e-6}
	base, err := RunNonPrivate(context.Background(), users, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.knob = &testKnob{noiseScale: 0}
	zero, err := Run(context.Background(), users, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range base.History {
		if !mat.Equal(base.History[i], zero.History[i]) {
			t.Fatalf("U_%d differs between the noise-free private path and the non-private run", i)
		}
	}
	// With biting bounds, the baseline with the same ψ, ψ_init is the
	// ε = ∞ limit of Algorithm 1 (clipping kept, noise removed).
	opt = Options{K: 2, Iters: 4, Eta: 0.5, Psi: 0.5, PsiInit: 0.5, Eps: 1, Delta: 1e-6}
	clipped, err := RunNonPrivate(context.Background(), users, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.knob = &testKnob{noiseScale: 0}
	zero, err = Run(context.Background(), users, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(clipped.U, zero.U) {
		t.Error("clipped baseline differs from the noise-free private path")
	}
	if mat.Equal(clipped.U, base.U) {
		t.Error("bounds of 0.5 did not bite; the test does not exercise clipping")
	}
}

// Every broadcast has orthonormal columns, and U_t+1 is the Q factor of
// Û = U_t − η·(noisy average) with a positive R diagonal.
func TestQRPositiveDiagonal(t *testing.T) {
	_, users := makeUsers(t, 3, 500, 10, 12, 3)
	var aggs []*mat.Dense
	opt := Options{K: 3, Iters: 4, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 2, Delta: 1e-6, Noise: noise.NewSeeded(1)}
	opt.knob = &testKnob{noiseScale: 1, observe: func(step string, _ int, m *mat.Dense) {
		if step == "step" {
			aggs = append(aggs, mat.DenseCopyOf(m))
		}
	}}
	res, err := Run(context.Background(), users, opt)
	if err != nil {
		t.Fatal(err)
	}
	for t0, u := range res.History {
		var g mat.Dense
		g.Mul(u.T(), u)
		if !mat.EqualApprox(&g, eye(3), 1e-10) {
			t.Errorf("U_%d: UᵀU ≠ I to 1e-10", t0)
		}
	}
	for t0, a := range aggs {
		var uhat, r mat.Dense
		uhat.Scale(-0.5, a)
		uhat.Add(res.History[t0], &uhat)
		r.Mul(res.History[t0+1].T(), &uhat)
		for i := range 3 {
			if r.At(i, i) <= 0 {
				t.Errorf("round %d: R[%d,%d] = %g ≤ 0", t0, i, i, r.At(i, i))
			}
			for j := range i {
				if math.Abs(r.At(i, j)) > 1e-10 {
					t.Errorf("round %d: R not upper triangular", t0)
				}
			}
		}
	}
}

func eye(k int) *mat.Dense {
	m := mat.NewDense(k, k, nil)
	for i := range k {
		m.Set(i, i, 1)
	}
	return m
}

// recorder keeps every message the coordinator receives.
type recorder struct {
	federated.Transport[Request, Reply]
	reqs    []Request
	replies [][]Reply
}

func (r *recorder) Round(ctx context.Context, req Request, recv func(int, Reply) error) error {
	r.reqs = append(r.reqs, req)
	var got []Reply
	err := r.Transport.Round(ctx, req, func(i int, rep Reply) error {
		got = append(got, rep)
		return recv(i, rep)
	})
	r.replies = append(r.replies, got)
	return err
}

// The coordinator receives only the declared messages: one d×d Z_i per user
// in the initialisation round and one d×k gradient per user per round;
// never a record, never a head v_i (Reply has no field for one), and the
// result holds only U and its history.
func TestCoordinatorReceivesNoRecords(t *testing.T) {
	const n, m, d, k, T = 40, 10, 6, 2, 3
	data, users := makeUsers(t, 4, n, m, d, k)
	ps := make([]federated.Provider[Request, Reply], n)
	for i, u := range users {
		ps[i] = u
	}
	rec := &recorder{Transport: federated.NewLocal(ps)}
	pl, err := PlanRun(Options{K: k, Iters: T, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 1, Delta: 1e-6}, d, n)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pl.Coordinate(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 1+T {
		t.Fatalf("%d rounds, want %d", len(rec.reqs), 1+T)
	}
	records := map[float64]bool{}
	for _, v := range data.X.RawMatrix().Data {
		records[v] = true
	}
	for _, v := range data.Y {
		records[v] = true
	}
	for r, reps := range rec.replies {
		if len(reps) != n {
			t.Fatalf("round %d: %d replies", r, len(reps))
		}
		for i, rep := range reps {
			var payload []float64
			switch {
			case r == 0 && rep.Z != nil && rep.Grad == nil && rep.Z.SymmetricDim() == d:
				payload = rep.Z.RawSymmetric().Data
			case r > 0 && rep.Grad != nil && rep.Z == nil:
				if rr, cc := rep.Grad.Dims(); rr != d || cc != k {
					t.Fatalf("round %d user %d: %d×%d gradient", r, i, rr, cc)
				}
				payload = rep.Grad.RawMatrix().Data
			default:
				t.Fatalf("round %d user %d: undeclared message %+v", r, i, rep)
			}
			if len(payload) >= m*d {
				t.Errorf("round %d user %d: record-sized payload (%d values)", r, i, len(payload))
			}
			for _, v := range payload {
				if v != 0 && records[v] {
					t.Errorf("round %d user %d: a raw record value reached the coordinator", r, i)
				}
			}
		}
	}
	if res.U == nil || len(res.History) != T+1 {
		t.Errorf("result: U %v, history %d", res.U, len(res.History))
	}
}

func TestContextCancelled(t *testing.T) {
	_, users := makeUsers(t, 5, 50, 10, 5, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, users, Options{K: 2, Iters: 3, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 1, Delta: 1e-6})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run returned %v", err)
	}
}

// Utility on the paper's experiment (federated.md §2.5). The fast variant
// runs at a reduced size (n = 5000 users, d = 20); PRIVNOTES_LONG=1 runs the
// paper's n = 20000, d = 50. Checks (medians over 3 seeds): at ε = 8 the
// population MSE is below 1/10 of local GD's (≈ (1 − m/d)·E‖v*‖², 1.0 fast,
// 1.6 long) and ‖sinΘ(U, U*)‖²_F below 0.1; the MSE at ε = 1 is above the
// MSE at ε = 8 (the privacy error falls with ε); and the noise-free
// baseline (ε = ∞) is at most the ε = 8 value.
func TestPrivateFedRepLearnsRepresentation(t *testing.T) {
	testtier.Long(t)
	n, d := 5000, 20
	if os.Getenv("PRIVNOTES_LONG") == "1" {
		n, d = 20000, 50
	}
	var mse1, mse8, msenp, locals, sins []float64
	for seed := uint64(1); seed <= 3; seed++ {
		data, users := makeUsers(t, 10+seed, n, 10, d, 2)
		for _, eps := range []float64{1, 8} {
			res, err := Run(context.Background(), users, Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 5, Eps: eps, Delta: 1e-6, Noise: noise.NewSeeded(seed)})
			if err != nil {
				t.Fatal(err)
			}
			mse := populationMSE(t, data, users, res.U)
			if eps == 1 {
				mse1 = append(mse1, mse)
			} else {
				mse8 = append(mse8, mse)
				sins = append(sins, pca.SinThetaSq(res.U, data.UStar))
			}
		}
		np, err := RunNonPrivate(context.Background(), users, Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 5})
		if err != nil {
			t.Fatal(err)
		}
		msenp = append(msenp, populationMSE(t, data, users, np.U))
		w := mat.NewDense(len(users), d, nil)
		for i, u := range users {
			w.SetRow(i, u.LocalGD())
		}
		lg, err := data.PopulationMSE(eye(d), w)
		if err != nil {
			t.Fatal(err)
		}
		locals = append(locals, lg)
	}
	t.Logf("n=%d d=%d medians: MSE ε=1 %.3g, ε=8 %.3g, ε=∞ %.3g, local GD %.3g; sin²Θ at ε=8 %.3g",
		n, d, med(mse1), med(mse8), med(msenp), med(locals), med(sins))
	if med(mse8) > med(locals)/10 {
		t.Errorf("median MSE at ε=8 %.3g, local GD %.3g: want below a tenth", med(mse8), med(locals))
	}
	if med(sins) > 0.1 {
		t.Errorf("median sin²Θ(U, U*) = %.3g at ε=8, want ≤ 0.1 (all: %v)", med(sins), sins)
	}
	if !(med(mse1) > med(mse8)) {
		t.Errorf("median MSE %.3g at ε=1 not above %.3g at ε=8", med(mse1), med(mse8))
	}
	if med(msenp) > med(mse8) {
		t.Errorf("noise-free MSE %.3g above the ε=8 MSE %.3g", med(msenp), med(mse8))
	}
}

func med(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
