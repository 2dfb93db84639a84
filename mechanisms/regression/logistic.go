package regression

// Logistic regression by noisy full-batch gradient descent in zCDP: the
// Gaussian mechanism on each step's summed gradient (Bassily, Smith and
// Thakurta 2014, "Private empirical risk minimization: efficient
// algorithms and tight error bounds", full-batch variant), composed over
// the public number of steps in zCDP (Bun and Steinke 2016, Lemma 2.3),
// with the discrete Gaussian of mechanisms/noise. Spec: docs/mechanisms.md,
// "Private linear and logistic regression".
//
// Why noisy gradient descent and not objective perturbation (Chaudhuri,
// Monteleoni and Sarwate 2011): objective perturbation is private only at
// the exact minimiser of the perturbed objective, which an iterative
// solver in floating point reaches only approximately, so its guarantee
// would rest on a convergence tolerance the code cannot prove; each noisy
// gradient step is private whatever the iterate, the steps compose in
// zCDP exactly as the ledger accounts, and every step is one streamed pass
// over the rows in rowpass's fixed order.
//
// Rows are made public-bounded as for the linear fit: a = (1, x̂) with the
// features clamped to their public bounds and mapped to [−1, 1] by the
// public affine map x̂_j = (x_j − c_j)/h_j, ‖a‖ ≤ B = √(1 + d), so that
// every feature enters on the same scale whatever its bounds' width; the
// coefficients are mapped back exactly (unscale). The label ℓ ∈ [0, 1] (a numeric label clamped to [0, 1], or 1
// for the declared positive category of a categorical one). The loss is
// L(θ) = (1/n)·Σ log(1 + exp(−s·θᵀa)) + (l2/2)·‖θ‖², s = ±1, whose per-row
// gradient (σ(θᵀa) − ℓ)·a has norm at most B. Step t releases
//
//	g_t = Σ (σ(θ_tᵀa) − ℓ)·a + N(0, σ_g²I)   ℓ2 sensitivity B (add-remove), 2B (replace-one)
//
// plus the rounding excess, with ρ_g = (1 − countShare)·ρ/T per step, and
// one noisy count ñ (sensitivity 1, ρ·countShare) fixes the scale:
// θ_{t+1} = θ_t − η·(g_t/max(ñ, 1) + l2·θ_t), η = 1/(B²/4 + l2), the
// inverse of the loss's smoothness. θ_0 = 0; the last iterate is released.
// The ridge l2 acts on θ over the unit-scaled features: it is public and
// data-independent, and it penalises every feature alike whatever its
// bounds' width.

import (
	"context"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// MaxIters is the most gradient steps a logistic fit takes.
const MaxIters = 10000

// countShare is the share of the logistic fit's zCDP budget spent on the
// noisy row count that scales the gradients.
const countShare = 0.1

// LogisticPlan is a planned noisy gradient descent. Every field is public.
type LogisticPlan struct {
	X         []Bounds
	Iters     int
	L2        float64
	Eps       float64
	Delta     float64
	Neighbour accounting.Neighbour
	// Positive is the index of the positive category of a categorical
	// label (a row's label is 1 iff its value equals it), or −1 for a
	// numeric label clamped to [0, 1].
	Positive int
	// B is the norm bound of an augmented unit-scaled row, √(1 + d), and
	// Step the step η.
	B, Step float64
	// Grad is one step's gradient release (its ρ is per step), Count the
	// row count's.
	Grad, Count Gaussian
	// Event is the exact cost of the whole fit.
	Event accounting.Event
}

// PlanLogistic plans a noisy gradient descent of iters steps with ridge
// l2 on features with public bounds x, at (ε, δ) under nb; positive is the
// positive category's index or −1 for a numeric label. gdp calibrates to
// the exact GDP μ* instead of ρ*(ε, δ). It reads no data.
func PlanLogistic(x []Bounds, positive, iters int, l2, eps, delta float64, nb accounting.Neighbour, gdp bool) (*LogisticPlan, error) {
	b2, err := checkFeatures(x)
	if err != nil {
		return nil, err
	}
	if iters < 1 || iters > MaxIters {
		return nil, ErrIters
	}
	if !(l2 >= 0) || math.IsInf(l2, 0) {
		return nil, ErrL2
	}
	rho, ev, err := target(eps, delta, gdp)
	if err != nil {
		return nil, err
	}
	b := math.Sqrt(b2) * roundUp
	sens := b
	if nb == accounting.ReplaceOne {
		sens = 2 * b
	}
	p := &LogisticPlan{X: append([]Bounds(nil), x...), Iters: iters, L2: l2, Eps: eps, Delta: delta, Neighbour: nb,
		Positive: positive, B: b, Step: 1 / (b2/4 + l2), Event: ev}
	// A term (σ − ℓ)·a_k has magnitude ≤ |a_k| (1 + u): the ℓ2 norm of
	// the terms' bounds is B.
	p.Grad = Gaussian{Sens: up((sens*roundUp + sumExcess(b)) * roundUp), Rho: rho * (1 - countShare) / float64(iters), Coord: len(x) + 1}
	p.Count = Gaussian{Sens: 1, Rho: rho * countShare, Coord: 1}
	for _, g := range []*Gaussian{&p.Grad, &p.Count} {
		if err := g.calibrate(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Width is the number of columns Run reads: the features, then the label.
func (p *LogisticPlan) Width() int { return len(p.X) + 1 }

// label is the public rule for a row's label value.
func (p *LogisticPlan) label(v float64) float64 {
	if p.Positive >= 0 {
		if v == float64(p.Positive) {
			return 1
		}
		return 0
	}
	if v != v {
		return 0
	}
	return min(max(v, 0), 1)
}

// sigmoid is 1/(1 + e^−z), computed without overflow.
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// gradient is the exact-order sum of the per-row gradients at theta (and,
// with count set, the number of rows in its last coordinate).
func (p *LogisticPlan) gradient(ctx context.Context, src rows.Source, theta []float64, count bool) ([]float64, error) {
	d := len(p.X)
	q := d + 1
	m := q
	if count {
		m++
	}
	return rowpass.SumVecScan(ctx, rowpass.Limit(src), m, rowpass.Options{}, false, false, func(dst []float64, b *rows.Batch) {
		a := make([]float64, q)
		a[0] = 1
		for i := range b.N {
			row := b.Row(i, d+1)
			z := theta[0]
			for j, bd := range p.X {
				a[j+1] = bd.unit(row[j])
				z += theta[j+1] * a[j+1]
			}
			r := min(max(sigmoid(z)-p.label(row[d]), -1), 1)
			if r != r {
				r = 0
			}
			for k := range q {
				dst[k] += r * a[k]
			}
			if count {
				dst[q]++
			}
		}
	})
}

// Run fits the model on src (the features, then the label), calling
// progress (if not nil) after each step with the number of steps done. It
// fails only with the source's or ctx's error. Predict of the model gives
// the linear predictor; Probability the positive class's probability.
func (p *LogisticPlan) Run(ctx context.Context, src rows.Source, s *noise.Sampler, progress func(done, total int)) (*Model, error) {
	if src.Dim() != len(p.X)+1 {
		return nil, ErrDim
	}
	q := len(p.X) + 1
	theta := make([]float64, q)
	var n float64
	for t := range p.Iters {
		g, err := p.gradient(ctx, src, theta, t == 0)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if t == 0 {
			cnt := []float64{g[q]}
			s.AddGaussian(cnt, p.Count.Sigma)
			n = max(cnt[0], 1)
			g = g[:q]
		}
		s.AddGaussian(g, p.Grad.Sigma)
		for k := range theta {
			theta[k] -= p.Step * (g[k]/n + p.L2*theta[k])
		}
		if progress != nil {
			progress(t+1, p.Iters)
		}
	}
	return unscale(theta, p.X, 0, 1), nil
}

// Probability is the logistic model's probability of the positive class
// for row: σ(Predict(row)).
func Probability(m *Model, row []float64) float64 { return sigmoid(m.Predict(row)) }
