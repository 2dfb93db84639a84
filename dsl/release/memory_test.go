package release

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// memSchema is a public schema for planning only (no data): d numeric
// columns with bounds, a categorical column, a label and, for unit user,
// a public number of users.
func memSchema(d int, unit string, publicN int) ledger.Schema {
	sc := ledger.Schema{Name: "m", D: d, Clip: 1, Unit: unit, Center: "none", Neighbour: "replace-one", Accountant: "zcdp",
		Label: "y", LabelClip: 1, PublicN: publicN, Bounds: map[string][2]float64{}, Categorical: map[string][]string{"c": {"a", "b"}}}
	for j := range d {
		name := fmt.Sprintf("x%d", j)
		sc.Columns = append(sc.Columns, name)
		sc.Bounds[name] = [2]float64{0, 1}
	}
	if unit == "user" {
		sc.UserColumn = "u"
	}
	return sc
}

// memArgs are the arguments of a call of fn giving eps=1, delta=1e-6
// (and private_pca's method="npm") unless vals gives them, vals, and the
// catalog's defaults of the rest.
func memArgs(fn string, vals map[string]any) *Args {
	kw := map[string]any{"eps": 1.0, "delta": 1e-6}
	if fn == "private_pca" {
		kw["method"] = "npm"
	}
	maps.Copy(kw, vals)
	return mustArgs(fn, kw)
}

// mustArgs is ArgsFor for a function the test names.
func mustArgs(fn string, given map[string]any) *Args {
	a, err := ArgsFor(fn, given)
	if err != nil {
		panic(err)
	}
	return a
}

// memCalls is one call of every planner (and of every PCA method), planned
// on public schemas only.
func memCalls() []Call {
	row := Ref{Name: "m", Schema: memSchema(4, "row", 500)}
	user := Ref{Name: "m", Schema: memSchema(4, "user", 50)}
	private := Ref{Name: "m", Schema: memSchema(4, "user", 0)}
	mx := Ref{Name: "mx", Schema: ledger.Schema{Name: "mx", Kind: ledger.KindMatrix, Neighbour: ledger.NeighbourEntry, Accountant: "zcdp",
		Matrix: &ledger.MatrixShape{Rows: 20, Cols: 20, Symmetric: true, EntryBound: 1}}}
	c := func(fn string, src Ref, vals map[string]any) Call {
		return Call{Func: fn, Dataset: src, Args: memArgs(fn, vals)}
	}
	calls := []Call{
		c("private_count", row, nil),
		c("private_count", user, map[string]any{"delta": 0.0}),
		c("private_count", row, map[string]any{"by": "c"}),
		c("private_mean", row, nil),
		c("private_mean", row, map[string]any{"col": "x0"}),
		c("private_mean", user, map[string]any{"col": "x0", "by": "c"}),
		c("private_sum", row, map[string]any{"col": "x1"}),
		c("private_sum", user, map[string]any{"col": "x1", "by": "c", "max_groups": 2}),
		c("private_histogram", row, map[string]any{"col": "x2", "bins": 10}),
		c("private_histogram", user, map[string]any{"col": "c"}),
		c("private_quantile", row, map[string]any{"col": "x3", "delta": 0.0}),
		c("private_quantile", user, map[string]any{"col": "x3", "delta": 0.0}),
		c("private_fedrep", user, map[string]any{"k": 2}),
		c("private_classify_jl", user, map[string]any{"k": 1, "delta": 0.0}),
		c("private_classify_jl", user, map[string]any{"k": 1, "variant": "fedrep-jl"}),
		c("private_pca", mx, map[string]any{"k": 2, "method": "auto"}),
		c(fnLowRank, mx, map[string]any{"k": 2}),
		c("private_linear_regression", row, map[string]any{"y": "x0", "x": []string{"x1", "x2"}}),
		c("private_logistic_regression", row, map[string]any{"y": "c", "positive": "b", "x": []string{"x1", "x2", "x3"}}),
		// A private number of users: the users' state in windows.
		c("private_mean", private, nil),
		c("private_sum", private, map[string]any{"col": "x1"}),
		c("private_quantile", private, map[string]any{"col": "x3", "delta": 0.0}),
		c("private_pca", private, map[string]any{"k": 2, "method": "gauss"}),
		c("private_pca", private, map[string]any{"k": 2, "method": "federated", "providers": 2}),
		// private SQL, its query parsed by the recorded trees (sql_test.go)
		c("private_sql", sqlPeopleRef(), map[string]any{"query": sqlMemQuery, "delta": 0.0}),
	}
	for _, m := range PCAMethods() {
		vals := map[string]any{"method": m, "k": 2}
		switch m {
		case "ppm-entry":
			continue // matrix datasets: the call on mx above
		case "adaptive", "dppca", "oja", "oja-shuffle":
			vals["k"] = 1
		}
		if m == "dppca" || m == "oja" {
			vals["pad"] = true
		}
		if m == "oja-shuffle" {
			vals["eps"], vals["delta"], vals["calibration"] = 0.01, 1e-6, "paper"
			big := Ref{Name: "m", Schema: memSchema(4, "row", 10_000_000)}
			calls = append(calls, c("private_pca", big, vals))
			continue
		}
		calls = append(calls, c("private_pca", row, vals), c("private_pca", user, vals))
	}
	return calls
}

func callName(c Call) string {
	var kw []string
	for k := range c.Args.Given {
		kw = append(kw, fmt.Sprintf("%s=%v", k, c.Args.Vals[k]))
	}
	slices.Sort(kw)
	return fmt.Sprintf("%s(%s, %s)", c.Func, c.Dataset.Schema.Unit, strings.Join(kw, ", "))
}

// Every registered planner gives its plan a memory estimate (the core
// refuses a plan without one), and a limit below it refuses the call with
// an ArgumentError that names the estimate and the limit. memCalls covers
// every planner of the registry: a new planner without a call here fails.
func TestEveryPlannerEstimatesMemory(t *testing.T) {
	covered := map[string]bool{}
	for _, call := range memCalls() {
		name := callName(call)
		covered[call.Func] = true
		p, err := (&Local{}).Plan(call)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Memory <= 0 || p.memoryFacts == "" || p.memoryAdvice == "" {
			t.Errorf("%s (%s): memory estimate %d (%q; %q)", name, p.Method, p.Memory, p.memoryFacts, p.memoryAdvice)
		}
		// Whatever the limit, a plan is refused (naming the limit, before
		// any charge) or fits: FedRep's cap on the records a user keeps
		// (private_fedrep, classify_jl's fedrep-jl) shrinks with the
		// limit, and so does the window of users whose state a run holds
		// at once where their number is private; every other estimate is
		// fixed.
		for _, limit := range []int64{p.Memory - 1, p.Memory / 2, 1 << 10} {
			q, err := (&Local{MemoryLimit: limit}).Plan(call)
			var e *Error
			switch {
			case err == nil && q.Memory > limit:
				t.Errorf("%s: planned %d bytes under a limit of %d", name, q.Memory, limit)
			case err == nil && (limit == 1<<10 || !strings.Contains(p.Note, "each user's first") && !(q.userWindow > 0 && q.userWindow < p.userWindow)):
				t.Errorf("%s: not refused under a limit of %d (estimate %d)", name, limit, p.Memory)
			case err != nil && (!errors.As(err, &e) || e.Name != NameArgumentError || !strings.Contains(e.Msg, "limit of "+FormatBytes(limit)) || !strings.Contains(e.Msg, "nothing was charged")):
				t.Errorf("%s: a limit of %d: %v", name, limit, err)
			}
		}
		if _, err := (&Local{MemoryLimit: p.Memory}).Plan(call); err != nil {
			t.Errorf("%s: a limit equal to the estimate: %v", name, err)
		}
	}
	for f := range planners {
		if !covered[f.Name] {
			t.Errorf("planner %s has no call in memCalls", f.Name)
		}
	}
}

// The estimates grow with the public facts they come from, so that a call
// that would not fit is refused: gauss's with d², npm's with k, the held
// rows' with the public n, the quantile's not at all with n (it streams)
// and a histogram's with its bins.
func TestMemoryEstimatesGrow(t *testing.T) {
	plan := func(fn string, src Ref, vals map[string]any) int64 {
		t.Helper()
		p, err := (&Local{MemoryLimit: 1 << 62}).Plan(Call{Func: fn, Dataset: src, Args: memArgs(fn, vals)})
		if err != nil {
			t.Fatalf("%s %v: %v", fn, vals, err)
		}
		return p.Memory
	}
	row := func(d, n int) Ref { return Ref{Name: "m", Schema: memSchema(d, "row", n)} }
	user := func(d, n int) Ref { return Ref{Name: "m", Schema: memSchema(d, "user", n)} }
	for _, c := range []struct {
		what         string
		small, large int64
		wantAtLeastX float64
	}{
		{"gauss d=1000 → 4000", plan("private_pca", row(1000, 0), map[string]any{"method": "gauss"}), plan("private_pca", row(4000, 0), map[string]any{"method": "gauss"}), 5},
		{"npm k=2 → 2000", plan("private_pca", row(5000, 0), map[string]any{"k": 2}), plan("private_pca", row(5000, 0), map[string]any{"k": 2000}), 1.5},
		{"dppca n=1e5 → 1e7", plan("private_pca", row(50, 100_000), map[string]any{"method": "dppca", "k": 1}), plan("private_pca", row(50, 10_000_000), map[string]any{"method": "dppca", "k": 1}), 30},
		{"histogram bins 10 → 10^4", plan("private_histogram", row(1, 0), map[string]any{"col": "x0", "bins": 10}), plan("private_histogram", row(1, 0), map[string]any{"col": "x0", "bins": 10_000}), 1.01},
	} {
		if float64(c.large) < c.wantAtLeastX*float64(c.small) {
			t.Errorf("%s: estimate %s → %s, want ≥ %v×", c.what, FormatBytes(c.small), FormatBytes(c.large), c.wantAtLeastX)
		}
	}
	q := map[string]any{"col": "x0", "delta": 0.0}
	if a, b := plan("private_quantile", row(1, 10), q), plan("private_quantile", row(1, 100_000_000), q); a != b {
		t.Errorf("quantile estimate depends on n: %d vs %d", a, b)
	}
	// The default limit refuses, before anything is charged, npm's
	// iterates for k = 3000 on d = 20000, DP-PCA's 5·10⁷ held rows of
	// width 50 and FedRep's state for 5·10⁷ users on d = 1000 (the
	// documented case), none of which the mechanisms' own limits refuse.
	for _, c := range []struct {
		src  Ref
		vals map[string]any
	}{
		{row(20_000, 0), map[string]any{"method": "npm", "k": 3000}},
		{row(50, 50_000_000), map[string]any{"method": "dppca", "k": 1}},
		{user(1000, 50_000_000), map[string]any{"k": 50}},
	} {
		fn := "private_pca"
		if c.src.Schema.Unit == "user" {
			fn = "private_fedrep"
		}
		_, err := (&Local{}).Plan(Call{Func: fn, Dataset: c.src, Args: memArgs(fn, c.vals)})
		if err == nil || !strings.Contains(err.Error(), "limit of 8.0 GiB") {
			t.Errorf("%s d=%d %v under the default limit: %v", fn, c.src.Schema.D, c.vals, err)
		}
	}
}

// The operator's limit: Local.MemoryLimit, else PRIVNOTES_MEMORY_LIMIT,
// else the default; a setting that is not a size refuses every call
// before its charge.
func TestMemoryLimitSetting(t *testing.T) {
	for _, c := range []struct {
		field int64
		env   string
		want  int64
		bad   bool
	}{
		{0, "", DefaultMemoryLimit, false},
		{0, "512MiB", 512 << 20, false},
		{0, "3G", 3 << 30, false},
		{0, "123456", 123456, false},
		{1 << 20, "3G", 1 << 20, false},
		{0, "lots", 0, true},
		{0, "-1", 0, true},
		{0, "0", 0, true},
	} {
		t.Setenv(MemoryLimitEnv, c.env)
		got, err := (&Local{MemoryLimit: c.field}).memoryLimit()
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("field %d, %s=%q: %d, %v; want %d (error %v)", c.field, MemoryLimitEnv, c.env, got, err, c.want, c.bad)
		}
	}
	t.Setenv(MemoryLimitEnv, "1KiB")
	if _, err := (&Local{}).Plan(publicCall(3)); err == nil || !strings.Contains(err.Error(), "limit of 1.0 KiB") {
		t.Errorf("count under a 1 KiB limit: %v", err)
	}
}

// A call whose plan exceeds the limit is refused before the gate and the
// charge: the ledger records nothing and stays verifiable, the data are
// not read.
func TestMemoryRefusedBeforeCharge(t *testing.T) {
	env, ref, st := gdpTestEnv(t, accounting.ModeZCDP, accounting.Budget{Eps: 10, Delta: 1e-5}, "a,b\n1,2\n3,4\n")
	call := Call{Func: "private_count", Dataset: ref, Args: memArgs("private_count", nil)}
	env.MemoryLimit = 1 << 10
	read := false
	env.Wrap = func() RunWrapper {
		return func(run func(context.Context, *Data) (any, error)) func(context.Context, *Data) (any, error) {
			read = true
			return run
		}
	}
	admitted := false
	before, err := st.Entries("d")
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Execute(context.Background(), call, gateFunc(func() { admitted = true }))
	var e *Error
	if !errors.As(err, &e) || e.Name != NameArgumentError {
		t.Fatalf("over the limit: %v, want an ArgumentError", err)
	}
	es, err := st.Entries("d")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != len(before) || read || admitted {
		t.Errorf("refused call: %d ledger entries (%d before), data read %v, gate asked %v", len(es), len(before), read, admitted)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	env.MemoryLimit = 0
	if _, err := env.Execute(context.Background(), call, nil); err != nil {
		t.Fatalf("within the default limit: %v", err)
	}
}

// gateFunc is a Gate that notes that it was asked and admits.
type gateFunc func()

func (g gateFunc) Admit(context.Context, accounting.Event, Ref) (func() string, func(), error) {
	g()
	return func() string { return "" }, func() {}, nil
}

// FedRep keeps at most maxRecords records per user, a cap from public facts
// (the limit, the public number of users, d, k) that keeps its memory
// within the limit whatever the private number of rows; the cap falls with
// the limit, and a limit that leaves fewer than MinRecords per user is
// refused before the charge.
func TestFedRepRecordsCap(t *testing.T) {
	src := Ref{Name: "m", Schema: memSchema(20, "user", 10_000)}
	last := 1 << 31
	for _, limit := range []int64{DefaultMemoryLimit, 1 << 30, 256 << 20} {
		env := &Local{MemoryLimit: limit}
		m, maxRecords := env.fedRepMemory(src, 2, 10_000)
		if m > limit || maxRecords >= last || maxRecords < 4 {
			t.Errorf("limit %s: estimate %s, %d records per user (%d under the larger limit)", FormatBytes(limit), FormatBytes(m), maxRecords, last)
		}
		last = maxRecords
		p, err := env.Plan(Call{Func: "private_fedrep", Dataset: src, Args: memArgs("private_fedrep", map[string]any{"k": 2})})
		if err != nil || p.Memory != m || !strings.Contains(p.Note, fmt.Sprintf("each user's first %d records", maxRecords)) {
			t.Errorf("limit %s: plan %v, %v", FormatBytes(limit), p, err)
		}
	}
	if _, err := (&Local{MemoryLimit: 32 << 20}).Plan(Call{Func: "private_fedrep", Dataset: src, Args: memArgs("private_fedrep", map[string]any{"k": 2})}); err == nil {
		t.Error("a limit leaving fewer than MinRecords records per user was not refused")
	}
}

// Per-user state on user-level data is counted in the estimate where the
// owner declared the number of users public, and held a window of users
// at a time where not: the window is the most users that fit the limit
// (at most userWindowMax), counted in the estimate, and nothing is left
// in RowBytes.
func TestUserStateCounted(t *testing.T) {
	plan := func(publicN int, limit int64) *Plan {
		t.Helper()
		p, err := (&Local{MemoryLimit: limit}).Plan(Call{Func: "private_pca", Dataset: Ref{Name: "m", Schema: memSchema(100, "user", publicN)}, Args: memArgs("private_pca", nil)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	private, small, large := plan(0, 1<<62), plan(1000, 1<<62), plan(10_000_000, 1<<62)
	if private.RowBytes != 0 || small.RowBytes != 0 || large.RowBytes != 0 {
		t.Errorf("RowBytes: %d (private n), %d, %d (public n)", private.RowBytes, small.RowBytes, large.RowBytes)
	}
	if private.userWindow != userWindowMax || small.userWindow != 0 || large.userWindow != 0 {
		t.Errorf("windows: %d (private n), %d, %d (public n)", private.userWindow, small.userWindow, large.userWindow)
	}
	if private.Memory-small.Memory != int64(userWindowMax-1000)*8*101 {
		t.Errorf("estimate with a window of %d users %d, for 10³ public users %d: the window is not counted", userWindowMax, private.Memory, small.Memory)
	}
	// Under a tighter limit the window shrinks to what fits.
	tight := plan(0, small.Memory+5000*8*101)
	if tight.userWindow < 5000 || tight.userWindow > 6000 || tight.Memory > small.Memory+5000*8*101 {
		t.Errorf("a limit leaving room for ~5000 users: window %d, estimate %d", tight.userWindow, tight.Memory)
	}
	if large.Memory-small.Memory != (10_000_000-1000)*8*101 {
		t.Errorf("estimate for 10⁷ public users %d, for 10³ %d: the users' mean rows are not counted", large.Memory, small.Memory)
	}
	if _, err := (&Local{}).Plan(Call{Func: "private_pca", Dataset: Ref{Name: "m", Schema: memSchema(1000, "user", 20_000_000)}, Args: memArgs("private_pca", nil)}); err == nil {
		t.Error("npm on 2·10⁷ public users of width 1000 (160 GB of mean rows) was not refused")
	}
}
