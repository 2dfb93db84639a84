package release

// private_classify_jl: practical variants of Algorithm 3 of Snedeker, Zhou
// and Bassily, "Private Model Personalization Revisited" (ICML 2025, seed
// 004): JL features and the exponential mechanism, as implemented by
// mechanisms/jlclass; federated.md §3.5.

import (
	"context"
	"fmt"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
	"github.com/privnotes/privnotes/mechanisms/jlclass"
)

// planClassifyJL validates a private_classify_jl call from public facts
// and plans it. The release travels as a *FedRep: like private_fedrep's, it
// is one d×k shared representation (the wire form is the same).
func planClassifyJL(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateClassifyJL.Name
	sc := src.Schema
	if sc.Unit != "user" {
		return nil, Errorf(NameArgumentError, "%s needs a dataset registered with --unit user:COLUMN (user-level privacy); %q has unit %s", fn, src.Name, UnitString(sc))
	}
	if sc.Label == "" {
		return nil, Errorf(NameArgumentError, "%s needs a dataset registered with a --label column (the class, read by sign: > 0 is +1); %q has none", fn, src.Name)
	}
	variant, err := jlclass.ParseVariant(a.Str("variant"))
	if err != nil {
		return nil, argErr(fn, err)
	}
	nb, err := neighbourOf(fn, a, src)
	if err != nil {
		return nil, err
	}
	clip, err := clipOf(fn, a, sc)
	if err != nil {
		return nil, err
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	n := 0
	if variant == jlclass.FedRepJL {
		if nb != accounting.ReplaceOne {
			return nil, Errorf(NameArgumentError, "%s: variant fedrep-jl supports only replace-one neighbours: FedRep averages over the users, and under add-remove their number is private (variant pool supports both)", fn)
		}
		if !(delta > 0) {
			return nil, Errorf(NameArgumentError, "%s: variant fedrep-jl adds Gaussian noise and needs delta > 0 (e.g. delta=1e-6); variant pool is pure ε", fn)
		}
		// FedRep averages over the users: their number must be public.
		if n, err = publicUnits(fn, "variant fedrep-jl (FedRep averages over the users)", src); err != nil {
			return nil, err
		}
	}
	p := &Plan{Func: fn, Method: "jlclass/" + variant.String(), Eps: eps, Delta: delta, Columns: sc.Columns}
	opt := jlclass.Options{Variant: variant, K: a.Int("k"), Rho: a.Float("rho"), Gamma: a.Float("gamma"),
		Candidates: a.Int("candidates"), ScoreMargin: a.Float("score_margin"), Clip: clip,
		Eps: eps, Delta: delta, Neighbour: nb, Calibration: fedrep.CalibZCDP, Noise: env.sampler()}
	if variant == jlclass.FedRepJL {
		opt.Progress = p.progress.step
		p.reportsSteps(jlclass.DefaultIters)
	}
	pl, err := jlclass.PlanRun(opt, sc.D, n)
	if err != nil {
		return nil, argErr(fn, err)
	}
	p.Cost, p.Note = pl.Cost, pl.Note
	extra := map[string]any{"variant": variant.String(), "k_prime": pl.KPrime, "clip": clip, "neighbour": nb.String()}
	if variant == jlclass.Pool {
		p.Noise = fmt.Sprintf("exponential mechanism over %d candidates, per-user score in [0, 1] (sensitivity 1 on the sum), sampled exactly at ε′=%.6g", pl.Candidates, pl.EffectiveEps)
		extra["candidates"] = pl.Candidates
		extra["effective_eps"] = pl.EffectiveEps
	} else {
		p.Noise = fmt.Sprintf("noise multiplier %.4g per round (init %.4g); per-user clip ψ=%.4g", pl.FedRep.StepMultiplier, pl.FedRep.InitMultiplier, clip)
		extra["rounds"] = pl.FedRep.Iters
		extra["lr"] = pl.FedRep.Eta
		extra["calibration"] = pl.FedRep.Calibration.String()
	}
	p.Params = publicParams(a, extra)
	if variant == jlclass.Pool {
		p.Params[ErrorParam] = selectionModel(pl.Candidates, pl.EffectiveEps)
	} else {
		p.Params[ErrorParam] = noIntervalModel(whyRepresentation)
	}
	env.jlMemory(p, src, pl, n)
	p.run = func(ctx context.Context, data *Data) (any, error) {
		r, err := pl.Run(ctx, data.Rows)
		if err != nil {
			return nil, err
		}
		return &FedRep{U: r.U}, nil
	}
	return p, nil
}

// jlMemory is private_classify_jl's estimate: the JL map (d×k′), and the
// candidates' k′×k bases and their scores (pool), which holds every user's
// projected rows (k′ features and the label, counted in RowBytes: the
// number of users is private there), or FedRep on k′ features over the n
// public users (fedrep-jl), each keeping at most a public number of
// records, as private_fedrep's (recordsCap).
func (env *Local) jlMemory(p *Plan, src Ref, pl *jlclass.Plan, n int) {
	d, k, kp := src.Schema.D, pl.K, pl.KPrime
	m := add(scanMemory(readWidth(src)), mul(i64(d), i64(kp), 8, 2))
	facts := fmt.Sprintf("d=%d, k′=%d, k=%d, %d candidate(s)", d, kp, k, pl.Candidates)
	if pl.Variant == jlclass.FedRepJL {
		m, pl.MaxRecords = env.recordsCap(add(m, fedRepMemory(n, kp, k, fedrep.MinRecords)), n, fedRepRowBytes(kp))
		p.Note += fmt.Sprintf("; each user's first %d records in row order are used (a public cap from the memory limit, the %d users and k′; user-level privacy covers any rule applied to one user's records)", pl.MaxRecords, n)
		p.setMemory(m, fmt.Sprintf("%d public users, d=%d, k′=%d, k=%d", n, d, kp, k), "Lower k or rho")
		return
	}
	m = add(m, mul(i64(max(pl.Candidates, 1)), add(mul(i64(kp), i64(k), 8, 2), 64)))
	p.setMemory(m, facts, "Lower k, rho or candidates")
	p.RowBytes = add(fedRepRowBytes(kp), 64)
}
