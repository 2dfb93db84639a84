package bench

// classify-jl: the practical variants of seed 004's Algorithm 3 (JL
// features and the exponential mechanism, federated.md §3.5) on a public
// synthetic recipe. Seed 004 reports no experiment for Algorithm 3
// (federated.md §3.4), so the recipe is this package's: users share a
// k-dimensional representation U* of d features, user i's label is the sign
// of ⟨s, v_i*⟩ for the record's latent factors s, flipped with probability
// 0.1.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/jlclass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

func init() {
	Register(Workload{
		Name: "classify-jl",
		Summary: "JL features + exponential mechanism (seed 004 Alg 3, practical variants): d=50, k=2, ρ=0.5 (k′=4), 1000 users × 20 records, " +
			"1000 candidates, ε∈{1,2,4,8}, δ=1e-6 (fedrep-jl); pool, fedrep-jl, random, nonprivate-pool; error = test 0-1 loss (floor 0.1)",
		Run: runClassifyJL,
	})
}

// The recipe's fixed parameters.
const (
	cjlRecords    = 20   // per user: 10 score the candidates, 10 fit the head
	cjlTest       = 50   // fresh test records per evaluated user
	cjlEvalUsers  = 300  // users whose test loss is averaged
	cjlFlip       = 0.1  // label noise
	cjlFeatNoise  = 0.05 // per-coordinate feature noise around U*·s
	cjlRho        = 0.5
	cjlCandidates = 1000
)

// classifyData is one draw of the recipe.
type classifyData struct {
	d, k   int
	ustar  *mat.Dense
	x      *mat.Dense // all users' records, user after user
	y      []float64
	units  []int32
	testX  []*mat.Dense // per evaluated user
	testY  [][]float64
	scaled float64
}

func newClassifyData(seed uint64, n, d, k int) *classifyData {
	r := rand.New(rand.NewPCG(seed, 0xc1a55))
	g := mat.NewDense(d, k, nil)
	for i := range d {
		for j := range k {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	cd := &classifyData{d: d, k: k, ustar: mat.DenseCopyOf(q.Slice(0, d, 0, k))}
	// Rows have norm about √(k + σ²d); scale them to about 1/2 so that the
	// clip r = 1 keeps nearly all of them.
	cd.scaled = 0.5 / math.Sqrt(float64(k)+cjlFeatNoise*cjlFeatNoise*float64(d))
	draw := func(v []float64, m int) (*mat.Dense, []float64) {
		x := mat.NewDense(m, d, nil)
		y := make([]float64, m)
		s := make([]float64, k)
		for j := range m {
			dot := 0.0
			for c := range k {
				s[c] = r.NormFloat64()
				dot += s[c] * v[c]
			}
			row := x.RawRowView(j)
			for i := range d {
				a := cjlFeatNoise * r.NormFloat64()
				for c := range k {
					a += cd.ustar.At(i, c) * s[c]
				}
				row[i] = cd.scaled * a
			}
			y[j] = 1
			if dot < 0 {
				y[j] = -1
			}
			if r.Float64() < cjlFlip {
				y[j] = -y[j]
			}
		}
		return x, y
	}
	cd.x = mat.NewDense(n*cjlRecords, d, nil)
	for i := range n {
		v := make([]float64, k)
		for c := range v {
			v[c] = r.NormFloat64()
		}
		x, y := draw(v, cjlRecords)
		for j := range cjlRecords {
			copy(cd.x.RawRowView(i*cjlRecords+j), x.RawRowView(j))
			cd.units = append(cd.units, int32(i))
		}
		cd.y = append(cd.y, y...)
		if i < cjlEvalUsers {
			tx, ty := draw(v, cjlTest)
			cd.testX, cd.testY = append(cd.testX, tx), append(cd.testY, ty)
		}
	}
	return cd
}

func (cd *classifyData) source(n int) (rows.Source, error) {
	src, err := rows.FromDense(cd.x).WithLabels(cd.y)
	if err != nil {
		return nil, err
	}
	return src.WithUnits(cd.units, n)
}

// testLoss is the mean over the evaluated users of the test 0-1 loss of
// sign(⟨x, U_priv v_i⟩), each user's head v_i fitted on its own second
// half of records (jlclass.User.Head, Algorithm 3 line 6).
func (cd *classifyData) testLoss(ctx context.Context, src rows.Source, res *jlclass.Result) (float64, error) {
	psrc, err := jlclass.Project(src, res.M, 1)
	if err != nil {
		return 0, err
	}
	users, err := jlclass.UsersFromSource(ctx, psrc)
	if err != nil {
		return 0, err
	}
	var loss float64
	for i := range cd.testX {
		v := users[i].Head(res.Util, res.Dirs)
		loss += 1 - float64(jlclass.Correct(cd.testX[i], cd.testY[i], res.U, v))/float64(cjlTest)
	}
	return loss / float64(len(cd.testX)), nil
}

func runClassifyJL(ctx context.Context, cfg Config) ([]Row, error) {
	n := orDefault(cfg.N, 1000)
	d := orDefault(cfg.D, 50)
	k := orDefault(cfg.K, 2)
	seeds := orDefault(cfg.Seeds, pick(cfg.Quick, 3, 10))
	grid := epsGrid(cfg, pickF(cfg.Quick, []float64{1, 8}, []float64{1, 2, 4, 8}))
	delta := deltaOf(cfg)
	const name = "classify-jl"
	if n < cjlEvalUsers {
		return nil, fmt.Errorf("%s: needs at least %d users (the evaluated ones), got %d", name, cjlEvalUsers, n)
	}
	var out []Row
	for s := 0; s < seeds; s++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		cd := newClassifyData(uint64(s), n, d, k)
		src, err := cd.source(n)
		if err != nil {
			return out, err
		}
		row := func(method string, eps float64, loss, secs float64, more map[string]any) Row {
			ex := map[string]any{"metric": "test-0-1-loss", "users": n, "m": cjlRecords, "rho": cjlRho, "candidates": cjlCandidates}
			for key, v := range more {
				ex[key] = v
			}
			return Row{Workload: name, Method: method, N: n, D: d, K: k, Eps: eps, Delta: delta,
				Seed: uint64(s), Error: loss, Seconds: secs, Extra: ex}
		}
		// One public pool per seed, shared by pool, random and
		// nonprivate-pool, so that they differ only in how they choose.
		base := jlclass.Options{Variant: jlclass.Pool, K: k, Rho: cjlRho, Candidates: cjlCandidates, Clip: 1, Eps: 1,
			Noise: noise.NewSeeded(NoiseSeed(name, s, "public"))}
		pubPlan, err := jlclass.PlanRun(base, d, 0)
		if err != nil {
			return out, err
		}
		pub := pubPlan.Draw()
		psrc, err := jlclass.Project(src, pub.M, 1)
		if err != nil {
			return out, err
		}
		users, err := jlclass.UsersFromSource(ctx, psrc)
		if err != nil {
			return out, err
		}
		scoreStart := time.Now()
		tot, err := jlclass.Totals(ctx, pub, users, 0)
		if err != nil {
			return out, err
		}
		// Every method's time includes the scoring, which the pool and the
		// baseline each need once.
		scoreSecs := time.Since(scoreStart).Seconds()
		choose := func(method string, eps float64, pick func() (int, error)) error {
			start := time.Now()
			idx, err := pick()
			if err != nil {
				return fmt.Errorf("%s %s seed %d: %w", name, method, s, err)
			}
			res := &jlclass.Result{Util: pub.Candidates[idx], M: pub.M, Dirs: pub.Dirs, Index: idx}
			var u mat.Dense
			u.Mul(pub.M.T(), res.Util)
			res.U = &u
			secs := time.Since(start).Seconds()
			if method != "random" {
				secs += scoreSecs
			}
			loss, err := cd.testLoss(ctx, src, res)
			if err != nil {
				return err
			}
			more := map[string]any{"k_prime": pubPlan.KPrime}
			if eps == 0 {
				more["setting"] = "non-private"
			}
			out = append(out, row(method, eps, loss, secs, more))
			return nil
		}
		if cfg.WantMethod("random") {
			// A data-independent candidate: the pool's first.
			if err := choose("random", 0, func() (int, error) { return 0, nil }); err != nil {
				return out, err
			}
		}
		if cfg.WantMethod("nonprivate-pool") {
			if err := choose("nonprivate-pool", 0, func() (int, error) { return jlclass.BestCandidate(tot), nil }); err != nil {
				return out, err
			}
		}
		for _, eps := range grid {
			if cfg.WantMethod("pool") {
				opt := base
				opt.Eps = eps
				opt.Noise = noise.NewSeeded(NoiseSeed(name, s, "pool", eps))
				pl, err := jlclass.PlanRun(opt, d, 0)
				if err != nil {
					return out, err
				}
				if err := choose("pool", eps, func() (int, error) { return pl.SelectFromTotals(tot), nil }); err != nil {
					return out, err
				}
			}
			if cfg.WantMethod("fedrep-jl") {
				opt := jlclass.Options{Variant: jlclass.FedRepJL, K: k, Rho: cjlRho, Clip: 1, Eps: eps, Delta: delta,
					Noise: noise.NewSeeded(NoiseSeed(name, s, "fedrep-jl", eps)), BatchSeed: NoiseSeed(name, s, "batches")}
				pl, err := jlclass.PlanRun(opt, d, n)
				if err != nil {
					return out, err
				}
				start := time.Now()
				res, err := pl.Run(ctx, src)
				secs := time.Since(start).Seconds()
				if err != nil {
					return out, fmt.Errorf("%s fedrep-jl ε=%v seed %d: %w", name, eps, s, err)
				}
				loss, err := cd.testLoss(ctx, src, res)
				if err != nil {
					return out, err
				}
				out = append(out, row("fedrep-jl", eps, loss, secs, map[string]any{"k_prime": pl.KPrime,
					"iters": pl.FedRep.Iters, "eta": pl.FedRep.Eta, "noise_multiplier": pl.FedRep.StepMultiplier}))
			}
		}
	}
	return out, nil
}
