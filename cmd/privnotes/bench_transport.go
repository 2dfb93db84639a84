package main

// `privnotes bench --workload dpspca --transport grpc`: the federated
// DPS-PCA call over data services on loopback against the same call with
// in-process providers, and the round trip of a remote private_count
// against a local one, timed in the same run.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
	"github.com/privnotes/privnotes/mechanisms/synth"
	"github.com/privnotes/privnotes/service"
	"github.com/privnotes/privnotes/service/client"
	"github.com/privnotes/privnotes/service/tlsdir"
)

// transportBench configures the comparison.
type transportBench struct {
	providers, n, d, k, iters, reps, countReps int
}

func runTransportBench(cfg transportBench, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "privnotes bench --transport grpc: %v\n", err)
		return 1
	}
	service.SetLog(io.Discard)
	dir, err := os.MkdirTemp("", "privnotes-bench-transport-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	tls := filepath.Join(dir, "tls")
	if err := tlsdir.Init(tls, []string{"127.0.0.1"}, "bench"); err != nil {
		return fail(err)
	}
	ccfg, err := tlsdir.Client(tls)
	if err != nil {
		return fail(err)
	}
	scfg, err := tlsdir.Server(tls)
	if err != nil {
		return fail(err)
	}
	// Provider j holds rows j, j+P, ... of one public synthetic data set
	// (federated.md §1.6's model), registered in its own state directory.
	data, err := synth.SparseSpiked(1, cfg.n*cfg.providers, cfg.d, 10, []float64{25, 12.5}[:min(cfg.k, 2)])
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	var local, remote []release.Member
	fc := benchCall("private_pca", map[string]any{"k": cfg.k, "eps": 1.0, "delta": 1e-6, "method": "federated", "iters": cfg.iters})
	for j := range cfg.providers {
		// Registered as the data owner registers data: a snapshot (with
		// its row cache), from a CSV file.
		state := filepath.Join(dir, fmt.Sprintf("p%d", j+1))
		csv := filepath.Join(dir, fmt.Sprintf("p%d.csv", j+1))
		if err := writeBenchCSV(csv, data.X, j, cfg.providers); err != nil {
			return fail(err)
		}
		if code := dispatch([]string{"dataset", "add", "part", "--from", csv, "--eps", "1000", "--delta", "0.5", "--clip", "1", "--state", state}, io.Discard, stderr); code != 0 {
			return code
		}
		os.Remove(csv)
		st, err := ledger.Open(state)
		if err != nil {
			return fail(err)
		}
		defer st.Close()
		sc, err := st.Schema("part")
		if err != nil {
			return fail(err)
		}
		exec := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }}
		call := fc
		call.Dataset = release.Ref{Name: "part", Schema: sc}
		local = append(local, release.Member{Label: fmt.Sprintf("local%d", j+1), Exec: exec, Call: call})
		// The server over a second executor of the same state directory.
		srv, err := service.NewServer(st, &release.Local{Store: func() (*ledger.Store, error) { return st, nil }})
		if err != nil {
			return fail(err)
		}
		g, err := service.NewGRPC(srv, scfg)
		if err != nil {
			return fail(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		go g.Serve(lis)
		defer g.Stop()
		c, err := client.New(fmt.Sprintf("p%d", j+1), lis.Addr().String(), ccfg)
		if err != nil {
			return fail(err)
		}
		defer c.Close()
		remote = append(remote, release.Member{Label: c.Name, Exec: c, Call: call})
	}
	timeIt := func(f func() error) (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	}
	// Warm up both paths once (connections, page cache), then alternate.
	var tl, tr []time.Duration
	for rep := -1; rep < cfg.reps; rep++ {
		a, err := timeIt(func() error { _, err := release.RunFederatedPCA(ctx, local, nil); return err })
		if err != nil {
			return fail(fmt.Errorf("in-process: %w", err))
		}
		b, err := timeIt(func() error { _, err := release.RunFederatedPCA(ctx, remote, nil); return err })
		if err != nil {
			return fail(fmt.Errorf("grpc: %w", err))
		}
		if rep >= 0 {
			tl, tr = append(tl, a), append(tr, b)
		}
	}
	// private_count: one call's round trip.
	cc := benchCall("private_count", map[string]any{"eps": 1e-3})
	cc.Dataset = local[0].Call.Dataset
	lexec := local[0].Exec.(*release.Local)
	rexec := remote[0].Exec.(*client.Client)
	var cl, cr []time.Duration
	for rep := -1; rep < cfg.countReps; rep++ {
		a, err := timeIt(func() error { _, err := lexec.Execute(ctx, cc, nil); return err })
		if err != nil {
			return fail(fmt.Errorf("local count: %w", err))
		}
		b, err := timeIt(func() error { _, err := rexec.Execute(ctx, cc, nil); return err })
		if err != nil {
			return fail(fmt.Errorf("remote count: %w", err))
		}
		if rep >= 0 {
			cl, cr = append(cl, a), append(cr, b)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload\tsetting\ttransport\treps\tmedian\tratio\t\n")
	setting := fmt.Sprintf("%d providers × n=%d, d=%d, k=%d, T=%d", cfg.providers, cfg.n, cfg.d, cfg.k, cfg.iters)
	ml, mr := medianDur(tl), medianDur(tr)
	fmt.Fprintf(tw, "dpspca\t%s\tin-process\t%d\t%v\t1.00\t\n", setting, cfg.reps, ml.Round(time.Microsecond))
	fmt.Fprintf(tw, "dpspca\t%s\tgrpc (loopback, mTLS)\t%d\t%v\t%.2f\t\n", setting, cfg.reps, mr.Round(time.Microsecond), float64(mr)/float64(ml))
	ml, mr = medianDur(cl), medianDur(cr)
	fmt.Fprintf(tw, "private_count\tone call, n=%d\tin-process\t%d\t%v\t1.00\t\n", cfg.n, cfg.countReps, ml.Round(time.Microsecond))
	fmt.Fprintf(tw, "private_count\tone call, n=%d\tgrpc (loopback, mTLS)\t%d\t%v\t%.2f\t\n", cfg.n, cfg.countReps, mr.Round(time.Microsecond), float64(mr)/float64(ml))
	tw.Flush()
	return 0
}

func medianDur(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// benchCall is a call of fn with its table's defaults and kw over them.
func benchCall(fn string, kw map[string]any) release.Call {
	f, _ := syntax.Lookup(fn)
	a := &release.Args{Vals: map[string]any{}, Given: map[string]bool{}}
	for _, p := range f.Keywords {
		var v any
		switch p.Type {
		case "int":
			v, _ = strconv.Atoi(p.Default)
		case "float":
			v, _ = strconv.ParseFloat(p.Default, 64)
		case "string":
			v, _ = strconv.Unquote(p.Default)
		case "bool":
			v = p.Default == "true"
		case "[]string":
			v = []string(nil)
		}
		a.Vals[p.Name] = v
	}
	for k, v := range kw {
		a.Vals[k], a.Given[k] = v, true
	}
	return release.Call{Func: fn, Args: a, Cell: "bench"}
}

// writeBenchCSV writes rows j, j+p, ... of x as a CSV file with a header.
func writeBenchCSV(path string, x *mat.Dense, j, p int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, d := x.Dims()
	var b []byte
	for c := range d {
		if c > 0 {
			b = append(b, ',')
		}
		b = append(b, 'x')
		b = strconv.AppendInt(b, int64(c+1), 10)
	}
	w.Write(append(b, '\n'))
	for i := j; i < n; i += p {
		b = b[:0]
		for c, v := range x.RawRowView(i) {
			if c > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
