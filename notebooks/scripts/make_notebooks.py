"""Writes the demo notebooks (notebooks/*.ipynb) from the cell lists below.

    /usr/bin/python3 notebooks/scripts/make_notebooks.py [NAME ...]

The notebooks are stored without outputs (make demo and the tests execute
them). The cell lists below are the source of the four notebooks they name,
with each cell's test metadata (privnotes_test, see notebooks/doc.go) in one
readable place; TestGeneratorMatchesNotebooks fails when a committed
notebook and this script disagree, so a cell edited in Jupyter goes here too.
tabular.ipynb is edited directly. Cell ids are stable so diffs stay small.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.dirname(HERE)

METADATA = {
    "kernelspec": {"name": "privnotes", "display_name": "Go (privnotes)", "language": "go"},
    "language_info": {"name": "go", "file_extension": ".go", "mimetype": "text/x-go"},
}


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def code(src, tags=(), checks=(), error=None):
    meta = {}
    if tags:
        meta["tags"] = list(tags)
    test = {}
    if checks:
        test["checks"] = list(checks)
    if error:
        test["error"] = error
    if test:
        meta["privnotes_test"] = test
    return {"cell_type": "code", "execution_count": None, "metadata": meta, "outputs": [],
            "source": src.strip("\n")}


def rng(pattern, lo=None, hi=None):
    c = {"pattern": pattern}
    if lo is not None:
        c["min"] = lo
    if hi is not None:
        c["max"] = hi
    return c


def contains(s):
    return {"contains": s}


def mime(m):
    return {"mime": m}


def write(name, cells):
    nb_cells = []
    for i, c in enumerate(cells):
        c = dict(c)
        c["id"] = f"{name}-{i:02d}"
        src = c["source"]
        lines = src.split("\n")
        c["source"] = [l + "\n" for l in lines[:-1]] + [lines[-1]]
        nb_cells.append(c)
    nb = {"cells": nb_cells, "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5}
    path = os.path.join(OUT, name + ".ipynb")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


NOTEBOOKS = {}


def notebook(fn):
    NOTEBOOKS[fn.__name__.replace("_", "-")] = fn
    return fn


# A small SVG line chart written in plain Go: the DSL has plots for PCA
# results only, and a cell may build any SVG and display it with svg(...).
SVG_CHART = r'''
import (
	"fmt"
	"math"
	"strings"
)

// lineChart draws series (one y per x) on log-log axes as an SVG string.
func lineChart(title, xlabel, ylabel string, xs []float64, names []string, ys [][]float64) string {
	const w, h, left, right, top, bottom = 560.0, 340.0, 70.0, 150.0, 30.0, 45.0
	lx := func(v float64) float64 { return math.Log10(v) }
	xmin, xmax := lx(xs[0]), lx(xs[len(xs)-1])
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range ys {
		for _, v := range s {
			if v > 0 {
				ymin = math.Min(ymin, math.Floor(lx(v)))
				ymax = math.Max(ymax, math.Ceil(lx(v)))
			}
		}
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	px := func(v float64) float64 { return left + (lx(v)-xmin)/(xmax-xmin)*(w-left-right) }
	py := func(v float64) float64 { return h - bottom - (lx(v)-ymin)/(ymax-ymin)*(h-top-bottom) }
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="14">%s</text>`, left, title)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`, left, top, left, h-bottom)
	for _, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`, px(x), h-bottom+16, x)
	}
	for e := ymin; e <= ymax; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">1e%.0f</text>`, left, y, w-right, y, left-6, y+4, e)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (left+w-right)/2, h-8, xlabel)
	fmt.Fprintf(&b, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`, (top+h-bottom)/2, ylabel)
	for i, s := range ys {
		c := colors[i%len(colors)]
		var pts []string
		for j, v := range s {
			if v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(v)))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(xs[j]), py(v), c)
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%d" x2="%.0f" y2="%d" stroke="%s" stroke-width="2"/><text x="%.0f" y="%d">%s</text>`,
			w-right+10, 40+18*i, w-right+30, 40+18*i, c, w-right+36, 44+18*i, names[i])
	}
	b.WriteString(`</svg>`)
	return b.String()
}
'''


QUICKSTART_INTRO = """
# privnotes quickstart: a private PCA of real data

This notebook runs in the **Go (privnotes)** kernel. Cells are Go plus a small privacy DSL:
`budget` blocks, keyword arguments such as `eps=1`, and functions such as `private_pca`.

**The data.** `breast_cancer` is the Wisconsin diagnostic breast cancer data set (569 patients,
30 measurements of a cell nucleus image each; see `notebooks/data/README.md` for its origin and
licence). We treat it as private: one row is one patient. Its data owner registered it
outside the notebook, with a total privacy budget and a public clipping norm — this is what
`make demo` and the tests run:

```sh
privnotes dataset add breast_cancer --csv notebooks/data/breast_cancer_scaled.csv \\
    --eps 3 --delta 1e-6 --clip 2.5 --unit row
```

A notebook can use that budget but never raise it, and it never sees a row.
The whole notebook runs in a few seconds.
"""

QUICKSTART_LIVE_INTRO = """
# privnotes quickstart on a live PostgreSQL table

This is `quickstart.ipynb` with one change: its data set, `breast_cancer_live`, is not a
snapshot but a **live PostgreSQL table**. Every cell below is the quickstart's, apart from the
data set's name; each private call runs inside the database as one or two statements that return
aggregates only (the clipped second moment, the clipped rows' sum, a count), and privnotes adds
the noise ([docs/deployment.md](../docs/deployment.md), "A dataset in a live PostgreSQL table").
The releases are the snapshot's up to rounding far below the noise, with the same receipts.

**The data.** The same 569 rows of the Wisconsin diagnostic breast cancer data set
(`notebooks/data/breast_cancer_scaled.csv`, see `notebooks/data/README.md`), loaded into the
table `public.breast_cancer`. Its data owner gave privnotes a role that may only read that table
and registered the table where it is, with the quickstart's budget and clipping norm — this is
what the tests run (`notebooks/scripts/register_datasets.sh`, against a throwaway server):

```sh
psql -c "CREATE ROLE privnotes_reader LOGIN PASSWORD '…'; GRANT SELECT ON public.breast_cancer TO privnotes_reader"
privnotes dataset add breast_cancer_live --from 'postgres://privnotes_reader@HOST:PORT/postgres' \\
    --table public.breast_cancer --password-file pg-password \\
    --eps 3 --delta 1e-6 --clip 2.5 --unit row --neighbour replace-one
```

Registration reads the table's catalog (column names and types), never a row; the password
stays in the state directory, out of the notebook's reach.
"""

QUICKSTART_CLICKHOUSE_INTRO = """
# privnotes quickstart on a ClickHouse Distributed table

This is `quickstart.ipynb` with one change: its data set, `breast_cancer_ch`, is not a
snapshot but a **live ClickHouse table**, a `Distributed` table over two shards. Every cell below
is the quickstart's, apart from the data set's name; each private call runs inside ClickHouse as
one or two statements that return aggregates only (the clipped second moment, the clipped rows'
sum, a count), and privnotes adds the noise ([docs/deployment.md](../docs/deployment.md), "A
dataset in a live ClickHouse table"). The releases are the snapshot's up to rounding far below
the noise, with the same receipts.

**The data.** The same 569 rows of the Wisconsin diagnostic breast cancer data set
(`notebooks/data/breast_cancer_scaled.csv`, see `notebooks/data/README.md`), split over the
shards' tables and read through the Distributed table `db.breast_cancer`. Its data owner gave
privnotes a user that reads it and registered the table where it is, with the quickstart's
budget and clipping norm — this is what the tests run (`notebooks/scripts/register_datasets.sh`,
against a throwaway server):

```sh
privnotes dataset add breast_cancer_ch --from 'clickhouse://analyst@HOST:HTTP_PORT/db' \\
    --table db.breast_cancer --password-file ch-password \\
    --eps 3 --delta 1e-6 --clip 2.5 --unit row --neighbour replace-one
```

Registration reads the table's catalog (column names and types), never a row; the password
stays in the state directory, out of the notebook's reach.
"""


@notebook
def quickstart():
    return quickstart_cells("breast_cancer", QUICKSTART_INTRO)


@notebook
def quickstart_live():
    return quickstart_cells("breast_cancer_live", QUICKSTART_LIVE_INTRO)


@notebook
def quickstart_clickhouse():
    return quickstart_cells("breast_cancer_ch", QUICKSTART_CLICKHOUSE_INTRO)


def quickstart_cells(name, intro):
    """The quickstart's cells on data set name: only the intro and the name
    given to dataset(...) differ between quickstart.ipynb,
    quickstart-live.ipynb and quickstart-clickhouse.ipynb."""
    cells = quickstart_body()
    out = [md(intro)]
    for c in cells:
        c = dict(c)
        if c["cell_type"] == "code":
            c["source"] = c["source"].replace('dataset("breast_cancer")', 'dataset("%s")' % name)
        out.append(c)
    return out


def quickstart_body():
    return [
        code("%datasets", checks=[contains("breast_cancer")]),
        md("""
`dataset(name)` opens a registered data set. The handle shows public schema only — the columns,
the clip norm, the privacy unit and the budget — never the number of rows or any value.
"""),
        code(r"""
bc := dataset("breast_cancer")
bc
""", checks=[contains("mean_radius")]),
        code("remaining(bc)", checks=[rng(r"^remaining ε=([0-9.]+)", 3, 3)]),
        md("""
## A private PCA in a budget block

A `budget` block caps what the calls inside it may spend together. Before the cell runs,
the calls' costs are checked against the block and against the data set's ledger; at run time
each call is charged durably **before** its mechanism reads the data.

`private_pca(..., method="gauss")` is Analyze Gauss: one symmetric Gaussian perturbation of the
covariance of the clipped rows, then its top eigenvectors. `private_count` counts the patients;
its `delta` selects discrete Gaussian noise, whose zCDP cost composes with the PCA's far better
than a pure-ε Laplace count (without `delta`) would under this data set's zcdp accountant.
"""),
        code(r"""
budget eps=1.2, delta=1e-6 {
	pca := private_pca(bc, k=2, eps=1, delta=1e-6, method="gauss", name="bc_pca")
	n := private_count(bc, eps=0.3, delta=1e-6, name="bc_count")
}
pca
""", checks=[contains("gauss"), rng(r"ε=([0-9.]+), δ=1e-06 \(cost", 1, 1),
             {"reference_pca": {"csv": "data/breast_cancer_scaled.csv", "clip": 2.5, "component": 1, "max_sin2": 0.1}}]),
        md("""
The result holds the two private components (one loading per column), private estimates of
their eigenvalues, and a **privacy receipt**: what was spent, how the noise was calibrated,
the ledger record and what remains. The same receipt is stored in the output's metadata,
so this notebook, once saved, records what every number cost.

Both calls are **named** (`name="bc_pca"`): the ledger stores each release with its charge,
so running this notebook again on the same state directory replays the same numbers at no
cost (the receipt then says "replayed from ledger record N, no new charge"), and
`privnotes notebook verify` can check a saved copy against the ledger
([docs/shared-notebooks.md](../docs/shared-notebooks.md)).

How good is it? The notebook cannot know — it never sees the data — but the tests, standing in
for the data owner, compare the first private component with the exact one: sin² of the angle
between them stays below 0.1 (in 20 000 simulated runs of this noise: median 0.02, largest
0.054). The second component is not reliable at this budget: with 569 rows, the noise of
ε = 1 is comparable with the second eigenvalue, which is also why its private estimate is
inflated. Because the rows were centred on the midpoints of their published ranges, not on
their (private) mean, the first component mostly measures how far a patient's measurements
lie above or below those midpoints: all its loadings share a sign.

The noisy count (discrete Gaussian, standard deviation 14 at ε = 0.3, δ = 10⁻⁶) is within ±36
of the truth with probability 99%:
"""),
        code("n", checks=[rng(r"private count ≈ (-?[0-9.]+)", 450, 690)]),
        md("""
## Plots of the private components

Plots are post-processing of a DP release: they cost nothing more.
"""),
        code(r"""plot_loadings(pca, component=1, title="breast_cancer: first private component")""",
             checks=[mime("image/png")]),
        code(r"""plot_eigenvalues(pca, title="private eigenvalue estimates")""", checks=[mime("image/png")]),
        md("""
The results are ordinary Go values: the components are a gonum `*mat.Dense`, so you can keep
computing with them (for free: they are already private). The five largest loadings of the
first component:
"""),
        code(r"""
import "sort"

pc1 := pca.Component(1)
idx := make([]int, len(pc1))
for i := range idx {
	idx[i] = i
}
sort.Slice(idx, func(a, b int) bool { return math.Abs(pc1[idx[a]]) > math.Abs(pc1[idx[b]]) })
for _, i := range idx[:5] {
	fmt.Printf("%-24s % .3f\n", bc.Columns()[i], pc1[i])
}
""", checks=[rng(r"(?m)^\S+\s+(-?[0-9.]+)$", -1, 1)]),
        md("""
## The ledger

Every charge is a durable, hash-chained record in the data set's state directory. Restarting
the kernel gives nothing back. `%ledger` shows the records of the data sets this notebook opened
(`%ledger --all` every data set's); `privnotes ledger show` prints the whole ledger from a terminal.
"""),
        code("%ledger", checks=[contains("breast_cancer")]),
        code("remaining(bc)", checks=[rng(r"^remaining ε=([0-9.]+)", 1.94, 1.95)]),
        md("""
## Asking for too much

About 1.95 of the ε = 3 budget is left. A cell that asks for ε = 3 more is refused **before
anything in it runs**: the pre-check composes the statically known costs of its budget blocks
with what the ledger has recorded and finds that they would exceed the budget, so not even
the `Println` on its first line runs. (The pre-check knows a call's data set from
`dataset("…")` in the same cell or from a handle such as `bc` opened in an earlier cell; a
call whose data set it cannot tell is still refused at the charge, before its mechanism reads
data. This cell is tagged `raises-exception`, so the notebook carries on.)
"""),
        code(r"""
fmt.Println("this line does not run")
budget eps=3, delta=1e-6 {
	again := private_pca(bc, k=2, eps=3, delta=1e-6, method="gauss")
}
""", tags=["raises-exception"], error="BudgetExceeded",
             checks=[contains("cell refused before running"), {"absent": "this line does not run"}]),
        md("Nothing was charged by the refused cell:"),
        code("remaining(bc)", checks=[rng(r"^remaining ε=([0-9.]+)", 1.94, 1.95)]),
        md("""
## Centred PCA

The components above describe Σ aaᵀ, the rows' second moment about the midpoints of their
published ranges. What sklearn's `PCA` reports is the
principal components of the **covariance**: of the rows centred on their mean. The mean is
private, so `center=true` estimates it first with part of the call's budget (10 % of its ρ by
default, `center_share=` to change it; the receipt says so), then runs the method on the rows
centred by that private mean. The call costs what an uncentred one at the same (ε, δ) costs.

The centred rows are much shorter than the raw ones: each feature was scaled to unit range, so
a centred coordinate has a spread of a few tenths and 30 of them a norm of about 1. The
centred rows are clipped again to the call's clip norm, so a clip of 1 (a public choice from
that scaling, not from the data) loses little and buys a third of the noise of the registered
2.5. Method `gauss` also reports **explained-variance ratios**: each eigenvalue estimate over the
trace of the same noisy matrix, i.e. relative to the *private* estimate of the total variance.
"""),
        code(r"""
centred := private_pca(bc, k=2, eps=1, delta=1e-6, method="gauss", clip=1, center=true, name="bc_pca_centred")
centred
""", checks=[contains("centred by the private mean"), contains("0.1 of the budget"),
             rng(r"explained-variance ratio \(of the private total variance estimate [0-9.e+]+\): \[([0-9.e-]+)", 0.3, 1),
             {"reference_pca": {"csv": "data/breast_cancer_scaled.csv", "clip": 1, "center": True, "component": 1, "max_sin2": 0.3}}]),
        md("""
Against the exact centred component (computed by the tests, standing in for the data owner,
from the rows clipped to 1, centred on their mean and clipped again), sin² stays below 0.3
(in 400 simulated runs of this noise: median 0.09, largest 0.19). Its loadings still share a
sign — the covariance's first component of these data is an axis along which all measurements
grow together, led by the concavity measurements and the size standard errors — but it now
describes the spread around the mean, not the distance from the midpoints. It explains about
60 % of the private total variance (the exact share is 63 %; at this budget the private ratio
lies between 0.53 and 0.75 in 99 % of simulated runs).
"""),
        code("remaining(bc)", checks=[rng(r"^remaining ε=([0-9.]+)", 1.50, 1.52)]),
        md("""
## What the numbers cost

- `private_pca(eps=1, delta=1e-6)` was calibrated in zero-concentrated DP: it spent
  ρ ≈ 0.0244, the largest ρ whose tight conversion is (ε, δ) = (1, 10⁻⁶).
- `private_count(eps=0.3, delta=1e-6)` is calibrated the same way: ρ ≈ 0.0025. Without
  `delta` it would be a pure ε = 0.3 Laplace count costing ρ = ε²/2 = 0.045, and the PCA and
  the count together would spend ε ≈ 1.76: more than the block's 1.2, so that cell would be
  refused.
- The data set's accountant adds the ρ's and converts the total once, at the budget's δ:
  ε ≈ 1.055 spent (basic composition would say 1.3), so about 1.945 remained. Composing in zCDP is why a further ε = 2.5 step
  would still fit, while ε = 3 does not; [docs/accounting.md](../docs/accounting.md) works
  these numbers out.
- The centred PCA (ε = 1 again) added another ρ ≈ 0.0244 — its private mean took 10 % of it —
  so ε ≈ 1.49 is spent and about 1.51 remains.

Next: `power-methods.ipynb` compares the private PCA methods on public synthetic data, where the
true answer is known.
"""),
    ]


@notebook
def power_methods():
    return [
        md("""
# Private power methods against ε

Three ways to compute a private top principal component, compared on **public synthetic data**
where the true component is known, so the error can be measured:

- `npm`: the noisy power method (Hardt & Price 2014): each iteration releases C·x plus Gaussian
  noise scaled to the worst-case row (the clip norm);
- `adaptive`: the adaptive power method (Nguyen, Ene & Nguyen): each iteration a sparse-vector
  step picks a threshold θ that few rows' scores exceed, those rows are dropped, and the noise
  is scaled to θ instead of the clip norm;
- `gauss`: Analyze Gauss (Dwork, Talwar, Thakurta & Zhang 2014): one noisy covariance, then its
  top eigenvector.

Data from `synth_*` is public: a private function run on it reports in its receipt the cost it
*would* have, counts against an enclosing budget block, and charges no ledger. Its `Truth` field
holds the planted component. The error is sin²∠(x̂, u) = 1 − ⟨x̂, u⟩² (0 is perfect, 1 is
orthogonal).

The data follow the covariance of the adaptive-power-method paper's Gaussian recipe:
Σ = diag(4, 1, …, 1) up to a random rotation (a spike of 3 over a unit bulk), d = 20.
**Quick sizes:** n = 20 000 rows (the paper uses 10⁴ and 10⁵), five values of ε, five
repetitions each; the notebook runs in well under a minute. `privnotes bench` runs the
papers' grids (see docs/mechanisms.md).
"""),
        code(r"""
data := synth_spiked(n=20000, d=20, k=1, gap=3, seed=7)
data
""", checks=[contains("PUBLIC")]),
        code(SVG_CHART),
        code(r"""
import (
	"sort"

	"gonum.org/v1/gonum/mat"
)

// sin2 is sin² of the angle between the first private component and the truth.
func sin2(res *PCAResult, truth *mat.Dense) float64 {
	c := mat.Dot(res.Components.ColView(0), truth.ColView(0))
	return 1 - c*c
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

var (
	epsGrid = []float64{0.25, 0.5, 1, 2, 4}
	methods = []string{"npm", "adaptive", "gauss"}
	// Iterations of the power methods: their defaults are set for small
	// gaps and large n; with this gap 8 suffice, and each iteration costs
	// noise. Analyze Gauss is a single release (0).
	iters = map[string]int{"npm": 8, "adaptive": 8, "gauss": 0}
)

// sweep returns the median sin² of each method at each ε, rows clipped to clip.
func sweep(clip float64) [][]float64 {
	errs := make([][]float64, len(methods))
	for m, method := range methods {
		for _, eps := range epsGrid {
			var reps []float64
			for r := 0; r < 5; r++ {
				res := private_pca(data, k=1, eps=eps, delta=1e-6, method=method, iters=iters[method], clip=clip)
				reps = append(reps, sin2(res, data.Truth))
			}
			errs[m] = append(errs[m], median(reps))
		}
	}
	return errs
}

func table(errs [][]float64) {
	fmt.Printf("%-9s", "ε")
	for _, e := range epsGrid {
		fmt.Printf("%10g", e)
	}
	fmt.Println()
	for m, method := range methods {
		fmt.Printf("%-9s", method)
		for _, v := range errs[m] {
			fmt.Printf("%10.4f", v)
		}
		fmt.Println()
	}
}
"""),
        md("""
## 1. A tight public bound

First with the clip norm the synthetic data carry by default: the largest row norm, the
tightest bound a data owner could declare. Every method's noise is then small compared with
what a typical row contributes.
"""),
        code(r"""
tight := sweep(0) // clip=0: the data's own bound
table(tight)
""", checks=[rng(r"(?m)^(?:npm|adaptive|gauss)\s.*\s([0-9.]+)$", 0, 0.05)]),
        code(r"""svg(lineChart("tight bound: median sin², n=20000, d=20", "ε", "sin²", epsGrid, methods, tight))""",
             checks=[mime("image/svg+xml")]),
        md("""
Each row is the median sin² over five runs; the noise is fresh every run (cryptographic, not
seeded). The tests check that every method's error at ε = 4 is below 0.05. With a tight bound
and a small d, Analyze Gauss — one noisy d×d matrix — is hard to beat.

## 2. A loose public bound

The paper's recipe normalises rows by a public high-probability bound, so typical rows are far
shorter than the clip norm. Here the same data with clip = 30, about six times a typical row
norm (√23 ≈ 4.8): npm and Analyze Gauss scale their noise to 30, while the adaptive method
scales it to a threshold it picks privately from the rows' actual scores.
"""),
        code(r"""
loose := sweep(30)
table(loose)
fmt.Printf("at ε=1: adaptive/gauss error ratio %.3f\n", loose[1][2]/loose[2][2])
""", checks=[rng(r"(?m)^adaptive\s.*\s([0-9.]+)$", 0, 0.05),
             rng(r"error ratio ([0-9.]+)", 0, 0.5)]),
        code(r"""svg(lineChart("loose bound (clip=30): median sin²", "ε", "sin²", epsGrid, methods, loose))""",
             checks=[mime("image/svg+xml")]),
        md("""
With the loose bound the adaptive method keeps almost the accuracy it had, while the other two
lose an order of magnitude or more: this is the setting the adaptive power method was designed
for. (The tests check the adaptive error at ε = 4 below 0.05 and the adaptive/gauss ratio at
ε = 1 below 0.5.)

On a registered (private) data set, such a sweep would be refused quickly: every call spends.
Experiments across many ε belong on public data like this. What one such call would cost:
"""),
        code(r"""
r := private_pca(data, k=1, eps=1, delta=1e-6, method="adaptive", iters=8, clip=30)
fmt.Println(r.Receipt)
""", checks=[contains("not charged")]),
        md("""
## 3. Entry-level PCA on a matrix dataset

Sometimes the private data are one matrix whose *entries* are the individuals' contributions
(a co-occurrence or rating matrix, one contribution per entry). The data owner registers such a
matrix with `privnotes dataset add NAME --matrix FILE --entry-bound B`: neighbouring matrices
differ in one entry (and its mirror, for a symmetric matrix), every entry in [−B, B]. The
private power method of Hardt & Price's Figure 3 (`method="ppm-entry"`) scales its noise to
‖X‖_∞ of the current iterate, which for an incoherent matrix is about √(ln d / d): its noise
does not grow with d, while a spike of a matrix with bounded entries can.

`spiked_matrix` is a 500×500 symmetric matrix with entries in [−1, 1], built from a public
recipe (`notebooks/scripts/make_spiked_matrix.awk`): 150·u uᵀ + 100·v vᵀ plus a small
perturbation, u and v two cosine (DCT) vectors. Because the recipe is public, the notebook can
measure the error against u and v. The owner gave it a budget of ε = 40, δ = 10⁻⁵ under basic
composition: entry-level privacy on a matrix of this size needs large ε (the `ppm-entry` bench
workload in docs/mechanisms.md shows the whole curve).
"""),
        code(r"""
import "gonum.org/v1/gonum/mat"

m := dataset("spiked_matrix")
fmt.Println(m)
const dm = 500
planted := mat.NewDense(dm, 2, nil)
for i := 0; i < dm; i++ {
	for j, f := range []float64{3, 5} {
		planted.Set(i, j, math.Sqrt(2.0/dm)*math.Cos(math.Pi*float64(2*i+1)*f/(2*dm)))
	}
}
// err2 is ‖sin Θ‖²_F = 2 − ‖CᵀP‖²_F between the private components C and
// the planted span(u, v) (0: the same plane, 2: orthogonal).
err2 := func(c *mat.Dense) float64 {
	var p mat.Dense
	p.Mul(c.T(), planted)
	f := mat.Norm(&p, 2) // Frobenius
	return 2 - f*f
}
""", checks=[contains("500×500 symmetric matrix, neighbours=entry")]),
        md("""
One Gaussian run (ε = 16, δ = 10⁻⁶, 8 power steps, p = 2k = 4 columns) and one run of the
pure-ε variant at the same ε (`noise="laplace"`, no delta: Corollary 4.7's Laplace noise, each
of the 9 releases of `private_low_rank` getting ε/9). The receipts say what each cost and, in
their notes, the relation the noise was calibrated for (entry-level DP, an entry moving by up
to 2B = 2).
"""),
        code(r"""
g := private_pca(m, method="ppm-entry", k=2, eps=16, delta=1e-6, iters=8)
fmt.Printf("gaussian: ‖sinΘ‖²_F %.4f, value estimates %.1f\n", err2(g.Components), g.Values)
fmt.Println(g.Receipt)
""", checks=[rng(r"gaussian: ‖sinΘ‖²_F ([0-9.]+)", 0, 0.3), contains("entry-level DP")]),
        code(r"""
l := private_low_rank(m, k=2, eps=16, noise="laplace", iters=8)
fmt.Printf("laplace (pure ε): ‖sinΘ‖²_F %.4f, value estimates %.1f\n", err2(l.Components), l.Values)
lr, lc := l.Matrix.Dims()
fmt.Printf("released a %d×%d approximation of rank ≤ 4\n", lr, lc)
fmt.Println(l.Receipt)
""", checks=[rng(r"laplace \(pure ε\): ‖sinΘ‖²_F ([0-9.]+)", 0, 2), contains("released a 500×500 approximation"),
             contains("pure ε=16")]),
        md("""
The Gaussian run recovers the plane (the tests check ‖sin Θ‖²_F ≤ 0.3; it is typically about
0.05). The pure-ε run pays basic composition over its releases (L, not √L) and the ℓ1 norm of
each product (p, not √p), so at the same ε it is usually an order of magnitude worse (the bench
table shows where it catches up: ε = 64 at d = 1000).

A rectangular matrix (`--rectangular`) runs as the symmetric [[0, M], [Mᵀ, 0]]; its results
come back as M's left singular vectors (`Components`), right ones (`Right`) and singular values.
Row functions do not take a matrix dataset — their guarantees are about rows, not entries —
and are refused before anything is charged:
"""),
        code(r"""private_count(m, eps=0.1)""", tags=["raises-exception"], error="ArgumentError"),
        md(r"""
## 4. When the gap is unknown: `gap="auto"`

The adaptive method's iteration count T assumes a relative eigengap; left out, κ₀ = 0.5, and
`iters` fixes T directly. With `gap="auto"` it runs once per guess κ ∈ {0.75, 0.5, 0.25, 0.125}
(here `iters=8` is read as the T of κ₀ = 0.5: T = 4, 8, 20, 42) and the exponential mechanism picks
one run by how much of the rows' variance its direction leaves unexplained. Everything stays
within the call's ε and δ: 90% of the budget is split over the four runs, 10% pays for the choice
(docs/mechanisms.md). Each run therefore gets less than a quarter of the budget, so expect a
larger error than one run at a good guess: the price of not knowing the gap.
"""),
        code(r"""
var autoErrs, k0Errs []float64
for r := 0; r < 5; r++ {
	a := private_pca(data, k=1, eps=1, delta=1e-6, method="adaptive", iters=8, clip=30, gap="auto")
	b := private_pca(data, k=1, eps=1, delta=1e-6, method="adaptive", iters=8, clip=30)
	autoErrs = append(autoErrs, sin2(a, data.Truth))
	k0Errs = append(k0Errs, sin2(b, data.Truth))
}
fmt.Printf("median sin² at ε=1: gap=auto %.4f, default κ₀=0.5 %.4f\n", median(autoErrs), median(k0Errs))
""", checks=[rng('gap=auto ([0-9.]+)', 0, 0.2), rng('κ₀=0.5 ([0-9.]+)', 0, 0.05)]),
    ]


SUBSPACE_HELPERS = r'''
import (
	"sort"

	"gonum.org/v1/gonum/mat"
)

// sinTheta2 is ‖sin Θ‖²_F = k − ‖UᵀX‖²_F between the private components U
// and the planted subspace X (both d×k with orthonormal columns).
func sinTheta2(u, x *mat.Dense) float64 {
	var p mat.Dense
	p.Mul(u.T(), x)
	_, k := x.Dims()
	s := 0.0
	r, c := p.Dims()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s += p.At(i, j) * p.At(i, j)
		}
	}
	return float64(k) - s
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
'''


@notebook
def dp_pca():
    return [
        md("""
# DP-PCA, private Oja and Analyze Gauss

Three ways to estimate the top principal component under (ε, δ)-DP, from the DP-PCA paper
(Liu, Kong, Jain & Oh, NeurIPS 2022) and its baselines:

- `dppca`: DP-PCA (Algorithm 3): one pass of minibatch Oja updates whose clipping range and
  noise are set by private estimates (a private top-eigenvalue estimate, Algorithm 4, and a
  private mean of the minibatch gradients, Algorithm 5). It never uses a worst-case bound;
- `oja`: minibatch private Oja (Eq. 7), the DP-SGD baseline: clip each gradient to a public
  bound and add Gaussian noise;
- `gauss`: Analyze Gauss: one noisy covariance, then its top eigenvector.

Both Oja variants are private under **replace-one** neighbours only (their minibatches need a
public n) and estimate one component (k = 1). DP-PCA needs many rows (see the last cell).

The data: public Gaussian data from the spiked model, Σ = diag(4, 1, …, 1) up to a rotation,
d = 10. **Quick sizes:** n = 400 000 rows (the paper uses 10⁶), three values of ε, three
repetitions; the notebook runs in about half a minute. The paper's Example 4.1 data (rows
whose spread depends on the direction, where DP-PCA's adaptivity matters most) are not
available from the DSL; `privnotes bench --workload dppca-example41` runs them (see
docs/mechanisms.md).

Calibration: with the default `calibration="zcdp"`, DP-PCA and private Oja calibrate their
Gaussian noise exactly (the analytic Gaussian mechanism; private Oja's cost is then a GDP event),
and DP-PCA composes its histograms in approximate zCDP — both marked "beyond the paper" in the
receipts; `calibration="paper"` uses the paper's formulas, which need ε < 0.9 for DP-PCA and
ε < 1 for private Oja.
"""),
        code(r"""
data := synth_spiked(n=400000, d=10, k=1, gap=3, seed=11)
data
""", checks=[contains("PUBLIC")]),
        code(SUBSPACE_HELPERS),
        code(r"""
epsGrid := []float64{0.5, 1, 2}
methods := []string{"dppca", "oja", "gauss"}
errs := make([][]float64, len(methods))
for m, method := range methods {
	for _, eps := range epsGrid {
		var reps []float64
		for r := 0; r < 3; r++ {
			res := private_pca(data, k=1, eps=eps, delta=1e-6, method=method)
			reps = append(reps, sinTheta2(res.Components, data.Truth))
		}
		errs[m] = append(errs[m], median(reps))
	}
}
fmt.Printf("%-7s", "ε")
for _, e := range epsGrid {
	fmt.Printf("%11g", e)
}
fmt.Println()
for m, method := range methods {
	fmt.Printf("%-7s", method)
	for _, v := range errs[m] {
		fmt.Printf("%11.2e", v)
	}
	fmt.Println()
}
""", checks=[rng(r"(?m)^(?:dppca|gauss)\s.*\s([0-9.e+-]+)$", 0, 0.1)]),
        code(SVG_CHART),
        code(r"""svg(lineChart("median sin², Gaussian data, n=400000, d=10", "ε", "sin²", epsGrid, methods, errs))""",
             checks=[mime("image/svg+xml")]),
        md("""
Each entry is the median sin² over three runs with fresh noise. The tests check that DP-PCA and
Analyze Gauss reach sin² < 0.1 at ε = 2.

What this shows: at small d and light-tailed data with a tight clip, Analyze Gauss — one noisy
10×10 matrix — is far ahead. DP-PCA's guarantees are about how the error scales: its sample
complexity grows linearly in d (Analyze Gauss's noise grows with d²), and its ranges are
estimated privately instead of assumed, which is what the Example 4.1 data stress. Private
Oja's error depends on how well the public gradient bound fits the data, and it fluctuates from
run to run.

The receipt of one DP-PCA call shows the calibration in words. Its cost is an approximate-DP
event; on a registered data set with the default zcdp accountant such an event costs much more
than its ε once composed (docs/accounting.md works an example), so data sets meant for DP-PCA
are better registered with `--accountant basic`.
"""),
        code(r"""
r := private_pca(data, k=1, eps=1, delta=1e-6, method="dppca")
fmt.Println(r.Receipt)
""", checks=[contains("not charged")]),
        md(r"""
DP-PCA needs many rows. Where the row count is public (here: synthetic data; a registered
data set whose owner declared it with `--public-n`), a call on too few rows is refused before
anything is charged, with the number of rows the minibatches need and how many a useful run
needs. `pad=true` runs it anyway: the data are padded with zero rows to the size the
minibatches need (a public rule, so the run is still private), and the estimate is then mostly
noise, as the receipt's note says.
"""),
        code(r"""
small := synth_spiked(n=5000, d=10, k=1, gap=3, seed=11)
tooSmall := private_pca(small, k=1, eps=1, delta=1e-6, method="dppca", pad=true)
fmt.Println(tooSmall.Receipt)
""", checks=[contains('padded with zero rows'), contains('a useful run needs about')]),
        md(r"""
## Private Oja with shuffling (Algorithm 2)

`method="oja-shuffle"` is the paper's Algorithm 2: one Oja step per row, the rows in a secret
uniformly random order, each step's clipped gradient hidden by Gaussian noise calibrated to a
*local* (ε0, δ0). Shuffling amplifies the local guarantee to a central one, but the bound
(Feldman, McMillan & Talwar 2021) covers only ε = O(√(ln(n/δ)/n)), and it covers *less* as n
grows: at δ = 10⁻⁶ and this data set's 2·10⁵ records (pairs of rows) about 0.05. A larger ε is
refused before anything is charged; the error names the most the bound certifies and the row
counts at which the requested ε would hold.
"""),
        code(r"""
r := private_pca(data, k=1, eps=0.5, delta=1e-6, method="oja-shuffle")
""", tags=['raises-exception'], checks=[contains('certifies at most'), contains('≤ n ≤'), contains('nothing was charged')], error='ArgumentError'),
        md(r"""
Inside the regime the call runs, and the receipt shows the local (ε0, δ0) and the noise each
step adds: one gradient of norm ≤ 1 per step against noise of std about 34. At an ε this small,
4·10⁵ rows are too few for either Oja variant here (both results below are mostly noise, and
vary from run to run). On the bench's larger workload (n = 10⁶, d = 10, ε = 0.02;
docs/mechanisms.md) Eq. 7's ten minibatch steps reach a median sin of 0.063 and the shuffled
run 0.40, while DP-PCA's feasibility check refuses that point. Algorithm 2 is here to reproduce the
paper, not to be chosen for accuracy.
"""),
        code(r"""
shuf := private_pca(data, k=1, eps=0.02, delta=1e-6, method="oja-shuffle")
base := private_pca(data, k=1, eps=0.02, delta=1e-6, method="oja")
fmt.Println(shuf.Receipt)
fmt.Printf("sin² oja-shuffle %.3f\n", sinTheta2(shuf.Components, data.Truth))
fmt.Printf("sin² oja %.3f\n", sinTheta2(base.Components, data.Truth))
""", checks=[contains('local (ε0='), rng('sin² oja-shuffle ([0-9.]+)', 0, 1), rng('sin² oja ([0-9.]+)', 0, 1)]),
    ]


@notebook
def federated():
    return [
        md("""
# Federated private PCA and Private FedRep

Mechanisms where the data are split between parties.

1. **DPS-PCA** (Ge, Wang, Wang & Liu, AISTATS 2018): distributed private (sparse) PCA.
   `private_pca(..., method="federated", providers=N)` deals the rows to N providers; in each
   power step every provider adds its own Gaussian noise to its product before it leaves,
   so the releases are private even against an honest-but-curious coordinator.
2. **Private FedRep** (Snedeker, Zhou & Bassily, "Private Model Personalization Revisited",
   ICML 2025): users each hold a few regression records; they learn a shared d×k
   representation U under **user-level** DP, and each user fits its own k weights locally.
   Only U is released.

Section 3 adds personalised classification on JL features (`private_classify_jl`, the same
paper's Algorithm 3). Sections 1–3 run on **public synthetic data** (`synth_*`): no ledger is
charged, and the truth is known. Section 4 federates three real data servers
(`privnotes serve`), each holding one part of a data set and charging its own ledger.
**Quick sizes** are noted per section; the notebook runs in about a minute.
"""),
        code(SUBSPACE_HELPERS),
        code(SVG_CHART),
        md("""
## 1. DPS-PCA across providers

A spiked model with k = 2 planted directions in d = 50 (quick size: n = 20 000 rows), at
ε = 4. The error is ‖sin Θ‖²_F between the private and the planted subspace (0 is perfect,
k = 2 is orthogonal). More providers means more independent noise in every step: the price of
not trusting a coordinator. `npm` with the same number of power steps (10), run by one trusted
curator on all rows, is shown for comparison.
"""),
        code(r"""
spiked := synth_spiked(n=20000, d=50, k=2, gap=2, seed=5)
providers := []int{1, 2, 5, 10}
fmt.Printf("%-10s %s\n", "providers", "median ‖sinΘ‖²_F (3 runs)")
var fedErr []float64
for _, p := range providers {
	var reps []float64
	for r := 0; r < 3; r++ {
		res := private_pca(spiked, k=2, eps=4, delta=1e-6, method="federated", providers=p)
		reps = append(reps, sinTheta2(res.Components, spiked.Truth))
	}
	fedErr = append(fedErr, median(reps))
	fmt.Printf("%-10d %.4f\n", p, median(reps))
}
var npmReps []float64
for r := 0; r < 3; r++ {
	res := private_pca(spiked, k=2, eps=4, delta=1e-6, method="npm", iters=10)
	npmReps = append(npmReps, sinTheta2(res.Components, spiked.Truth))
}
fmt.Printf("npm (one curator): %.4f\n", median(npmReps))
""", checks=[rng(r"(?m)^1\s+([0-9.]+)$", 0, 0.5)]),
        md("""
The tests check that a single provider reaches ‖sin Θ‖²_F < 0.5 here. The `sparsity=s` keyword
restricts the estimate to s rows (a row-sparse subspace, the paper's setting); this planted
subspace is dense, so it is left at d.

## 2. Private FedRep: seed 004, Figure 1

The paper's experiment (quick size = the paper's size): n = 20 000 users with m = 10 records
each, d = 50, k = 2, labels y = xᵀU*v*ᵢ + N(0, 0.01²), T = 5 rounds, δ = 10⁻⁶, ε from 1 to 8,
both the representation and its initialisation private (the initialisation takes 20% of the
budget). The metric is the population MSE averaged over users: each user fits its own
vᵢ by least squares on its records with the released U, and with x ~ N(0, I) the MSE of
user i is ‖U vᵢ − U* v*ᵢ‖² + R². (v*ᵢ is recovered from the user's nearly noiseless labels;
the average is over the first 2 000 users.)

Baselines, as in the figure: **local** — every user alone, the minimum-norm interpolant of its
10 records in d = 50 (no sharing, no privacy cost; MSE ≈ (1 − m/d)·E‖v*‖² = 1.6), and
**FedRep with ε = 10⁶** — the same algorithm with negligible noise, standing in for
non-private FedRep. The oracle U = U* gives R² = 10⁻⁴.

The step size: `lr=0.5`. (The DSL's default, the paper's η = 2.5, diverges with this gradient
convention even without noise; 0.5 meets the convergence condition η ≤ 1/(2σ²max).)
"""),
        code(r"""
fr := synth_fedrep(users=20000, m=10, d=50, k=2, noise=0.01, seed=3)
fr
""", checks=[contains("20000 users")]),
        code(r"""
const evalUsers = 2000
const labelNoise = 0.01

func fitV(xi *mat.Dense, yi *mat.VecDense, u mat.Matrix) *mat.VecDense {
	var a mat.Dense
	a.Mul(xi, u)
	var v mat.VecDense
	if err := v.SolveVec(&a, yi); err != nil {
		panic(err)
	}
	return &v
}

// userData returns user i's records and labels.
func userData(s *SynthData, i int) (*mat.Dense, *mat.VecDense) {
	_, d := s.X.Dims()
	return s.X.Slice(i*s.M, (i+1)*s.M, 0, d).(*mat.Dense), mat.NewVecDense(s.M, s.Y[i*s.M:(i+1)*s.M])
}

// mseOf averages ‖w_i − U* v*_i‖² + R² over users, with w_i from personal(i).
func mseOf(s *SynthData, personal func(xi *mat.Dense, yi *mat.VecDense) *mat.VecDense) float64 {
	total := 0.0
	for i := 0; i < evalUsers; i++ {
		xi, yi := userData(s, i)
		var ws, diff mat.VecDense
		ws.MulVec(s.Truth, fitV(xi, yi, s.Truth))
		diff.SubVec(personal(xi, yi), &ws)
		total += mat.Dot(&diff, &diff)
	}
	return total/evalUsers + labelNoise*labelNoise
}

// withU: each user fits its k weights on the released representation u.
func withU(u *mat.Dense) func(*mat.Dense, *mat.VecDense) *mat.VecDense {
	return func(xi *mat.Dense, yi *mat.VecDense) *mat.VecDense {
		var w mat.VecDense
		w.MulVec(u, fitV(xi, yi, u))
		return &w
	}
}

// local: the minimum-norm interpolant X_iᵀ(X_i X_iᵀ)⁻¹ y_i of the user's own records.
func local(xi *mat.Dense, yi *mat.VecDense) *mat.VecDense {
	var g mat.Dense
	g.Mul(xi, xi.T())
	var c, w mat.VecDense
	if err := c.SolveVec(&g, yi); err != nil {
		panic(err)
	}
	w.MulVec(xi.T(), &c)
	return &w
}

localMSE := mseOf(fr, local)
oracleMSE := mseOf(fr, withU(fr.Truth))
fmt.Printf("local %.3f, oracle U* %.2e\n", localMSE, oracleMSE)
""", checks=[rng(r"local ([0-9.]+)", 1.4, 1.8)]),
        code(r"""
fedEps := []float64{1, 2, 4, 8}
var privMSE []float64
for _, eps := range fedEps {
	var reps []float64
	for r := 0; r < 2; r++ {
		f := private_fedrep(fr, k=2, eps=eps, delta=1e-6, lr=0.5)
		reps = append(reps, mseOf(fr, withU(f.U)))
	}
	privMSE = append(privMSE, (reps[0]+reps[1])/2)
	fmt.Printf("ε=%g  private FedRep MSE %.2e\n", eps, privMSE[len(privMSE)-1])
}
big := private_fedrep(fr, k=2, eps=1e6, delta=1e-6, lr=0.5)
nearNonPrivate := mseOf(fr, withU(big.U))
fmt.Printf("FedRep, ε=1e6 (≈ non-private) MSE %.2e\n", nearNonPrivate)
""", checks=[rng(r"ε=1  private FedRep MSE ([0-9.e+-]+)", 0, 0.1),
             rng(r"ε=8  private FedRep MSE ([0-9.e+-]+)", 0, 0.01)]),
        code(r"""
flat := func(v float64) []float64 { return []float64{v, v, v, v} }
svg(lineChart("Private FedRep (seed 004, Fig. 1): MSE against ε", "ε", "MSE",
	fedEps, []string{"private FedRep", "local", "FedRep ε=1e6", "oracle U*"},
	[][]float64{privMSE, flat(localMSE), flat(nearNonPrivate), flat(oracleMSE)}))
""", checks=[mime("image/svg+xml")]),
        md("""
As in the paper's figure, private FedRep is far below the local baseline already at ε = 1 and
approaches the non-private curve as ε grows (each entry averages two runs with fresh noise). The
tests check the ε = 1 MSE below 0.1 and the ε = 8 MSE below 0.01, against a local baseline
of about 1.6. The seed's Priv-AltMin comparison is not part of the DSL.

What one call would cost on private data (user-level, replace-one neighbours):
"""),
        code(r"""
f1 := private_fedrep(fr, k=2, eps=1, delta=1e-6, lr=0.5)
fmt.Println(f1.Receipt)
""", checks=[contains("user-level")]),
        md("""
## 3. Personalised classification through a JL projection (seed 004, Algorithm 3)

The paper's Algorithm 3 projects every record with a public random ±1/√k′ matrix M, runs the
exponential mechanism over a γ-cover of the k′×k ball, and releases U_priv = MᵀŨ; each user
fits its own head v on its records and classifies by sign(⟨x, U_priv v⟩). The cover has about
10⁶⁷⁵⁸ points at realistic sizes, so `private_classify_jl` runs two practical variants:
**pool** (the exponential mechanism over a data-independent random pool of `candidates`
matrices: pure ε user-level DP, sampled exactly) and **fedrep-jl** (Private FedRep's loop on
the projected records with a logistic loss: (ε, δ)). docs/mechanisms.md says how each differs
from the paper.

The data are section 2's kind of users (quick size: 500 users of 20 records, d = 6, k = 2),
with the label's sign as the class. Each user fits its head on records 10–14 (over 360
directions) and is scored on records 15–19; the loss is averaged over 300 users. Baselines: the
planted U* (the best a representation can do with 5 records) and a fixed data-independent
d×k matrix (what choosing without data gives).
"""),
        code(r"""
cl := synth_fedrep(users=500, m=20, d=6, k=2, noise=0.1, seed=7)

// headLoss fits each user's head on its records 10..14 and returns the
// share of its records 15..19 that sign(⟨x, U v⟩) gets wrong, averaged
// over the first 300 users.
func headLoss(s *SynthData, u mat.Matrix) float64 {
	_, d := s.X.Dims()
	var total float64
	for i := 0; i < 300; i++ {
		var a mat.Dense
		a.Mul(s.X.Slice(i*s.M, (i+1)*s.M, 0, d), u)
		best, bv0, bv1 := 6, 1.0, 0.0
		for st := 0; st < 360; st++ {
			v0, v1 := math.Cos(math.Pi*float64(st)/180), math.Sin(math.Pi*float64(st)/180)
			e := 0
			for j := 10; j < 15; j++ {
				if s.Y[i*s.M+j]*(a.At(j, 0)*v0+a.At(j, 1)*v1) <= 0 {
					e++
				}
			}
			if e < best {
				best, bv0, bv1 = e, v0, v1
			}
		}
		for j := 15; j < 20; j++ {
			if s.Y[i*s.M+j]*(a.At(j, 0)*bv0+a.At(j, 1)*bv1) <= 0 {
				total += 0.2
			}
		}
	}
	return total / 300
}

fixed := mat.NewDense(6, 2, nil)
for i := 0; i < 6; i++ {
	fixed.Set(i, 0, math.Sin(float64(7*i+1)))
	fixed.Set(i, 1, math.Cos(float64(3*i+2)))
}
fmt.Printf("truth loss %.3f\nfixed-matrix loss %.3f\n", headLoss(cl, cl.Truth), headLoss(cl, fixed))
""", checks=[rng(r"truth loss (\S+)", None, 0.25), rng(r"fixed-matrix loss (\S+)", 0.2, 0.6)]),
        code(r"""
var poolLoss []float64
for r := 0; r < 3; r++ {
	p := private_classify_jl(cl, k=2, eps=8, candidates=500)
	poolLoss = append(poolLoss, headLoss(cl, p.U))
}
p1 := private_classify_jl(cl, k=2, eps=1, candidates=500)
fj := private_classify_jl(cl, k=2, eps=8, delta=1e-6, clip=1, variant="fedrep-jl")
fmt.Printf("pool ε=8 median loss %.3f (runs %.3f)\n", median(poolLoss), poolLoss)
fmt.Printf("pool ε=1 loss %.3f\nfedrep-jl ε=8 loss %.3f\n", headLoss(cl, p1.U), headLoss(cl, fj.U))
""", checks=[rng(r"pool ε=8 median loss (\S+)", 0.1, 0.45)]),
        md("""
The pool's selection lands well below the fixed matrix at ε = 8 and well above the planted U*:
its accuracy is that of the best candidate in a random pool of k′×k matrices (k′ = 4 here at
the default `rho=0.5`), which a projection of isotropic features to k′ dimensions limits. The
tests check the pool's median below 0.45 and U*'s loss below 0.25. On private data the pool
costs pure ε (no δ, any neighbouring relation, no public user count):
"""),
        code(r"""
fmt.Println(p1.Receipt)
""", checks=[contains("jlclass/pool")]),
        *FEDERATION_CELLS,
    ]


# Section 4 of federated.ipynb runs against three real `privnotes serve`
# processes that scripts/federation.sh starts (the tests and make demo call
# it), each holding a third of the breast_cancer rows as dataset "part".
FEDERATION_CELLS = [
    md("""
## 4. Three data owners, three servers

Sections 1–3 simulate their parties inside the kernel. Here the parties are real: three data
owners each run `privnotes serve` on their own state directory — their own registry and their
own **ledger** — and hold a third of the breast cancer rows (rows 1–190, 191–380 and 381–569 of
`data/breast_cancer_scaled.csv`) as a dataset named `part`, with a budget of ε = 10, δ = 10⁻⁶
each. The kernel holds none of their rows; it talks to the servers over gRPC with mutual TLS.

`notebooks/scripts/federation.sh` sets this up on loopback: `privnotes certs init` for the
certificates, `privnotes dataset add part` in each owner's state directory, and three servers on
free ports. The tests and `NOTEBOOK=notebooks/federated.ipynb make demo` run it and give the
kernel `PRIVNOTES_SERVERS=p1=127.0.0.1:PORT,p2=…,p3=…` and `PRIVNOTES_TLS_DIR`. To run this
section by hand (docs/deployment.md has the real deployment):

```sh
sh notebooks/scripts/federation.sh start bin/privnotes build/federation $$   # prints the two variables
set -a; . build/federation/env; set +a                                       # then start Jupyter from this shell
sh notebooks/scripts/federation.sh stop build/federation
```

`federate` makes one handle over the three parts. First a **dry run**: every owner plans the
call from its own registry and says what it would charge and what it would leave; nothing is
charged and no row is read.
"""),
    code(r"""
fed := federate(dataset("part", server="p1"), dataset("part", server="p2"), dataset("part", server="p3"))
plan := private_pca(fed, k=2, eps=4, delta=1e-6, method="federated", dry_run=true)
fmt.Println(plan.Receipt)
""", checks=[contains("nothing charged"), contains("p1:part: would be charged"),
             contains("p2:part: would be charged"), contains("p3:part: would be charged"),
             rng(r"p[123]:part: would be charged[^\n]*leave ε=([0-9.]+)", 5.99, 6.01)]),
    md("""
Now the call. DPS-PCA runs across the servers: each owner charges its own ledger before it reads
its rows, adds its own Gaussian noise to its statistics in every power step, and sends only
those; the kernel sums the noisy replies. The tests, standing in for the owners, compare the
first component with the exact one of all 569 rows: sin² of the angle stays below 0.2 (in 300
in-process runs of the same protocol, noise and rows: median 0.065, largest 0.12).
"""),
    code(r"""
fpca := private_pca(fed, k=2, eps=4, delta=1e-6, method="federated")
fpca
""", checks=[contains("federated/dpspca"),
             {"reference_pca": {"csv": "data/breast_cancer_scaled.csv", "clip": 2.5, "component": 1, "max_sin2": 0.2}}]),
    md("""
The receipt lists each owner's charge, its ledger record there and what remains of its budget.
Record 1 of every ledger is the registration, so "ledger record 2" also shows that the dry run
charged nothing. (Under zCDP, "remaining" is the total less the spent ε; what a further call may
spend is decided by composing it, docs/accounting.md.)
"""),
    code(r"""
fmt.Println(fpca.Receipt)
""", checks=[contains("p1:part: charged"), contains("p2:part: charged"), contains("p3:part: charged"),
             contains("ledger record 2 there"),
             rng(r"p[123]:part: charged[^\n]*remaining ε=([0-9.]+)", 5.99, 6.01)]),
    md("""
**The price of trusting nobody.** The union of the three parts is the `breast_cancer` dataset
this kernel's own state directory holds (quickstart.ipynb uses it). One trusted curator holding
all rows gets a better component at a quarter of the ε with the one-shot Gaussian mechanism
(the tests check sin² below 0.1, as in the quickstart); the federation needs ε = 4 because three
owners each add a full dose of noise in each of ten power steps. The two releases agree: the
tests check |⟨federated, central⟩|² ≥ 0.75 (in 300 pairs of runs: median 0.92, smallest 0.87).
"""),
    code(r"""
central := private_pca(dataset("breast_cancer"), k=2, eps=1, delta=1e-6, method="gauss")
central
""", checks=[contains("gauss"),
             {"reference_pca": {"csv": "data/breast_cancer_scaled.csv", "clip": 2.5, "component": 1, "max_sin2": 0.1}}]),
    code(r"""
// unit returns v scaled to norm 1.
func unit(v []float64) []float64 {
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / math.Sqrt(n)
	}
	return out
}

a, b := unit(fpca.Component(1)), unit(central.Component(1))
agree := 0.0
for j := range a {
	agree += a[j] * b[j]
}
fmt.Printf("|⟨federated, central⟩|² = %.3f\n", agree*agree)
""", checks=[rng(r"\|⟨federated, central⟩\|² = ([0-9.]+)", 0.75, 1)]),
    md("""
A call that one owner cannot pay is refused before any owner is charged: after the ε = 4 call,
ε = 9 does not fit in what the zCDP accountant leaves of ε = 10 (the message gives the largest
eps that fits).
"""),
    code(r"""
private_pca(fed, k=2, eps=9, delta=1e-6, method="federated")
""", tags=["raises-exception"], error="BudgetExceeded"),
    md("""
And nothing was charged: the ε = 4 call still fits at every owner, which it would not had the
refused call been charged anywhere. What it would leave is not 10 − 4 − 4: under zCDP two ε = 4
calls compose to ε ≈ 5.91 at δ = 10⁻⁶, leaving ≈ 4.09 (the tests check 4.08–4.10 at all three).
"""),
    code(r"""
fmt.Println(private_pca(fed, k=2, eps=4, delta=1e-6, method="federated", dry_run=true).Receipt)
""", checks=[contains("p1:part: would be charged"), contains("p2:part: would be charged"),
             contains("p3:part: would be charged"),
             rng(r"p[123]:part: would be charged[^\n]*leave ε=([0-9.]+)", 4.08, 4.10)]),
]


def main():
    names = sys.argv[1:] or list(NOTEBOOKS)
    for n in names:
        if n not in NOTEBOOKS:
            sys.exit(f"unknown notebook {n}; have {', '.join(NOTEBOOKS)}")
        write(n, NOTEBOOKS[n]())


if __name__ == "__main__":
    main()
