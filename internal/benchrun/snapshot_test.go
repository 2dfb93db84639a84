package benchrun

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/bench"
)

// testPool keeps the test binary's snapshot readers open across calls, as
// cmd/privnotes's pool does, so that the calls the workload times are the
// calls the binary makes.
var testPool = &snapshot.Pool{}

// The test binary links the data engine and its SQL parser in, as
// cmd/privnotes does.
func init() {
	err := release.RegisterSnapshots(func(path, hash string) (release.SnapshotReader, error) {
		l, err := testPool.Open(path, hash)
		if err != nil {
			return nil, err // not a nil *Lease in an interface
		}
		return l, nil
	})
	if err != nil {
		panic(err)
	}
	if err := release.RegisterSQLParser(snapshot.ParseSQL); err != nil {
		panic(err)
	}
}

// fakeAdd stands for `privnotes dataset add NAME --from CSV --state DIR
// --bounds … --categories COL=…` (the flags the workload gives; others
// are ignored): it builds and registers the snapshot as the command does.
func fakeAdd(args []string, _, stderr io.Writer) int {
	if len(args) < 3 || args[0] != "dataset" || args[1] != "add" {
		fmt.Fprintf(stderr, "unexpected command %q", args)
		return 2
	}
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	from, state := fs.String("from", "", ""), fs.String("state", "", "")
	bounds, cats := fs.String("bounds", "", ""), fs.String("categories", "", "")
	fs.String("eps", "", "")
	fs.String("delta", "", "")
	if err := fs.Parse(args[3:]); err != nil {
		return 2
	}
	spec := snapshot.Spec{From: *from, Bounds: map[string][2]float64{}, Categories: map[string][]string{}}
	for _, b := range strings.Split(*bounds, ",") {
		col, rng, _ := strings.Cut(b, "=")
		lo, hi, _ := strings.Cut(rng, ":")
		l, _ := strconv.ParseFloat(lo, 64)
		h, _ := strconv.ParseFloat(hi, 64)
		spec.Bounds[col] = [2]float64{l, h}
	}
	col, vals, _ := strings.Cut(*cats, "=")
	spec.Categories[col] = strings.Split(vals, ",")
	fail := func(err error) int { fmt.Fprintln(stderr, err); return 1 }
	st, err := ledger.Open(*state)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	if err := os.MkdirAll(st.SnapshotDir(), 0o700); err != nil {
		return fail(err)
	}
	info, err := snapshot.Build(context.Background(), spec, st.SnapshotDir(), args[2])
	if err != nil {
		return fail(err)
	}
	_, err = st.Register(context.Background(), ledger.Registration{Name: args[2], Snapshot: info.Ref(), Source: *from,
		Budget: accounting.Budget{Eps: 1000, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1e6})
	if err != nil {
		return fail(err)
	}
	return 0
}

// The snapshot workload times every step against its DuckDB floor, each
// repetition once per side (the small calls once per call), and prints
// the ratios; without a way to register it fails, saying why.
func TestBenchSnapshot(t *testing.T) {
	defer func(calls, n int) { smallCalls, smallRows = calls, n }(smallCalls, smallRows)
	smallCalls, smallRows = 5, 500
	var out, errb bytes.Buffer
	opts := Options{Workload: snapshotWorkload, Config: bench.Config{N: 2000, Seeds: 2}, Dispatch: fakeAdd}
	if code := Run(opts, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	report := out.String()[strings.Index(out.String(), "step "):]
	for _, step := range []struct {
		method string
		n, k   int
	}{{"register", 2000, 2}, {"count", 2000, 2}, {"sum", 2000, 2}, {"by-count", 2000, 2}, {"by-sum", 2000, 2},
		{"sql-by-sum-avg", 2000, 2}, {"sql-count", 2000, 2}, {"small", 500, 5}, {"first call", 2000, 1}} {
		var line []string
		for _, l := range strings.Split(report, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), step.method+" ") {
				line = strings.Fields(strings.Replace(strings.TrimSpace(l), step.method, "step", 1))
			}
		}
		if len(line) != 10 || line[1] != strconv.Itoa(step.n) || line[2] != strconv.Itoa(step.k) || !strings.HasSuffix(line[5], "×") {
			t.Errorf("%s: report line %q, want n=%d, %d calls and a ratio", step.method, line, step.n, step.k)
			continue
		}
		for _, f := range line[3:5] {
			if s, err := strconv.ParseFloat(f, 64); err != nil || !(s > 0) {
				t.Errorf("%s: a time %q is not positive", step.method, f)
			}
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out.String())
	}

	errb.Reset()
	opts.Dispatch = nil
	if code := Run(opts, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "registers datasets with the privnotes command") {
		t.Errorf("without Dispatch: exit %d, stderr %q", code, errb.String())
	}
}
