package release

// private_fedrep: Private FedRep with private initialisation (Snedeker, Zhou
// and Bassily, "Private Model Personalization Revisited", ICML 2025, Alg 1
// and 2), as implemented by mechanisms/fedrep; federated.md §2.

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
)

// Defaults of private_fedrep: the experiment of federated.md §2.5, with
// the step size mechanisms/bench uses for it. The paper's η = 2.5 diverges
// under the spec's gradient convention (factor 2, mean over the batch): a
// noise-free step contracts by |1 − 2η·E v*²| with E v*² = 1, so η = 0.5
// (Lemma 9's η ≤ 1/(2σ²_max)) is the one-step optimum.
const (
	fedrepRounds = 5
	fedrepLR     = 0.5
)

// whyRepresentation is the display's reason why a shared representation
// U carries no interval: its distance to the users' true subspace depends
// on their data (the heads' spread, the subspace's eigengap), which is not
// public.
const whyRepresentation = "the release is a shared representation U (directions), whose distance to the users' true subspace depends on their data (the heads' spread and the eigengap), not on the noise alone; no interval follows from public parameters"

func planFedRep(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateFedRep.Name
	p := &Plan{Func: fn, Method: "fedrep", Eps: a.Float("eps"), Delta: a.Float("delta"), Columns: src.Schema.Columns}
	pl, n, params, err := fedRepPlan(env, src, a, p.progress.step)
	if err != nil {
		return nil, err
	}
	p.Cost, p.Note = pl.Cost, pl.Note
	p.Noise = fmt.Sprintf("noise multiplier %.4g per round (init %.4g); per-user clip ψ=%.4g", pl.StepMultiplier, pl.InitMultiplier, params["psi"])
	p.Params = publicParams(a, params)
	p.Params[ErrorParam] = noIntervalModel(whyRepresentation)
	p.reportsSteps(pl.Iters)
	m, maxRecords := env.fedRepMemory(src, a.Int("k"), n)
	p.setMemory(m, fmt.Sprintf("%d public users, d=%d, k=%d", n, src.Schema.D, a.Int("k")), "Lower k or use a subset with fewer columns")
	p.Note += fmt.Sprintf("; each user's first %d records in row order are used (a public cap from the memory limit, the %d users and d; user-level privacy covers any rule applied to one user's records)", maxRecords, n)
	p.run = func(ctx context.Context, data *Data) (any, error) {
		users, err := env.fedRepUsers(ctx, src, data, a.Int("k"), n)
		if err != nil {
			return nil, err
		}
		ps := make([]federated.Provider[fedrep.Request, fedrep.Reply], len(users))
		for i, u := range users {
			ps[i] = u
		}
		r, err := pl.Coordinate(ctx, federated.NewLocal(ps))
		if err != nil {
			return nil, err
		}
		return &FedRep{U: r.U}, nil
	}
	return p, nil
}

// fedRepPlan checks a private_fedrep call on src from public facts and
// returns its FedRep plan for src's public number of users n, with the
// public parameters of its receipt, or the refusal. The central
// run and every silo of a federated run plan with it.
func fedRepPlan(env *Local, src Ref, a *Args, progress func(step, total int)) (*fedrep.Plan, int, map[string]any, error) {
	fn := catalog.PrivateFedRep.Name
	if err := checkFedRepK(src, a); err != nil {
		return nil, 0, nil, err
	}
	sc := src.Schema
	if sc.Unit != "user" {
		return nil, 0, nil, Errorf(NameArgumentError, "%s needs a dataset registered with --unit user:COLUMN (user-level privacy); %q has unit %s", fn, src.Name, UnitString(sc))
	}
	if sc.Label == "" {
		return nil, 0, nil, Errorf(NameArgumentError, "%s needs a dataset registered with a --label column (the regression target); %q has none", fn, src.Name)
	}
	nb, err := neighbourOf(fn, a, src)
	if err != nil {
		return nil, 0, nil, err
	}
	if nb != accounting.ReplaceOne {
		return nil, 0, nil, Errorf(NameArgumentError, "%s: only replace-one neighbours are supported: FedRep averages over the users, and under add-remove their number is private", fn)
	}
	opt, params, err := fedRepOptions(env, a, sc)
	if err != nil {
		return nil, 0, nil, err
	}
	opt.Neighbour, opt.Progress = nb, progress
	params["neighbour"] = nb.String()
	// FedRep averages over the users, so it needs their number public;
	// the plan then uses the true count before the charge, and the run
	// has exactly that many users.
	n, err := publicUnits(fn, "FedRep (an average over the users)", src)
	if err != nil {
		return nil, 0, nil, err
	}
	pl, err := fedrep.PlanRun(opt, sc.D, n)
	if err != nil {
		return nil, 0, nil, argErr(fn, err)
	}
	return pl, n, params, nil
}

// fedRepOptions are the FedRep options of a private_fedrep call's keywords
// on a dataset of schema sc, with the public parameters they resolve to.
func fedRepOptions(env *Local, a *Args, sc ledger.Schema) (fedrep.Options, map[string]any, error) {
	d := sc.D
	fn := catalog.PrivateFedRep.Name
	calib := fedrep.CalibZCDP
	if a.Str("calibration") == "paper" {
		calib = fedrep.CalibGDP
	}
	rounds := a.Int("rounds")
	if rounds == 0 {
		rounds = fedrepRounds
	}
	lr := a.Float("lr")
	if lr == 0 {
		lr = fedrepLR
	}
	psi, err := clipOf(fn, a, sc)
	if err != nil {
		return fedrep.Options{}, nil, err
	}
	k := a.Int("k")
	var start *mat.Dense
	if a.Str("init") == "random" {
		start = randomBasis(env, d, k)
	}
	opt := fedrep.Options{K: k, Iters: rounds, Eta: lr, Psi: psi, PsiInit: psi, Eps: a.Float("eps"), Delta: a.Float("delta"),
		InitFrac: a.Float("init_frac"), Calibration: calib, Start: start, Noise: env.sampler()}
	if start != nil {
		opt.InitFrac = 0
	}
	return opt, map[string]any{"rounds": rounds, "lr": lr, "psi": psi, "calibration": calib.String()}, nil
}

// randomBasis is a public random d×k orthonormal basis (public randomness:
// it does not depend on the data).
func randomBasis(env *Local, d, k int) *mat.Dense {
	s := env.sampler()
	g := mat.NewDense(d, k, nil)
	for i := range d {
		for j := range k {
			g.Set(i, j, s.StdNormal())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	return mat.DenseCopyOf(q.Slice(0, d, 0, k))
}

// checkFedRepK refuses a k outside 1..d.
func checkFedRepK(src Ref, a *Args) error {
	if a.Int("k") < 1 || a.Int("k") > src.Schema.D {
		return Errorf(NameArgumentError, "%s: k=%d must satisfy 1 ≤ k ≤ d=%d", catalog.PrivateFedRep.Name, a.Int("k"), src.Schema.D)
	}
	return nil
}

// UnitString is the privacy unit of a schema as users write it: "row" or
// "user:COLUMN".
func UnitString(s ledger.Schema) string {
	if s.Unit == "user" {
		return "user:" + s.UserColumn
	}
	return "row"
}

// fedRepMemory is FedRep's memory estimate on src with n public users and
// k components, and the most records a user keeps (maxRecords): what is
// left of the limit after the users' fixed state, shared among the n users
// (at least MinRecords), so that the records held stay within the limit
// whatever the private number of rows. It depends on public facts only:
// the operator's limit, n, d and k.
func (env *Local) fedRepMemory(src Ref, k, n int) (bytes int64, maxRecords int) {
	d := src.Schema.D
	base := add(scanMemory(readWidth(src)), fedRepMemory(n, d, k, fedrep.MinRecords))
	return env.recordsCap(base, n, fedRepRowBytes(d))
}

// recordsCap shares what the limit leaves after base among n users of
// perRecord bytes a record: the most records a user keeps (at least
// MinRecords, which a limit too small for them refuses) and the estimate
// with them.
func (env *Local) recordsCap(base int64, n int, perRecord int64) (bytes int64, maxRecords int) {
	limit, err := env.memoryLimit()
	if err != nil {
		limit = DefaultMemoryLimit // checkMemory refuses the setting
	}
	perUser := mul(i64(max(n, 1)), perRecord)
	m := (limit - base) / max(perUser, 1)
	maxRecords = int(min(max(m, int64(fedrep.MinRecords)), 1<<30))
	return add(base, mul(i64(maxRecords), perUser)), maxRecords
}

// fedRepUsers builds FedRep's n users from data, each with at most the
// plan's maxRecords records (fedRepMemory).
func (env *Local) fedRepUsers(ctx context.Context, src Ref, data *Data, k, n int) ([]*fedrep.User, error) {
	_, maxRecords := env.fedRepMemory(src, k, n)
	return fedrep.UsersFromSourceMax(ctx, data.Rows, n, maxRecords, nil)
}
