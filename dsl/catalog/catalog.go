// Package catalog declares the DSL's functions: for each one its
// parameters (names, types, defaults, choices, help text), its result
// type, its paper and what it releases. A private function is one
// exported entry (PrivateSum, PrivatePCA, …); its name is written only
// here, and every other layer derives from the entry: the translator
// (dsl/syntax), the runtime's yaegi bindings, result conversions and
// pre-check (dsl/runtime), the planners (dsl/release, keyed by the entry),
// %help and docs/dsl.md, and the data service's wire mapping.
//
// The package is a leaf: it imports only the standard library, so that
// the execution core (dsl/release) can key its planners by the entries
// without importing the translator.
package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Param is one parameter of a DSL function.
type Param struct {
	Name string
	// Type is the Go-side type the runtime expects: "dataset", "result",
	// "any", "int", "float", "string", "bool" or "[]string". Ints are
	// accepted where a float is expected.
	Type string
	// Default is the Go literal used when the parameter is omitted; it is
	// empty when Required is set or when the default depends on the
	// dataset (DefaultDoc then says what it is).
	Default    string
	DefaultDoc string
	Required   bool
	// Choices lists the allowed values of a string parameter; empty means
	// any string.
	Choices []string
	Doc     string
	// CostFree marks a keyword of a private function whose value does not
	// change the call's cost (its accounting event), only what the
	// mechanism computes. The pre-check prices a call by planning it on
	// its dataset's public schema; a keyword whose value is not a literal
	// is planned at its default when it is CostFree, and otherwise leaves
	// the call's cost to the run-time charge. Left false, a keyword costs
	// the pre-check a static price, never soundness.
	CostFree bool
	// Late marks a keyword added after releases were stored in ledgers:
	// a named call's stored parameters leave it out while it is at its
	// default, so that the calls named before it was added keep replaying
	// (dsl/release.PublicParams).
	Late bool
}

// Func describes one function callable bare from a cell. Funcs is the
// single source of truth for the translator, the runtime's bindings,
// completion, inspect, %help, docs/dsl.md, the pre-check and the data
// service's wire mapping. A private function's entry is also the key of
// its planner in dsl/release.
type Func struct {
	Name string
	// Positional parameters come first in a call and cannot be given by
	// keyword; Keywords can only be given by keyword.
	Positional []Param
	Keywords   []Param
	// Variadic marks a function whose last positional parameter repeats
	// (federate(h1, h2, ...)).
	Variadic bool
	// Private marks a function that spends a dataset's budget: its eps
	// and delta keywords are its cost (delta defaults to 0 unless it is
	// Required: then the function's mechanisms need δ > 0), and
	// DatasetFrom says which dataset it charges.
	Private bool
	// DatasetFrom says how a private call names its dataset: "" (every
	// function but one) when its first positional argument is the dataset
	// handle; DatasetFromQuery when its first positional argument is a SQL
	// query whose FROM names the registered dataset (private_sql), which
	// the runtime and the pre-check find by parsing the query.
	DatasetFrom string
	// PureWith names the keyword whose presence lets delta=0 choose a
	// pure-ε release; without it every mechanism of f is Gaussian, so a
	// call without delta in a block with a δ takes the block's (see
	// BlockDelta). Empty when delta is Required or always chooses.
	PureWith string
	Result   string // what the call returns (Go type, as the runtime defines it)
	Doc      string
	Paper    string // the algorithm's source; empty for non-mechanisms
	Releases string // what leaves the compiled code: what the analyst sees
}

// pcaMethods are the values of private_pca's method keyword.
var pcaMethods = []string{"auto", "npm", "adaptive", "dppca", "oja", "oja-shuffle", "gauss", "federated", "ppm-entry"}

var epsParam = Param{Name: "eps", Type: "float", Required: true,
	Doc: "privacy cost ε of this call (> 0); charged to the dataset before the mechanism reads data"}

// deltaGaussian is the delta of a function whose every mechanism adds
// Gaussian noise, which is not DP at δ = 0: it is required, so that a
// missing δ is a translation error at the call rather than a run-time
// failure of the mechanism.
var deltaGaussian = Param{Name: "delta", Type: "float", Required: true,
	Doc: "privacy cost δ of this call (0 < δ < 1, e.g. 1e-6); the Gaussian noise of this function needs δ > 0. Inside a budget block with a δ it may be left out: the call is then calibrated to the block's δ"}

// BlockDelta reports whether a call of f that gives no delta takes its
// budget block's δ as its calibration target: the call is Gaussian,
// because f's delta is required outside blocks or because the keyword
// f.PureWith is not among the call's keywords (given reports them).
// Functions whose delta chooses the noise (0: Laplace) keep their
// default inside blocks.
//
// The block's δ as every call's target is sound under the zcdp and gdp
// accountants: they compose the calls' ρ (or μ²), and ρ*(ε, δ), the ρ
// that (ε, δ) allows, is superadditive in ε, so calls whose ε sum to the
// block's ε at the block's δ each cost at most their share of the block's ρ.
func BlockDelta(f *Func, given func(keyword string) bool) bool {
	if !f.Private {
		return false
	}
	p, ok := f.Keyword("delta")
	return ok && (p.Required || f.PureWith != "" && !given(f.PureWith))
}

// deltaPure is the delta of a function whose delta chooses its noise:
// discrete Laplace (pure ε) at 0, discrete Gaussian in zCDP above.
var deltaPure = Param{Name: "delta", Type: "float", Default: "0",
	Doc: "privacy cost δ (0 ≤ δ < 1). delta=0: discrete Laplace noise, pure ε. delta > 0: discrete Gaussian noise calibrated to (ε, δ) via zCDP, which composes far better with other calls under the zcdp accountant"}

var dsParam = Param{Name: "ds", Type: "dataset", Required: true,
	Doc: "a dataset handle from dataset(name)"}

// The post-processing keywords (docs/dsl.md, "Post-processing"): each
// changes only what is done with the noisy values after the mechanism,
// never the cost.
var (
	nonnegativeParam = Param{Name: "nonnegative", Type: "bool", CostFree: true, Late: true, Default: "true",
		Doc: "post-processing: a negative noisy count is shown as 0 (the receipt names the rule); false shows the raw noisy counts, which are unbiased"}
	clampParam = Param{Name: "clamp", Type: "bool", CostFree: true, Late: true, Default: "true",
		Doc: "post-processing (col= and by= forms): a noisy mean outside the column's public bounds is shown at the nearer bound (the receipt names the rule); false shows the raw ratio, which may lie outside them"}
	consistentParam = Param{Name: "consistent", Type: "bool", CostFree: true, Late: true, Default: "false",
		Doc: "with by= (and max_groups=1): also release the total count in the same charge (one more coordinate of the noisy vector: sensitivity ℓ1 2, ℓ2 √2 under both relations) and show parts that add up to it, by least squares, then nonnegative and rounded to integers; the total is more accurate, each part a little less under add-remove (free under replace-one)"}
	consistentSumParam = Param{Name: "consistent", Type: "bool", CostFree: true, Late: true, Default: "false",
		Doc: "with by= on row-level data: also release the total of the sums in the same charge (one more coordinate of the noisy vector, its sensitivity a row's largest move of the sums and the total together) and show parts that add up to it, by least squares (made nonnegative with the same total only when the bounds are ≥ 0); each part's interval is around its least-squares fit, which the release keeps"}
	otherParam = Param{Name: "other", Type: "bool", CostFree: true, Late: true, Default: "true",
		Doc: "with a categorical grouping: true releases the key \"other\" for the rows whose value is outside the public domain; false leaves it out, and those rows are in no group (a public rule applied before aggregation)"}
)

// Funcs lists the DSL functions, sorted by name.
// PrivatePCA is private_pca.
var PrivatePCA = &Func{
	Name:       "private_pca",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "k", Type: "int", CostFree: true, Default: "1", Doc: "number of principal components"},
		epsParam, deltaGaussian,
		{Name: "method", Type: "string", Default: `"auto"`, Choices: pcaMethods,
			Doc: "algorithm: auto picks gauss (Analyze Gauss) when d ≤ 100, else npm, from the public dimension d only; it spends no budget to choose. On a matrix dataset (dataset add --matrix) only ppm-entry runs, and auto picks it; ppm-entry takes matrix datasets only"},
		{Name: "iters", Type: "int", CostFree: true, Default: "0", DefaultDoc: "the method's documented default",
			Doc: "iterations (power methods, Oja epochs); 0 = the method's default"},
		{Name: "calibration", Type: "string", Default: `"zcdp"`, Choices: []string{"zcdp", "paper"},
			Doc: "noise calibration: zcdp (default: the tightest sound one, σ from ρ*(ε, δ); on a dataset registered with --accountant gdp, gauss, npm and adaptive use exact GDP's μ*(ε, δ) instead) or the paper's own formula (for reproductions)"},
		{Name: "neighbour", Type: "string", CostFree: true, Default: `""`, DefaultDoc: "the dataset's registered relation",
			Choices: []string{"", "replace-one", "add-remove"}, Doc: "restates the registered neighbouring relation, which binds (another is refused; on public synthetic data it chooses)"},
		{Name: "clip", Type: "float", CostFree: true, Default: "0", DefaultDoc: "the dataset's registered clip norm",
			Doc: "L2 norm rows are clipped to before the mechanism uses them (public)"},
		{Name: "providers", Type: "int", CostFree: true, Default: "0", Doc: "method=\"federated\": number of data providers the rows are split into (0 = 1)"},
		{Name: "sparsity", Type: "int", CostFree: true, Default: "0", Doc: "method=\"federated\": row sparsity s of the estimate (0 = d, not sparse)"},
		{Name: "pad", Type: "bool", CostFree: true, Default: "false", Doc: "methods \"dppca\" and \"oja\": run even when the dataset's public row count is below what the minibatches need (the rows are padded with zero rows: still private, but the estimate is then mostly noise); without it such a call is refused before anything is charged"},
		{Name: "gap", Type: "string", Default: `""`, DefaultDoc: "κ₀ = 0.5", Choices: []string{"", "auto"},
			Doc: "method=\"adaptive\": \"auto\" when the eigengap κ is unknown: one run per guess κ ∈ {0.75, 0.5, 0.25, 0.125}, then the exponential mechanism picks one run by its residual energy (budget: 90% to the runs, 10% to the choice, all within eps and delta); needs iters (read as the T of κ₀ = 0.5) or a public row count. Left out, T assumes κ₀ = 0.5"},
		{Name: "center", Type: "bool", CostFree: true, Late: true, Default: "false",
			Doc: "methods \"gauss\", \"npm\" and \"adaptive\" (and auto): centred PCA, as sklearn's: a private mean of the clipped rows first, then the method on the rows centred by it (each centred row clipped again to the clip norm, so the method's sensitivity is unchanged). The call costs what the uncentred one costs: the mean takes center_share of its budget. Refused for the other methods, calibration=\"paper\" and gap=\"auto\""},
		{Name: "center_share", Type: "float", CostFree: true, Late: true, Default: "0", DefaultDoc: "0.1",
			Doc: "with center=true: the private mean's share of the call's zCDP budget, in (0, 0.5]; 0 = 0.1. The receipt states it"},
	},
	Private: true,
	Result:  "*PCAResult",
	Doc: "Differentially private principal components of the dataset's rows (clipped to the public norm). " +
		"On a matrix dataset (method \"ppm-entry\", entry-level DP): the top-k eigenvectors of a symmetric matrix, or the left (Components) and right (Right) singular vectors of a rectangular one.",
	Paper: "npm: Hardt & Price 2014 (noisy power method); adaptive: Nguyen, Ene & Nguyen 2026 (adaptive power iteration, k=1); " +
		"dppca/oja/oja-shuffle: Liu, Kong, Jain & Oh 2022 (DP-PCA, private Oja: Eq. 7, Algorithm 2 with shuffling); gauss: Analyze Gauss (Dwork, Talwar, Thakurta & Zhang 2014); " +
		"federated: distributed DP sparse PCA (DPS-PCA); ppm-entry: Hardt & Price 2014, Figure 3 (entry-level private power method)",
	Releases: "a d×k orthonormal basis and, where the method computes them, private eigenvalue estimates (gauss: also the private total variance and explained-variance ratios); with center=true the private mean, and the noisy sums and noisy row count it divides (the same release's parts, for its intervals); never the exact n",
}

// PrivateLowRank is private_low_rank.
var PrivateLowRank = &Func{
	Name:       "private_low_rank",
	Positional: []Param{{Name: "ds", Type: "dataset", Required: true, Doc: "a matrix dataset handle (registered with privnotes dataset add --matrix)"}},
	PureWith:   "noise",
	Keywords: []Param{
		{Name: "k", Type: "int", CostFree: true, Default: "1", Doc: "rank: the approximation has rank ≤ 2k (k singular triplets are reported)"},
		epsParam,
		{Name: "delta", Type: "float", Default: "0",
			Doc: "privacy cost δ: > 0 (e.g. 1e-6) for the Gaussian run; leave it out (0) with noise=\"laplace\" for the pure-ε variant"},
		{Name: "noise", Type: "string", Default: `"gaussian"`, Choices: []string{"gaussian", "laplace"},
			Doc: "gaussian: (ε, δ), calibrated via zCDP (Cor. 4.3); laplace: pure (ε, 0), basic composition over the releases (Cor. 4.7's variant under entry-level neighbours)"},
		{Name: "iters", Type: "int", CostFree: true, Default: "0", DefaultDoc: "⌈2·ln d/0.1⌉", Doc: "power steps L (the run makes L+1 releases); 0 = the default"},
		{Name: "calibration", Type: "string", Default: `"zcdp"`, Choices: []string{"zcdp", "paper"},
			Doc: "Gaussian noise calibration: zcdp (tight, default) or Hardt–Price Figure 3's σ (for reproductions); the Laplace variant takes the default only"},
	},
	Private: true,
	Result:  "*LowRankResult",
	Doc: "Private low-rank approximation of a matrix dataset under entry-level DP (neighbouring matrices differ in one entry, within the registered bound): B = X_L·Y_{L+1}ᵀ of rank ≤ 2k after L+1 noisy power steps, " +
		"with k components and values derived from it. For a rectangular M the approximation is of M itself (m×n), with left (Components) and right (Right) singular vectors.",
	Paper:    "Hardt & Price 2014 (The Noisy Power Method), Corollary 4.3 (Gaussian) and Corollary 4.7 (Laplace, pure ε)",
	Releases: "a rank-≤2k matrix of the dataset's shape, k components (and right vectors for a rectangular matrix) and k values; never an entry of the data",
}

// PrivateFedRep is private_fedrep.
var PrivateFedRep = &Func{
	Name:       "private_fedrep",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "k", Type: "int", CostFree: true, Default: "1", Doc: "dimension of the shared representation U (d×k)"},
		{Name: "rounds", Type: "int", CostFree: true, Default: "0", DefaultDoc: "5", Doc: "number of FedRep rounds T (default: the paper's experiment)"},
		epsParam, deltaGaussian,
		{Name: "lr", Type: "float", CostFree: true, Default: "0", DefaultDoc: "0.5", Doc: "server step size η (default: the paper's experiment under the spec's gradient convention; above about 1/(2σ²_max) of the users' vectors it diverges, as the paper's 2.5 does)"},
		{Name: "clip", Type: "float", CostFree: true, Default: "0", DefaultDoc: "the dataset's registered clip norm", Doc: "per-user gradient clip ψ"},
		{Name: "init", Type: "string", CostFree: true, Default: `"private"`, Choices: []string{"private", "random"}, Doc: "private initialisation (Alg 2) or a random public start"},
		{Name: "init_frac", Type: "float", CostFree: true, Default: "0.2", Doc: "share of the budget spent on the private initialisation"},
		{Name: "neighbour", Type: "string", CostFree: true, Default: `""`, DefaultDoc: "the dataset's registered relation",
			Choices: []string{"", "replace-one", "add-remove"}, Doc: "restates the registered neighbouring relation between users, which binds (another is refused; on public synthetic data it chooses)"},
		{Name: "calibration", Type: "string", Default: `"zcdp"`, Choices: []string{"zcdp", "paper"}, Doc: "noise calibration"},
	},
	Private:  true,
	Result:   "*FedRepResult",
	Doc:      "Private FedRep: a shared low-dimensional representation for users' linear regressions, under user-level DP. Needs a dataset registered with --unit user:COLUMN and a --label column.",
	Paper:    "Private FedRep with private initialisation (Private Model Personalization Revisited, ICML 2025, Alg 1 and 2)",
	Releases: "the shared representation U (d×k) after the last round; users' personal vectors stay inside the mechanism",
}

// PrivateClassifyJL is private_classify_jl.
var PrivateClassifyJL = &Func{
	Name:       "private_classify_jl",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "k", Type: "int", CostFree: true, Default: "1", Doc: "dimension of the shared representation U (d×k)"},
		{Name: "rho", Type: "float", CostFree: true, Default: "0.5", Doc: "margin ρ relative to the feature bound, in (0, 1]; sets the JL dimension k′ = ⌈1/ρ²⌉ (at least k, at most d)"},
		{Name: "gamma", Type: "float", CostFree: true, Default: "0.5", Doc: "radius γ ∈ (0, 1] of the paper's cover of the k′×k ball (candidates=0 only)"},
		epsParam,
		{Name: "delta", Type: "float", Default: "0", Doc: "privacy cost δ: 0 for variant pool (pure ε); variant fedrep-jl adds Gaussian noise and needs δ > 0 (e.g. 1e-6)"},
		{Name: "candidates", Type: "int", CostFree: true, Default: "1000", Doc: "variant pool: number of random data-independent candidates (1..65536), or 0 for the paper's γ-cover, feasible only when k′·k ≤ 4 (the toy exact mode)"},
		{Name: "variant", Type: "string", Default: `"pool"`, Choices: []string{"pool", "fedrep-jl"},
			Doc: "pool: the exponential mechanism over the candidates (pure ε, exact sampler); fedrep-jl: Private FedRep's loop on the JL features with a logistic loss ((ε, δ))"},
		{Name: "score_margin", Type: "float", CostFree: true, Default: "0", Doc: "variant pool: margin of the score's loss relative to the feature bound, in [0, 1]: 0 is the 0-1 loss of the paper's proof, rho the margin loss of its main text"},
		{Name: "clip", Type: "float", CostFree: true, Default: "0", DefaultDoc: "the dataset's registered clip norm", Doc: "feature bound r: each record is scaled to norm ≤ r (and, for fedrep-jl, the per-user gradient clip)"},
		{Name: "neighbour", Type: "string", CostFree: true, Default: `""`, DefaultDoc: "the dataset's registered relation",
			Choices: []string{"", "replace-one", "add-remove"}, Doc: "restates the registered neighbouring relation between users, which binds (fedrep-jl needs replace-one; on public synthetic data it chooses)"},
	},
	Private:  true,
	Result:   "*ClassifyJLResult",
	Doc:      "A shared representation for users' personalised ±1 classifiers through a JL projection, under user-level DP (practical variants of the paper's infeasible cover construction). Needs a dataset registered with --unit user:COLUMN and a --label column, read by sign (> 0 is +1).",
	Paper:    "Private Model Personalization Revisited (Snedeker, Zhou & Bassily, ICML 2025), Alg 3: JL features and the exponential mechanism; variant fedrep-jl runs Alg 1 on the JL features",
	Releases: "U_priv = MᵀŨ (d×k, not orthonormal) and the public JL matrix's dimension k′; users' personal heads stay inside the mechanism",
}

// PrivateCount is private_count.
var PrivateCount = &Func{
	Name:       "private_count",
	Positional: []Param{dsParam},
	Keywords: []Param{epsParam, {Name: "delta", Type: "float", Default: "0",
		Doc: "privacy cost δ (0 ≤ δ < 1). delta=0: discrete Laplace, pure ε. delta > 0: discrete Gaussian calibrated to (ε, δ) via zCDP, whose cost composes far better with other calls under the zcdp accountant (use it inside budget blocks with Gaussian calls)"},
		{Name: "by", Type: "string", CostFree: true, Default: `""`,
			Doc: "a categorical column: one release per key of its public domain (and \"other\"), every key released whatever the data; a numeric column is refused"},
		{Name: "max_groups", Type: "int", CostFree: true, Default: "1",
			Doc: "with by on user-level data: each user counts in (and adds the mean of their values to) at most this many groups, the first distinct ones of their rows in row order; 1..the number of keys; the sensitivities grow with it (ℓ1 by max_groups, ℓ2 by √max_groups)"},
		nonnegativeParam, otherParam, consistentParam},
	Private: true,
	Result:  "*CountResult",
	Doc: "A noisy count of the dataset's privacy units (rows, or users under user-level DP). With delta > 0 the noise is Gaussian (zCDP), else Laplace (pure ε). " +
		"With by=\"col\": one noisy count per key of the categorical column's public domain (and \"other\"), all keys released; the result's Keys, Values and Get(key) hold them and Value their total.",
	Paper:    "discrete Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) for delta=0; discrete Gaussian (Canonne, Kamath & Steinke 2020) in zCDP (Bun & Steinke 2016) for delta > 0",
	Releases: "one noisy count, or with by= one noisy integer count per key of the public domain",
}

// PrivateMean is private_mean.
var PrivateMean = &Func{
	Name:       "private_mean",
	Positional: []Param{dsParam},
	PureWith:   "col",
	Keywords: []Param{epsParam, {Name: "delta", Type: "float", Default: "0",
		Doc: "privacy cost δ (0 ≤ δ < 1). The row-vector form (columns=) adds Gaussian noise and needs δ > 0 (e.g. 1e-6). With col= (and by=): delta=0 gives the pure-ε mean (discrete Laplace on the sum and the count), delta > 0 discrete Gaussian calibrated via zCDP"},
		{Name: "columns", Type: "[]string", CostFree: true, Default: "nil", DefaultDoc: "all columns", Doc: "the columns to average (the row-vector form; not with col)"},
		{Name: "clip", Type: "float", CostFree: true, Default: "0", DefaultDoc: "the dataset's registered clip norm", Doc: "L2 norm rows are clipped to (the row-vector form; not with col)"},
		{Name: "col", Type: "string", Default: `""`, Doc: "one numeric column with public bounds to average, its values clamped to them (required with by); leave it out for the row-vector form"},
		{Name: "by", Type: "string", CostFree: true, Default: `""`,
			Doc: "a categorical column: one release per key of its public domain (and \"other\"), every key released whatever the data; a numeric column is refused"},
		{Name: "max_groups", Type: "int", CostFree: true, Default: "1",
			Doc: "with by on user-level data: each user counts in (and adds the mean of their values to) at most this many groups, the first distinct ones of their rows in row order; 1..the number of keys; the sensitivities grow with it (ℓ1 by max_groups, ℓ2 by √max_groups)"},
		clampParam, otherParam,
	},
	Private: true,
	Result:  "*MeanResult",
	Doc: "A noisy mean vector of the (clipped) rows; with col=\"c\", the mean of one column clamped to its public bounds (a MeanResult of one value); " +
		"with col and by, one mean per key of the categorical column by (noisy sum / max(noisy count, 1) per key, clamped to the bounds unless clamp=false; Keys, Values, Get(key)).",
	Paper:    "Gaussian mechanism on a clipped (or bounded) sum over a noisy count (zCDP, Bun & Steinke 2016); discrete Gaussian noise (Canonne, Kamath & Steinke 2020) for col and by, or discrete Laplace (pure ε, sequential composition) when they are given without delta",
	Releases: "a noisy mean vector (one value per column), or one noisy mean per key of the public domain",
}

// PrivateSum is private_sum.
var PrivateSum = &Func{
	Name:       "private_sum",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "col", Type: "string", CostFree: true, Required: true, Doc: "the numeric column to sum; the data owner must have declared its public bounds (`dataset add --bounds col=lo:hi`)"},
		epsParam, deltaPure,
		{Name: "by", Type: "string", CostFree: true, Default: `""`,
			Doc: "a categorical column: one release per key of its public domain (and \"other\"), every key released whatever the data; a numeric column is refused"},
		{Name: "max_groups", Type: "int", CostFree: true, Default: "1",
			Doc: "with by on user-level data: each user counts in (and adds the mean of their values to) at most this many groups, the first distinct ones of their rows in row order; 1..the number of keys; the sensitivities grow with it (ℓ1 by max_groups, ℓ2 by √max_groups)"},
		otherParam, consistentSumParam,
	},
	Private: true,
	Result:  "*SumResult",
	Doc: "A noisy sum of one numeric column, its values clamped to the column's public bounds (a NaN counts as 0 clamped); under user-level DP each user adds one value, the mean of their clamped values. " +
		"The sensitivity is max(|lo|, |hi|) (add-remove) or hi − lo (replace-one), plus the sum's floating-point rounding. " +
		"With by=\"col\": one noisy sum per key of the categorical column's public domain (Keys, Values, Get(key); Value is their total); a row may move between groups, so replace-one's sensitivity is 2·max(|lo|, |hi|) in ℓ1.",
	Paper:    "discrete Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) for delta=0; discrete Gaussian (Canonne, Kamath & Steinke 2020) in zCDP (Bun & Steinke 2016) for delta > 0; the sum's rounding bounded by its fixed pairwise order and charged as sensitivity",
	Releases: "one noisy sum, or with by= one noisy sum per key of the public domain",
}

// PrivateHistogram is private_histogram.
var PrivateHistogram = &Func{
	Name:       "private_histogram",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "col", Type: "string", CostFree: true, Required: true, Doc: "a categorical column (one count per category of its public domain, and \"other\") or a numeric column with public bounds"},
		{Name: "bins", Type: "int", CostFree: true, Default: "0", Doc: "numeric columns: the number of equal-width bins over the public bounds, 1..10000 (required there); leave it out for a categorical column"},
		{Name: "max_groups", Type: "int", CostFree: true, Default: "1",
			Doc: "on user-level data: each user counts once in each of at most this many bins, the first distinct ones of their rows in row order; 1..the number of keys; the sensitivities grow with it (ℓ1 by max_groups, ℓ2 by √max_groups); row-level data take only 1"},
		epsParam, deltaPure, nonnegativeParam, otherParam,
	},
	Private: true,
	Result:  "*HistogramResult",
	Doc: "Noisy counts of one column's values per bin of a public domain: the categories of a categorical column, or equal-width bins over a numeric column's public bounds. Every key is released, so no key depends on the data. " +
		"Under user-level DP each user counts once in each of the first max_groups distinct bins of their rows in row order (default 1: the first bin their rows fall in), as grouped counts do.",
	Paper:    "discrete Laplace (Dwork, McSherry, Nissim & Smith 2006) for delta=0, discrete Gaussian (Canonne, Kamath & Steinke 2020) in zCDP for delta > 0, on counts of sensitivity ℓ1 k (add-remove) or 2k (replace-one), ℓ2 √k or √(2k), k = max_groups",
	Releases: "one noisy integer count per key of the public domain",
}

// PrivateQuantile is private_quantile.
var PrivateQuantile = &Func{
	Name:       "private_quantile",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "col", Type: "string", CostFree: true, Required: true, Doc: "the numeric column; the data owner must have declared its public bounds (`dataset add --bounds col=lo:hi`)"},
		{Name: "q", Type: "float", CostFree: true, Default: "0.5", Doc: "the quantile, strictly between 0 and 1 (0.5: the median)"},
		epsParam,
		{Name: "delta", Type: "float", Default: "0", Doc: "must be 0: the exponential mechanism is pure ε-DP"},
	},
	Private: true,
	Result:  "*QuantileResult",
	Doc: "A private quantile of one numeric column, clamped to its public bounds: the exponential mechanism over a public grid of the bounds, with utility −⌈|rank − q·n|⌉ (sensitivity 1). " +
		"It sorts the column: memory grows with the number of rows (or users, whose value is the mean of their clamped values).",
	Paper:    "exponential mechanism (McSherry & Talwar 2007) over the intervals between sorted values (Smith 2011), sampled exactly with integer arithmetic in the spirit of Ilvento's base-2 mechanism (2020)",
	Releases: "one value of a public grid over the column's bounds",
}

// Funcs lists the DSL functions, sorted by name.
var Funcs = sortFuncs([]*Func{
	{
		Name:       "dataset",
		Positional: []Param{{Name: "name", Type: "string", Required: true, Doc: "the name the data owner registered with `privnotes dataset add`"}},
		Keywords: []Param{{Name: "server", Type: "string", Default: `""`,
			Doc: "a data server of the session's --servers (\"p1\"): the dataset is registered there, and every private call on it runs there, charged to that server's ledger (see docs/deployment.md)"}},
		Result: "Dataset",
		Doc: "Opens a registered dataset. The handle is opaque: printing or marshalling it shows its name only; " +
			"its methods give public schema (columns, dimension, clip norm, privacy unit, budget), never the number of rows or any value.",
		Releases: "nothing private: public metadata chosen by the data owner",
	},
	{
		Name:       "federate",
		Positional: []Param{{Name: "ds", Type: "dataset", Required: true, Doc: "dataset handles, one per data provider: dataset(name, server=\"p1\") for a data service's, dataset(name) for a local one; all with the same dimension"}},
		Variadic:   true,
		Result:     "Federation",
		Doc: "A federated handle over datasets held by different data providers. private_pca(fed, method=\"federated\", ...) runs DPS-PCA with each provider " +
			"planning its own noise, charging its own ledger and sending only noisy statistics (never its row count); the receipt lists every provider's charge (see docs/deployment.md).",
		Releases: "nothing: a handle",
	},
	PrivatePCA,
	PrivateLowRank,
	PrivateFedRep,
	PrivateClassifyJL,
	PrivateCount,
	PrivateMean,
	PrivateSum,
	PrivateHistogram,
	PrivateQuantile,
	PrivateSQL,
	PrivateLinearRegression,
	PrivateLogisticRegression,
	PrivateSynthesize,
	{
		Name:       "plot_histogram",
		Positional: []Param{{Name: "h", Type: "result", Required: true, Doc: "a private_histogram result, a grouped result (private_count, private_sum or private_mean with by=), or a private_sql table of one key and one value"}},
		Keywords:   []Param{{Name: "title", Type: "string", Default: `""`, Doc: "plot title"}},
		Result:     "*Plot",
		Doc:        "Bar chart (PNG) of a private histogram's noisy counts per key, or of a grouped release's noisy values per key (counts, sums or means by a categorical column).",
		Releases:   "post-processing of a DP release; no new cost",
	},
	{
		Name:       "remaining",
		Positional: []Param{dsParam},
		Result:     "Budget",
		Doc: "The dataset's remaining budget (ε, δ) under its accountant, read from the ledger shared by all sessions, and what one more call fits: " +
			"FitsPure (the largest ε of a pure call: a Laplace count, sum or histogram), FitsQuantile (of a quantile, priced as bounded range) and FitsGaussian " +
			"(of a Gaussian call at δ=FitsDelta, the dataset's δ), each exactly what the accountant admits now. Under zcdp, gdp and rdp the remaining ε is a " +
			"composed total, which a single call of that ε may not fit; the Fits fields are what does.",
		Releases: "public: the budget and what has been spent",
	},
	EpsFor,
	{
		Name: "download",
		Positional: []Param{
			{Name: "res", Type: "any", Required: true, Doc: "a result of a DSL function (PCAResult, CountResult, HistogramResult, …) or a matrix"},
			{Name: "name", Type: "string", Required: true, Doc: "the file name the browser (or the REPL, or run) saves: NAME.csv (a table: loadings, counts per key, …) or NAME.json (every released field and the receipt)"},
		},
		Result: "",
		Doc: "Displays a link that saves a result as a file (a data URI: the kernel writes no file); " +
			"the REPL and privnotes run write the file to their --out directory (default: the current one) and say where. " +
			"CSV holds the result's table; JSON holds every released field with its receipt, as json.Marshal gives it.",
		Releases: "only what res already is",
	},
	{
		Name:       "show",
		Positional: []Param{{Name: "x", Type: "any", Required: true, Doc: "a value to display"}},
		Result:     "",
		Doc:        "Displays a value with its rich display (results show their privacy receipt).",
		Releases:   "only what x already is",
	},
	{
		Name:       "plot_loadings",
		Positional: []Param{{Name: "res", Type: "result", Required: true, Doc: "a private_pca result"}},
		Keywords: []Param{
			{Name: "component", Type: "int", Default: "1", Doc: "which component (1-based)"},
			{Name: "title", Type: "string", Default: `""`, Doc: "plot title"},
		},
		Result:   "*Plot",
		Doc:      "Bar plot (PNG) of one component's loadings per column.",
		Releases: "post-processing of a DP release; no new cost",
	},
	{
		Name:       "plot_eigenvalues",
		Positional: []Param{{Name: "res", Type: "result", Required: true, Doc: "a private_pca result with eigenvalue estimates"}},
		Keywords:   []Param{{Name: "title", Type: "string", Default: `""`, Doc: "plot title"}},
		Result:     "*Plot",
		Doc:        "Plot (PNG) of the private eigenvalue estimates.",
		Releases:   "post-processing of a DP release; no new cost",
	},
	{
		Name: "synth_spiked",
		Keywords: []Param{
			{Name: "n", Type: "int", Required: true, Doc: "rows"},
			{Name: "d", Type: "int", Required: true, Doc: "dimension"},
			{Name: "k", Type: "int", Default: "1", Doc: "number of spikes"},
			{Name: "gap", Type: "float", Default: "1", Doc: "eigengap between the spikes and the bulk"},
			{Name: "seed", Type: "int", Default: "1", Doc: "seed of the public generator"},
		},
		Result:   "*SynthData",
		Doc:      "PUBLIC synthetic data from a spiked covariance model (rows and the true subspace); for experiments, not private.",
		Paper:    "spiked covariance recipes of the seed papers (power methods, DP-PCA)",
		Releases: "public synthetic data: no privacy cost, seeds allowed",
	},
	{
		Name: "synth_fedrep",
		Keywords: []Param{
			{Name: "users", Type: "int", Required: true, Doc: "number of users n"},
			{Name: "m", Type: "int", Required: true, Doc: "samples per user"},
			{Name: "d", Type: "int", Required: true, Doc: "dimension"},
			{Name: "k", Type: "int", Default: "2", Doc: "representation dimension"},
			{Name: "noise", Type: "float", Default: "0.1", Doc: "label noise R"},
			{Name: "seed", Type: "int", Default: "1", Doc: "seed of the public generator"},
		},
		Result:   "*SynthData",
		Doc:      "PUBLIC synthetic multi-user regression data with a shared k-dimensional representation.",
		Paper:    "Private FedRep experiment recipe (Private Model Personalization Revisited, §3.4)",
		Releases: "public synthetic data: no privacy cost, seeds allowed",
	},
	{
		Name:       "filter",
		Positional: []Param{dsParam},
		Keywords: []Param{
			{Name: "col", Type: "string", Required: true, Doc: "the column the condition reads (a numeric column with public bounds, or a categorical column)"},
			{Name: "op", Type: "string", Required: true, Choices: []string{"==", "!=", "<", "<=", ">", ">="}, Doc: "the comparison (categorical columns: == or !=)"},
			{Name: "value", Type: "any", Required: true, Doc: "a number (numeric column) or a category of the column's public domain (categorical column)"},
		},
		Result: "Dataset",
		Doc: "The subset of the rows of ds whose column col compares to value by op, as a dataset for every private call. " +
			"Numeric values are compared after clamping to the column's public bounds. Calls on the subset charge the registered dataset, " +
			"their receipts and ledger records name the subset; its size is private (a filtered count is a count query), so methods that need a public n refuse it.",
		Releases: "nothing: a description of a subset (public parameters only)",
	},
	{
		Name:       "select_columns",
		Positional: []Param{dsParam},
		Keywords: []Param{
			{Name: "cols", Type: "[]string", Required: true, Doc: "the columns to keep, in order"},
		},
		Result: "Dataset",
		Doc: "The columns cols of ds, as a dataset for every private call (the numeric ones are its features). " +
			"Calls on it charge the registered dataset; receipts and ledger records name the selection. (Not select: that is a Go keyword.)",
		Releases: "nothing: a description of a projection (public parameters only)",
	},
})

// DatasetFromQuery is Func.DatasetFrom of a function whose first
// positional argument is a query naming its dataset in FROM.
const DatasetFromQuery = "query"

// PrivateSQL is private_sql.
var PrivateSQL = &Func{
	Name: "private_sql",
	Positional: []Param{{Name: "query", Type: "string", Required: true,
		Doc: "one SQL SELECT over one registered dataset, named in FROM, whose items are group keys and aggregates: COUNT(*), SUM(x, lo, hi), AVG(x, lo, hi), VARIANCE(x, lo, hi), STDDEV(x, lo, hi), QUANTILE(x, q, lo, hi), MEDIAN(x, lo, hi) (lo, hi: clamping bounds; left out, the owner's bounds of the column), and on user-level datasets COUNT(DISTINCT unit) (users per group), every aggregate over each user's rows bounded by max_groups and max_rows; WHERE and GROUP BY take row expressions (docs/sql.md)"}},
	DatasetFrom: DatasetFromQuery,
	Keywords: []Param{
		epsParam, deltaPure, nonnegativeParam,
		{Name: "consistent", Type: "bool", CostFree: true, Late: true, Default: "false",
			Doc: "with GROUP BY keys whose domains are public (not with DP partition selection): each COUNT(*) and SUM also releases its total over the groups in the same charge (one more coordinate of its noisy vector: COUNT ℓ1 2, ℓ2 √2; SUM a row's largest move of the sums and the total together) and shows parts that add up to it, by least squares (counts then nonnegative if asked and integers; sums nonnegative when the bounds are ≥ 0); each cell's interval is around its least-squares fit, which the table keeps"},
		{Name: "keys", Type: "any", CostFree: true, Default: "nil",
			Doc: "a group key's values by its output name, map[string][]any{\"band\": {2, 3, 4}}: the key's public domain (every listed group is released, rows with other values are in none); without it a key's domain comes from declared categories, CASE literals or floor over bounds, and a key with none of these is chosen by DP partition selection (needs delta > 0)"},
		{Name: "weights", Type: "any", CostFree: true, Default: "nil",
			Doc: "[]float64: one positive weight per aggregate, in SELECT order, its share of the budget (default: even shares)"},
		// Not CostFree: the call on a public table charges no ledger, so
		// the pre-check must not price it on the dataset FROM names.
		{Name: "from", Type: "any", Late: true, Default: "nil",
			Doc: "a public table (*SynthTable from private_synthesize, or from t.Query) that FROM's name stands for: the query runs with the same plan and noise on the table's public rows, charges no ledger (the receipt says Charged: false) and counts against an enclosing budget block, like synth_* data; leave it out to query the registered dataset FROM names"},
		{Name: "max_groups", Type: "int", CostFree: true, Late: true, Default: "1",
			Doc: "on user-level data: each user contributes to at most this many groups, the first distinct ones of their rows (that pass WHERE) in row order; 1..the number of groups (up to 10000 under partition selection); the sensitivities grow with it (ℓ1 by max_groups, ℓ2 by √max_groups); row-level data take only 1"},
		{Name: "max_rows", Type: "int", CostFree: true, Late: true, Default: "1",
			Doc: "on user-level data: each user contributes at most this many rows to each group, their first ones in row order; 1..1000; the sensitivities (and a quantile's rank error) grow linearly with it; row-level data take only 1"},
	},
	Private: true,
	Result:  "*TableResult",
	Doc: "A table of noisy aggregates per group of the keys' public domains, from one SQL query planned from public facts, charged once and run as one statement in the data engine (snapshot datasets; on user-level ones each user's rows are bounded to max_groups groups and max_rows rows per group, the first in row order). " +
		"Every group of the domains is released whatever the data; AVG, VARIANCE and STDDEV re-centre on the bounds' midpoint; QUANTILE and MEDIAN draw a point of a public grid per group (the engine returns each group's histogram on it); keys without a public domain release the groups whose noisy row count (user count on user-level data) passes a threshold (DP partition selection, delta > 0, one (ε, δ) charge). dry_run=true shows each release's mechanism, sensitivity, noise scale and share of the cost (EXPLAIN).",
	Paper:    "discrete Laplace (delta=0) or discrete Gaussian in zCDP (delta > 0) per aggregate vector (counts, clamped sums, midpoint-centred sums and their squares), and private_quantile's exponential mechanism per group for quantiles (bounded range in zCDP), the budget split over them; exact integer sums in the engine (docs/mechanisms.md, private_sql)",
	Releases: "one noisy value per aggregate and group of the keys' public domains (or of the groups partition selection releases)",
}

// dryRunParam is a keyword of every private function.
var dryRunParam = Param{Name: "dry_run", Type: "bool", Default: "false",
	Doc: "true: charge nothing and read no data; the result holds only a receipt saying what the call would cost and what budget it would leave (or the call is refused, as it would be, with what would fit)"}

// nameParam is a keyword of every private function (docs/shared-notebooks.md).
var nameParam = Param{Name: "name", Type: "string", Default: `""`,
	Doc: "names the release, uniquely per dataset: the ledger stores it with the charge, and a later call with the same name and the same parameters returns the stored release without charging or reading data (its receipt says \"replayed from ledger record N, no new charge\"); the same name with other parameters is an ArgumentError that shows the stored ones. \"\": a fresh release every time"}

// sortFuncs sorts the table by name and gives every private function the
// keywords all of them share.
func sortFuncs(fs []*Func) []*Func {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	for i := range fs {
		if fs[i].Private {
			fs[i].Keywords = append(fs[i].Keywords, dryRunParam, nameParam)
		}
	}
	return fs
}

// Lookup returns the DSL function called name.
func Lookup(name string) (*Func, bool) {
	i := sort.Search(len(Funcs), func(i int) bool { return Funcs[i].Name >= name })
	if i < len(Funcs) && Funcs[i].Name == name {
		return Funcs[i], true
	}
	return nil, false
}

// Private returns the private functions (those that spend a dataset's
// budget), sorted by name. Every layer that treats private functions
// alike ranges over it: the release planners, the runtime's bindings and
// result conversions, the pre-check and the neighbouring-datasets tests.
func Private() []*Func {
	var out []*Func
	for _, f := range Funcs {
		if f.Private {
			out = append(out, f)
		}
	}
	return out
}

// Names returns the DSL function names in order.
func Names() []string {
	names := make([]string, len(Funcs))
	for i, f := range Funcs {
		names[i] = f.Name
	}
	return names
}

// DefaultValue returns p's Default literal converted to p's type: an int,
// a float64, a string, a bool, or a nil []string (no []string parameter
// has another default). A parameter with no literal (a Required one)
// gets its type's zero value, so that code building a call outside a
// cell (the benchmarks, the data service's tests) can hold every keyword;
// the runtime refuses a missing required keyword before it asks for a
// default. A literal that does not parse is an error of the table.
// Parameters of other types (dataset, result, any) have no default: nil.
func (p *Param) DefaultValue() (any, error) {
	lit := p.Default
	switch p.Type {
	case "int":
		if lit == "" {
			return 0, nil
		}
		return strconv.Atoi(lit)
	case "float":
		if lit == "" {
			return 0.0, nil
		}
		return strconv.ParseFloat(lit, 64)
	case "string":
		if lit == "" {
			return "", nil
		}
		return strconv.Unquote(lit)
	case "bool":
		if lit == "" {
			return false, nil
		}
		return strconv.ParseBool(lit)
	case "[]string":
		return []string(nil), nil
	}
	return nil, nil
}

// Defaults returns every keyword of f at its DefaultValue.
func (f *Func) Defaults() (map[string]any, error) {
	out := make(map[string]any, len(f.Keywords))
	for i := range f.Keywords {
		p := &f.Keywords[i]
		v, err := p.DefaultValue()
		if err != nil {
			return nil, fmt.Errorf("%s: default of %s: %v", f.Name, p.Name, err)
		}
		out[p.Name] = v
	}
	return out, nil
}

// Keyword returns the keyword parameter called name.
func (f *Func) Keyword(name string) (*Param, bool) {
	for i := range f.Keywords {
		if f.Keywords[i].Name == name {
			return &f.Keywords[i], true
		}
	}
	return nil, false
}

// KeywordNames returns the names of f's keyword parameters in table order.
func (f *Func) KeywordNames() []string {
	names := make([]string, len(f.Keywords))
	for i, p := range f.Keywords {
		names[i] = p.Name
	}
	return names
}

// Signature renders f's call form, e.g.
// private_count(ds, eps=<float>, delta=0).
func (f *Func) Signature() string {
	var parts []string
	for _, p := range f.Positional {
		parts = append(parts, p.Name)
	}
	if f.Variadic {
		parts = append(parts, "...")
	}
	for _, p := range f.Keywords {
		switch {
		case p.Required:
			parts = append(parts, p.Name+"=<"+p.Type+">")
		case p.DefaultDoc != "":
			parts = append(parts, p.Name+"=<"+p.DefaultDoc+">")
		default:
			parts = append(parts, p.Name+"="+p.Default)
		}
	}
	return f.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Help renders the text %help NAME and inspect show: signature,
// description, parameters with type, default and doc, the paper and what
// the call releases.
func (f *Func) Help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n", f.Signature(), f.Doc)
	if len(f.Positional)+len(f.Keywords) > 0 {
		b.WriteString("\nParameters:\n")
	}
	for _, p := range f.Positional {
		fmt.Fprintf(&b, "  %-12s %-9s positional. %s\n", p.Name, p.Type, p.Doc)
	}
	for _, p := range f.Keywords {
		def := "required"
		if !p.Required {
			def = "default " + p.Default
			if p.DefaultDoc != "" {
				def = "default: " + p.DefaultDoc
			}
		}
		fmt.Fprintf(&b, "  %-12s %-9s %s. %s", p.Name, p.Type, def, p.Doc)
		if len(p.Choices) > 0 {
			var cs []string
			for _, c := range p.Choices {
				if c != "" {
					cs = append(cs, strconvQuote(c))
				}
			}
			fmt.Fprintf(&b, " (one of %s)", strings.Join(cs, ", "))
		}
		b.WriteString("\n")
	}
	if f.Private {
		b.WriteString("\nPrivacy: charges (eps, delta) to the dataset's budget, durably, before reading any data; refused when it would exceed the enclosing budget block or the dataset's remaining budget.\n")
	}
	if f.Paper != "" {
		fmt.Fprintf(&b, "Paper: %s\n", f.Paper)
	}
	if f.Releases != "" {
		fmt.Fprintf(&b, "Releases: %s\n", f.Releases)
	}
	return b.String()
}

func strconvQuote(s string) string { return `"` + s + `"` }

// EpsFor is eps_for: the inverse of a release's error bars, from public
// parameters only.
var EpsFor = &Func{
	Name: "eps_for",
	Positional: []Param{dsParam,
		{Name: "fn", Type: "string", Required: true, Doc: "the private function to price: \"private_count\", \"private_sum\" or \"private_histogram\" (with by=, grouped counts and sums too)"}},
	Keywords: []Param{
		{Name: "within", Type: "float", Required: true, Doc: "the half-width wanted: each released value within ± within of the true value at the given level"},
		{Name: "level", Type: "float", Default: "0.95", Doc: "the confidence level, strictly between 0 and 1"},
		{Name: "delta", Type: "float", Default: "0", Doc: "the call's δ: 0 for discrete Laplace noise (pure ε), > 0 for discrete Gaussian noise calibrated to (ε, δ)"},
		{Name: "col", Type: "string", Default: `""`, Doc: "the call's col= (private_sum, private_histogram)"},
		{Name: "by", Type: "string", Default: `""`, Doc: "the call's by= (grouped counts and sums)"},
		{Name: "bins", Type: "int", Default: "0", Doc: "the call's bins= (private_histogram of a numeric column)"},
		{Name: "max_groups", Type: "int", Default: "1", Doc: "the call's max_groups= (user-level data)"},
	},
	Result: "float64",
	Doc: "The smallest ε (to 4 significant digits, rounded up) at which fn's releases on this dataset have a level confidence interval of half-width at most within, " +
		"for the call's public parameters (col, by, bins, max_groups, delta): the calls are planned, never run. Means and quantiles are refused: a mean's interval depends on its count, " +
		"and a quantile has a rank bound, not an interval of values.",
	Releases: "nothing: computed from the public schema; reads no data and spends no budget",
}

// PrivateLinearRegression is private_linear_regression.
var PrivateLinearRegression = &Func{
	Name:       "private_linear_regression",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "y", Type: "string", CostFree: true, Required: true, Doc: "the numeric target column; the data owner must have declared its public bounds (`dataset add --bounds y=lo:hi`)"},
		{Name: "x", Type: "[]string", CostFree: true, Required: true, Doc: "the numeric feature columns, in the order of Coef (1..256); each needs public bounds declared by the data owner"},
		epsParam, deltaGaussian,
		{Name: "r2", Type: "bool", CostFree: true, Late: true, Default: "false",
			Doc: "also release yᵀy (20 % of the call's ρ, the rest split as without it; the cost is the same) and from it R², the residual std and the coefficients' parametric-bootstrap intervals (CoefInterval)"},
	},
	Private: true,
	Result:  "*RegressionResult",
	Doc: "A private least-squares fit of y on the x columns with an intercept (Coef, one per x column in order, Intercept, Predict(row)). " +
		"Features and target are clamped to their public bounds and each mapped to [−1, 1] by them (a public affine map; a NaN counts as the midpoint), and the coefficients are mapped back; AdaSSP releases the sufficient statistics XᵀX and Xᵀy and a lower bound of λ_min(XᵀX) with Gaussian noise, ρ/3 each, and solves the ridge regression whose λ it chose from that bound. Row-level datasets only.",
	Paper:    "AdaSSP, Wang 2018 (Revisiting differentially private linear regression: optimal and adaptive prediction & estimation, Algorithm 2), in zCDP (Bun & Steinke 2016) with discrete Gaussian noise (Canonne, Kamath & Steinke 2020) (docs/mechanisms.md, private linear and logistic regression)",
	Releases: "the fitted coefficients and intercept (post-processing of the noisy XᵀX, Xᵀy and λ_min); the ridge λ it chose",
}

// PrivateLogisticRegression is private_logistic_regression.
var PrivateLogisticRegression = &Func{
	Name:       "private_logistic_regression",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "y", Type: "string", CostFree: true, Required: true, Doc: "the label column: numeric with values 0/1 (clamped to [0, 1]), or categorical with positive= naming the positive class"},
		{Name: "x", Type: "[]string", CostFree: true, Required: true, Doc: "the numeric feature columns, in the order of Coef (1..256); each needs public bounds declared by the data owner"},
		epsParam, deltaGaussian,
		{Name: "positive", Type: "string", CostFree: true, Default: `""`, Doc: "a categorical y: the category of its public domain that is the positive class (required there); leave it out for a numeric 0/1 column"},
		{Name: "l2", Type: "float", CostFree: true, Default: "0.001", Doc: "the public ridge penalty (l2/2)·‖θ‖² added to the mean logistic loss (≥ 0)"},
		{Name: "iters", Type: "int", CostFree: true, Default: "100", Doc: "the number of noisy full-batch gradient steps (1..10000), each a pass over the rows; the budget is split evenly over them, so the cost does not change"},
	},
	Private: true,
	Result:  "*RegressionResult",
	Doc: "A private logistic regression of the 0/1 (or positive-class) label y on the x columns with an intercept (Coef, Intercept, Predict(row) giving the positive class's probability). " +
		"Features are clamped to their public bounds and each mapped to [−1, 1] by them (l2 penalises the coefficients on that scale); iters full-batch gradient steps each release the summed gradient with Gaussian noise (ℓ2 sensitivity the row norm bound B, 2B under replace-one), scaled by a noisy row count. Row-level datasets only.",
	Paper:    "noisy gradient descent (Bassily, Smith & Thakurta 2014, full batch) in zCDP (Bun & Steinke 2016) with discrete Gaussian noise (Canonne, Kamath & Steinke 2020) (docs/mechanisms.md, private linear and logistic regression)",
	Releases: "the coefficients and intercept of the last iterate (post-processing of the noisy gradients and count)",
}

// PrivateSynthesize is private_synthesize.
var PrivateSynthesize = &Func{
	Name:       "private_synthesize",
	Positional: []Param{dsParam},
	Keywords: []Param{
		{Name: "cols", Type: "[]string", CostFree: true, Required: true, Doc: "the columns of the synthetic table, in order (2..64): categorical columns (their public domain and \"other\") and numeric columns with public bounds declared by the data owner (binned)"},
		epsParam, deltaGaussian,
		{Name: "rows", Type: "int", CostFree: true, Default: "0", DefaultDoc: "the dataset's public number of rows if the owner declared it, else 10000",
			Doc: "the number of synthetic rows to sample (1..1000000); sampling is post-processing, so it does not change the cost"},
		{Name: "bins", Type: "int", CostFree: true, Default: "10", Doc: "the number of equal-width bins of each numeric column over its public bounds (1..1024); a numeric value is emitted as its bin's midpoint"},
	},
	Private: true,
	Result:  "*SynthTable",
	Doc: "A public synthetic table (Columns, Rows, CSV()) sampled from a private model of the columns' pairwise structure: MST measures every column's one-way marginal, chooses a maximum spanning tree of column pairs by the exponential mechanism on how badly independence explains each pair, and measures the two-way marginals on the tree's edges, ρ/3 each, with Gaussian noise; the rows are sampled from the tree model those marginals define with a public seeded generator. " +
		"The table is public: explore it freely with Go code, at no further cost. Row-level datasets only.",
	Paper:    "MST, McKenna, Miklau & Sheldon 2021 (Winning the NIST Contest: a scalable and general approach to differentially private synthetic data, Algorithm 1), in zCDP (Bun & Steinke 2016) with discrete Gaussian noise (Canonne, Kamath & Steinke 2020) and the exponential mechanism as bounded range (Cesar & Rogers 2021) (docs/mechanisms.md, private synthetic data)",
	Releases: "the noisy one-way marginals, the chosen tree and its noisy two-way marginals, as the fitted tree model; the synthetic rows are post-processing of it",
}
