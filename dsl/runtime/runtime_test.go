package runtime

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/syntax"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// Every plan charges the event costFor (costoracle_test.go), the tests'
// independent statement of each mechanism's accounting, says, for every
// function, method and calibration: the pre-check prices a call by its
// plan, so a plan that charged the wrong event would mislead it too.
func TestCostForMatchesPlans(t *testing.T) {
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c", "d", "e", "f"}, D: 6, Clip: 1, Unit: "row",
		Neighbour: "replace-one", Accountant: "zcdp", Center: "none", PublicN: 100}
	user := sc
	user.Unit, user.UserColumn, user.Label = "user", "u", "y"
	for _, calib := range []string{"zcdp", "paper"} {
		for _, method := range []string{"auto", "npm", "adaptive", "gauss", "dppca", "oja", "federated"} {
			kws := []KW{newKW("k", 1), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", method), newKW("calibration", calib), newKW("pad", true)}
			if method == "adaptive" {
				kws = append(kws, newKW("iters", 5))
			}
			a, err := parseArgs("private_pca", kws)
			if err != nil {
				t.Fatal(err)
			}
			p := planPCA(&source{name: "x", schema: sc}, a)
			want, ok := costFor("private_pca", method, calib, "zcdp", 0.5, 1e-6)
			if !ok || !sameCost(p.Cost, want) {
				t.Errorf("private_pca method=%s calibration=%s: plan costs %+v, costFor %+v", method, calib, p.Cost, want)
			}
		}
		a, _ := parseArgs("private_fedrep", []KW{newKW("eps", 1), newKW("delta", 1e-6), newKW("calibration", calib)})
		p := planFedRep(&source{name: "x", schema: user}, a)
		if want, ok := costFor("private_fedrep", "", calib, "zcdp", 1, 1e-6); !ok || !sameCost(p.Cost, want) {
			t.Errorf("private_fedrep calibration=%s: plan %+v, costFor %+v", calib, p.Cost, want)
		}
	}
	// Without a calibration keyword, DP-PCA and private Oja follow the
	// dataset's accountant: analytic under zcdp, the paper's under basic
	// (when ε is in the paper's range).
	basic := sc
	basic.Accountant = "basic"
	for _, c := range []struct {
		schema ledger.Schema
		method string
		eps    float64
		want   accounting.Kind
		calib  string
	}{
		{sc, "oja", 0.5, accounting.GDP, "analytic"},
		{basic, "oja", 0.5, accounting.ApproxDP, "paper"},
		{basic, "oja", 2, accounting.GDP, "analytic"},
		{sc, "dppca", 0.5, accounting.ApproxDP, "analytic"},
		{basic, "dppca", 0.5, accounting.ApproxDP, "paper"},
	} {
		a, err := parseArgs("private_pca", []KW{newKW("k", 1), newKW("eps", c.eps), newKW("delta", 1e-6), newKW("method", c.method), newKW("pad", true)})
		if err != nil {
			t.Fatal(err)
		}
		p := planPCA(&source{name: "x", schema: c.schema}, a)
		want, ok := costFor("private_pca", c.method, "", c.schema.Accountant, c.eps, 1e-6)
		if !ok || !sameCost(p.Cost, want) || p.Cost.Kind != c.want || p.Params["calibration"] != c.calib {
			t.Errorf("%s on a %s dataset, eps=%v, no calibration keyword: plan %+v (%v), costFor %+v, want a %v event (%s)",
				c.method, c.schema.Accountant, c.eps, p.Cost, p.Params["calibration"], want, c.want, c.calib)
		}
	}
	a, _ := parseArgs("private_count", []KW{newKW("eps", 0.3)})
	if want, _ := costFor("private_count", "", "", "zcdp", 0.3, 0); !sameCost(planCount(&source{schema: sc}, a).Cost, want) {
		t.Error("private_count cost differs")
	}
	a, _ = parseArgs("private_count", []KW{newKW("eps", 0.3), newKW("delta", 1e-6)})
	if want, _ := costFor("private_count", "", "", "zcdp", 0.3, 1e-6); want.Kind != accounting.ZCDP || !sameCost(planCount(&source{schema: sc}, a).Cost, want) {
		t.Errorf("private_count with delta: plan %+v, costFor %+v", planCount(&source{schema: sc}, a).Cost, want)
	}
	a, _ = parseArgs("private_mean", []KW{newKW("eps", 0.3), newKW("delta", 1e-6)})
	if want, _ := costFor("private_mean", "", "", "zcdp", 0.3, 1e-6); !sameCost(planMean(&source{schema: sc}, a).Cost, want) {
		t.Error("private_mean cost differs")
	}
}

func sameCost(a, b accounting.Event) bool {
	close := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Max(1, math.Abs(y)) }
	// The Gaussian mark is part of the price: the gdp accountant composes
	// marked zCDP events and refuses unmarked ones.
	return a.Kind == b.Kind && a.Gaussian == b.Gaussian && close(a.Eps, b.Eps) && close(a.Delta, b.Delta) && close(a.Rho, b.Rho) && close(a.Mu, b.Mu)
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		fn   string
		kws  []KW
		want string // substring of the error; "" for success
	}{
		{"private_pca", []KW{newKW("eps", 1), newKW("delta", 1e-6)}, ""},
		{"private_pca", []KW{newKW("eps", 1), newKW("kk", 1)}, "unknown keyword kk; valid keywords: k, eps, delta, method"},
		{"private_pca", []KW{newKW("delta", 1e-6)}, "keyword eps is required"},
		{"private_pca", []KW{newKW("eps", "1")}, "keyword eps: want a number, got string"},
		{"private_pca", []KW{newKW("eps", 1), newKW("k", 1.5)}, "keyword k: want an integer, got 1.5"},
		{"private_pca", []KW{newKW("eps", 1), newKW("method", "magic")}, `keyword method: "magic" is not one of "auto", "npm"`},
		{"private_pca", []KW{newKW("eps", -1), newKW("delta", 1e-6)}, "eps=-1: the privacy cost ε must be a finite number > 0"},
		{"private_pca", []KW{newKW("eps", 1), newKW("delta", 1.0)}, "delta=1: the privacy cost δ must satisfy 0 ≤ δ < 1"},
		{"private_pca", []KW{newKW("eps", 1), newKW("eps", 2)}, "keyword eps given twice"},
		{"private_pca", []KW{newKW("eps", math.Inf(1))}, "want a finite number"},
		{"private_mean", []KW{newKW("eps", 1), newKW("delta", 1e-6), newKW("columns", []string{"a"})}, ""},
		{"private_mean", []KW{newKW("eps", 1), newKW("columns", []int{1})}, "want a []string"},
		{"synth_spiked", []KW{newKW("n", 10)}, "keyword d is required"},
		{"synth_spiked", []KW{newKW("n", int64(10)), newKW("d", uint8(3))}, ""},
	} {
		_, err := parseArgs(tc.fn, tc.kws)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s%v: %v", tc.fn, tc.kws, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s%v: error %v, want %q", tc.fn, tc.kws, err, tc.want)
		case err != nil && err.(*Error).Name != NameArgumentError:
			t.Errorf("%s: error name %s", tc.fn, err.(*Error).Name)
		}
	}
}

// Every function of catalog.Funcs but show (the engine's) is exported, with
// positional parameters then ...KW.
func TestExportsCoverFuncs(t *testing.T) {
	rt, _ := New(Config{StateDir: t.TempDir()})
	ex := rt.Exports()
	kwType := fmt.Sprintf("%T", KW{})
	for _, f := range syntax.Funcs {
		if f.Name == "show" {
			if _, ok := ex["show"]; ok {
				t.Error("show must stay the engine's display function")
			}
			continue
		}
		v, ok := ex[f.Name]
		if !ok {
			t.Errorf("%s is not exported", f.Name)
			continue
		}
		ty := v.Type()
		if f.Variadic { // the last positional repeats (and takes no keywords)
			if !ty.IsVariadic() || ty.NumIn() != len(f.Positional) {
				t.Errorf("%s has type %s, want %d positional parameters, the last variadic", f.Name, ty, len(f.Positional))
			}
			continue
		}
		if !ty.IsVariadic() || ty.NumIn() != len(f.Positional)+1 || ty.In(ty.NumIn()-1).Elem().String() != kwType {
			t.Errorf("%s has type %s, want %d positional parameters then ...%s", f.Name, ty, len(f.Positional), kwType)
		}
	}
	for _, n := range []string{"__pn_budget_begin", "__pn_budget_end", "__pn_kw", "__pn_magic"} {
		if _, ok := ex[n]; !ok {
			t.Errorf("%s is not exported", n)
		}
	}
}

// Synthetic data: public, usable by every private function without a
// ledger charge; the cost is still reported and counted in a block.
func TestSynthetic(t *testing.T) {
	seedNoise(t, 4) // reproducible: the npm check below asserts on a noisy result
	dir := t.TempDir()
	register(t, dir, "real", table(50, 3, 1, 0.3), accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	s := newSession(t, dir)
	out := s.ok(`syn := synth_spiked(n=2000, d=8, k=2, gap=5, seed=3)
r := private_pca(syn, k=2, eps=2, delta=1e-6, method="npm", iters=10)
fmt.Println(r.Receipt.Charged, r.Receipt.LedgerID, r.Method, len(r.Values))
fmt.Println(syn)
p := plot_loadings(r, component=2)
q := plot_eigenvalues(r, title="eigen")
fmt.Println(len(p.PNG()) > 1000, len(q.PNG()) > 1000)
fr := synth_fedrep(users=200, m=10, d=6, k=2)
u := private_fedrep(fr, k=2, eps=4, delta=1e-6)
ur, uc := u.U.Dims()
fmt.Println(ur, uc, u.Receipt.Charged)
c := private_count(fr, eps=1)
m := private_mean(syn, eps=1, delta=1e-6, columns=[]string{"c1", "c2"})
fmt.Println(len(m.Values), m.Columns)
g := private_pca(syn, k=1, eps=1, delta=1e-6, method="gauss")
`)
	want := "false 0 pca/npm 2\n"
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "true true\n6 2 false\n2 [c1 c2]") {
		t.Errorf("output:\n%s", out)
	}
	// the PNG is a PNG
	res, o := s.run(`plot_loadings(r)`)
	if res.Error != nil || res.Value == nil || !strings.HasPrefix(fmt.Sprint(res.Value.Data["image/png"]), "iVBOR") {
		t.Errorf("plot display: %+v %s", res.Error, o.all(res))
	}
	s.fails(`plot_eigenvalues(private_pca(syn, k=1, eps=1, delta=1e-6, method="federated"))`, NameArgumentError)
	// too few rows for DP-PCA's minibatches: refused before the charge,
	// saying how many it needs; with pad=true padded, not a failure
	if res, _ := s.fails(`r3 := private_pca(syn, k=1, eps=0.5, delta=1e-6, method="dppca")`, NameArgumentError); !strings.Contains(res.Error.Value, "needs at least") || !strings.Contains(res.Error.Value, "pad=true") {
		t.Errorf("dppca on few synthetic rows: %s", res.Error.Value)
	}
	if out := s.ok(`r3 := private_pca(syn, k=1, eps=0.5, delta=1e-6, method="dppca", pad=true)
fmt.Println(r3.Receipt.Note)`); !strings.Contains(out, "padded with zero rows") {
		t.Errorf("dppca on few synthetic rows with pad=true: %s", out)
	}
	s.fails(`remaining(syn)`, NameDatasetError)
	// a block caps synthetic calls too (reported cost), before anything runs
	s.fails(`budget eps=0.5, delta=1e-6 {
	r2 := private_pca(syn, k=1, eps=0.6, delta=1e-6)
}`, NameBudgetExceeded)
	if st := status(t, dir, "real"); st.Charges != 0 {
		t.Errorf("synthetic runs charged the ledger %d times", st.Charges)
	}
	// npm on the spiked model finds the planted subspace (a loose check,
	// eps=4 on n=20000 rows with gap 20, on the seeded noise)
	out = s.ok(`big := synth_spiked(n=20000, d=5, k=1, gap=20, seed=4)
e := private_pca(big, k=1, eps=4, delta=1e-6, method="npm", iters=8)
dot := 0.0
for i := 0; i < 5; i++ {
	dot += e.Components.At(i, 0) * big.Truth.At(i, 0)
}
fmt.Println(math.Abs(dot) > 0.9)`)
	if strings.TrimSpace(out) != "true" {
		t.Errorf("npm on the spiked model: %s", out)
	}
}

// Every private_pca method this build wires runs end to end on a
// registered dataset, and user-level datasets aggregate per user.
func TestMethodsRun(t *testing.T) {
	dir := t.TempDir()
	registerPublicN(t, dir, "rows", table(3000, 5, 5, 0.3), accounting.Budget{Eps: 100, Delta: 1e-3}, accounting.ModeBasic)
	registerPublicN(t, dir, "tall", table(40000, 2, 8, 0.3), accounting.Budget{Eps: 100, Delta: 1e-3}, accounting.ModeBasic)
	tab := table(400, 3, 6, 0.3)
	tab.UserColumn, tab.NumUsers, tab.Label = "uid", 100, "y"
	for i := 0; i < tab.Rows; i++ {
		tab.Users = append(tab.Users, int32(i%100))
		tab.Y = append(tab.Y, 0.1*float64(i%7))
	}
	st, _ := ledger.Open(dir)
	if _, err := st.Register(t.Context(), ledger.Registration{Name: "users", Table: tab, Budget: accounting.Budget{Eps: 50, Delta: 1e-3},
		Accountant: accounting.ModeBasic, Clip: 1, LabelClip: 1, PublicN: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s := newSession(t, dir)
	s.ok(`ds := dataset("rows")
tall := dataset("tall")
us := dataset("users")`)
	for _, c := range []string{
		`r := private_pca(ds, k=2, eps=1, delta=1e-6)`,
		`r := private_pca(ds, k=2, eps=1, delta=1e-6, method="npm")`,
		`r := private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=5)`,
		`r := private_pca(ds, k=2, delta=1e-6, method="gauss", calibration="paper", eps=0.9, neighbour="replace-one")`,
		`r := private_pca(tall, k=1, eps=0.8, delta=1e-6, method="dppca", iters=2, calibration="zcdp")`,
		`r := private_pca(ds, k=1, eps=0.8, delta=1e-6, method="oja", iters=5)`,
		`r := private_pca(ds, k=2, eps=1, delta=1e-6, method="federated", providers=3, sparsity=4)`,
		`r := private_count(us, eps=1)`,
		`r := private_mean(us, eps=1, delta=1e-6, clip=0.5)`,
		`r := private_fedrep(us, k=1, eps=2, delta=1e-6, rounds=2)`,
		`r := private_fedrep(us, k=1, eps=2, delta=1e-6, rounds=2, init="random")`,
		`r := private_pca(us, k=1, eps=1, delta=1e-6)`,
	} {
		res, o := s.run(c + "\nr")
		if res.Error != nil {
			t.Errorf("%s: %s", c, o.all(res))
			continue
		}
		md, _ := res.Value.Metadata["privnotes"].(map[string]any)
		if md == nil || md["ledger_id"] == int64(0) || md["eps"] == nil {
			t.Errorf("%s: metadata %v", c, res.Value.Metadata)
		}
		if _, ok := res.Value.Data["text/html"]; !ok {
			t.Errorf("%s: no HTML display", c)
		}
	}
	s.fails(`r := private_fedrep(ds, k=1, eps=2, delta=1e-6)`, NameArgumentError)
	s.fails(`r := private_pca(ds, k=1, eps=0.8, delta=1e-6, method="dppca", neighbour="add-remove")`, NameArgumentError)
	verify(t, dir)
}

// The new user's path of issue 6: register breast_cancer.csv, run private
// PCA in a budget block, see a refusal over budget, restart and see the
// same remaining budget.
func TestBreastCancerFlow(t *testing.T) {
	dir := t.TempDir()
	breastCancer(t, dir, "breast_cancer", accounting.Budget{Eps: 1, Delta: 1e-5})
	s := newSession(t, dir)
	out := s.ok(`bc := dataset("breast_cancer")
budget eps=0.8, delta=1e-6 {
	pc := private_pca(bc, k=3, eps=0.5, delta=1e-6)
}
fmt.Println(pc.Method, remaining(bc).Eps < 1)`)
	if !strings.HasPrefix(out, "pca/gauss true") {
		t.Errorf("got %q", out)
	}
	s.fails(`budget eps=2, delta=1e-6 {
	pc2 := private_pca(bc, k=3, eps=1.5, delta=1e-6)
}`, NameBudgetExceeded)
	before := s.ok(`fmt.Println(remaining(bc))`)
	s2 := newSession(t, dir)
	if after := s2.ok(`fmt.Println(remaining(dataset("breast_cancer")))`); after != before {
		t.Errorf("after restart %q, before %q", after, before)
	}
	verify(t, dir)
}

// Magics and help.
func TestMagics(t *testing.T) {
	s, _ := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	res, o := s.run(`%datasets
%help
%help private_pca
%help budget
budget eps=0.5, delta=1e-6 {
	c := private_count(dataset("secret"), eps=0.1)
	%budget secret
}
%ledger secret`)
	if res.Error != nil {
		t.Fatalf("magics: %s: %s", res.Error.Name, res.Error.Value)
	}
	out := o.all(res)
	for _, want := range []string{"NAME", "secret", "private_pca(ds, k=1, eps=<float>", "Paper:", "budget eps=E, delta=D",
		"open budget block at line 5 of cell [1]: cap (ε=0.5, δ=1e-06), spent", "count/laplace", "dataset/register", "synth_spiked",
		`<table class="privnotes-ledger">`, `<table class="privnotes-budget">`, `<table class="privnotes-datasets">`, "<td style=\"text-align:left\">test[1]</td>"} {
		if !strings.Contains(out, want) {
			t.Errorf("magic output lacks %q:\n%s", want, out)
		}
	}
	// %ledger shows a long front-end cell id short (8 characters and the
	// execution count), so that its table stays narrow.
	for id, want := range map[string]string{"e533ad7c-604b21187cebc96b706d1395_8731_8[2]": "e533ad7c[2]", "test[1]": "test[1]", "cell": "cell", "0123456789": "01234567"} {
		if got := shortCell(id); got != want {
			t.Errorf("shortCell(%q) = %q, want %q", id, got, want)
		}
	}
	res, o = s.run("%ledger")
	for _, line := range strings.Split(fmt.Sprint(o.disp[0].Data["text/plain"]), "\n") {
		if n := utf8.RuneCountInString(line); n > 120 && !strings.HasPrefix(line, "head hash") {
			t.Errorf("%%ledger line of %d characters: %q", n, line)
		}
	}
	// a misspelt dataset name gets the closest registered one
	r, _ := s.fails(`x := dataset("secrte")`, NameDatasetError)
	if !strings.Contains(r.Error.Value, `Did you mean "secret"?`) {
		t.Errorf("misspelt name: %s", r.Error.Value)
	}
	r, _ = s.fails(`x := dataset("census")`, NameDatasetError)
	if strings.Contains(r.Error.Value, "Did you mean") {
		t.Errorf("unrelated name: %s", r.Error.Value)
	}
	s.fails(`%ledger nosuch`, NameDatasetError)
	if d, ok := s.rt.Doc("private_mean"); !ok || !strings.Contains(d, "columns") {
		t.Errorf("Doc: %q", d)
	}
	if kw := s.rt.Keywords("private_count"); strings.Join(kw, ",") != "eps,delta,by,max_groups,nonnegative,other,consistent,dry_run,name" {
		t.Errorf("Keywords: %v", kw)
	}
}

// Noise comes from noise.New only: no source file of the runtime uses a
// seeded sampler or math/rand.
func TestNoSeededNoise(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, bad := range []string{"NewSeeded", `"math/rand`, "OwnerInfo"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s uses %s", f, bad)
			}
		}
	}
	if n < 5 {
		t.Fatalf("read %d files", n)
	}
}

// dataset.Table is built by the tests; keep the import used.
var _ = dataset.Table{}

// The ledger's registration limit is what makes the mechanisms' rounding
// charge sound: they assume no dataset has more rows than they budget for.
func TestRowLimitsAgree(t *testing.T) {
	if ledger.MaxRows > pca.MaxRows {
		t.Fatalf("ledger admits %d rows but pca charges rounding for at most %d", ledger.MaxRows, pca.MaxRows)
	}
}

// On a gdp dataset the PCA methods of the Gaussian family (gauss, npm,
// auto, adaptive with or without gap="auto") charge the μ*-GDP event the
// gdp accountant composes exactly. The pre-check agrees.
func TestPCAGaussianEventsOnGDP(t *testing.T) {
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c", "d", "e", "f"}, D: 6, Clip: 1, Unit: "row",
		Neighbour: "replace-one", Accountant: "gdp", Center: "none", PublicN: 100}
	// On a gdp dataset gauss, npm (and auto, which picks one of them) and
	// adaptive, also with gap="auto", are calibrated to μ*(ε, δ) and
	// charged the μ*-GDP event, which the pre-check prices alike.
	for _, c := range []struct {
		method   string
		autoGap  bool
		admitted bool
	}{{"auto", false, true}, {"gauss", false, true}, {"npm", false, true}, {"adaptive", false, true}, {"adaptive", true, true}} {
		kws := []KW{newKW("k", 1), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", c.method)}
		if c.method == "adaptive" {
			kws = append(kws, newKW("iters", 5))
		}
		if c.autoGap {
			kws = append(kws, newKW("gap", "auto"))
		}
		a, err := parseArgs("private_pca", kws)
		if err != nil {
			t.Fatal(err)
		}
		p := planPCA(&source{name: "x", schema: sc}, a)
		want, ok := costFor("private_pca", c.method, "", "gdp", 0.5, 1e-6)
		if !ok || !sameCost(p.Cost, want) || (p.Cost.Kind == accounting.GDP) != c.admitted {
			t.Errorf("%s (gap auto %v): plan %+v, costFor %+v", c.method, c.autoGap, p.Cost, want)
		}
		acc, err := accounting.NewAccountant(accounting.ModeGDP, accounting.Budget{Eps: 10, Delta: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		if err := acc.Check(p.Cost); (err == nil) != c.admitted {
			t.Errorf("%s on a gdp accountant: check %v, want admitted=%v", c.method, err, c.admitted)
		}
		if c.admitted {
			if got, want := accounting.ModeGDP.Pricing(p.Cost), fmt.Sprintf("GDP filter μ=%.4g", accounting.MuForTarget(0.5, 1e-6)); got != want {
				t.Errorf("%s: priced %q, want %q", c.method, got, want)
			}
		}
	}
}
