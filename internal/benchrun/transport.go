package benchrun

// `privnotes bench --workload dpspca|fedrep --transport grpc`: a federated
// call over data services on loopback against the same call with
// in-process members, and the round trip of a remote private_count
// against a local one, timed in the same run. dpspca is private_pca's
// DPS-PCA over row datasets; fedrep is private_fedrep cross-silo over
// user datasets (each provider a silo of its own users).

import (
	"bufio"
	"context"
	"errors"
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

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/synth"
	"github.com/privnotes/privnotes/service"
	"github.com/privnotes/privnotes/service/client"
	"github.com/privnotes/privnotes/service/tlsdir"
)

// transportBench configures the comparison. n is rows (dpspca) or users
// (fedrep) per provider.
type transportBench struct {
	workload                                   string
	providers, n, d, k, iters, reps, countReps int
}

// fedrepRecords is the records per user of the fedrep workload (the
// paper's m).
const fedrepRecords = 10

// newTransportBench checks bench's flags for --transport and fills in the
// workload's defaults (0: not given).
func newTransportBench(transport, workload string, providers, reps, n, d, k int) (transportBench, error) {
	cfg := transportBench{workload: workload, providers: providers, reps: reps, countReps: 10 * reps}
	switch workload {
	case "dpspca":
		cfg.n, cfg.d, cfg.k, cfg.iters = 2000, 1000, 2, 10
	case "fedrep":
		// The paper's d and k; 5 rounds (private_fedrep's default).
		cfg.n, cfg.d, cfg.k = 1000, 50, 2
	}
	if transport != "grpc" || cfg.n == 0 || providers < 1 || providers > 100 || reps < 1 || n < 0 || d < 0 || k < 0 {
		return cfg, errors.New("--transport grpc needs --workload dpspca or fedrep (with --providers 1..100, --reps ≥ 1, and optional --n rows (dpspca) or users (fedrep) per provider, --d, --k)")
	}
	if n > 0 {
		cfg.n = n
	}
	if d > 0 {
		cfg.d = d
	}
	if k > 0 {
		cfg.k = k
	}
	return cfg, nil
}

// transportData writes provider j's share of the workload's public
// synthetic data set as a CSV file and returns the `dataset add` flags
// that register it.
type transportData func(path string, j int) ([]string, error)

func (cfg transportBench) data() (transportData, release.Call, error) {
	switch cfg.workload {
	case "fedrep":
		// Provider j is a silo of users j·n … (j+1)·n−1 (federated.md
		// §2.5's model); the user count is public (--public-n).
		data, err := synth.FedRep(1, cfg.n*cfg.providers, fedrepRecords, cfg.d, cfg.k, 0.01)
		if err != nil {
			return nil, release.Call{}, err
		}
		write := func(path string, j int) ([]string, error) {
			return []string{"--unit", "user:uid", "--label", "y", "--label-clip", "10", "--public-n", "--clip", "10"},
				writeFedRepCSV(path, data, j*cfg.n, (j+1)*cfg.n)
		}
		return write, benchCall(catalog.PrivateFedRep.Name, map[string]any{"k": cfg.k, "eps": 8.0, "delta": 1e-6}), nil
	}
	// Provider j holds rows j, j+P, ... of one public synthetic data set
	// (federated.md §1.6's model).
	data, err := synth.SparseSpiked(1, cfg.n*cfg.providers, cfg.d, 10, []float64{25, 12.5}[:min(cfg.k, 2)])
	if err != nil {
		return nil, release.Call{}, err
	}
	write := func(path string, j int) ([]string, error) {
		return []string{"--clip", "1"}, writeBenchCSV(path, data.X, j, cfg.providers)
	}
	return write, benchCall(catalog.PrivatePCA.Name, map[string]any{"k": cfg.k, "eps": 1.0, "delta": 1e-6, "method": "federated", "iters": cfg.iters}), nil
}

func runTransportBench(cfg transportBench, dispatch func(args []string, stdout, stderr io.Writer) int, stdout, stderr io.Writer) int {
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
	write, fc, err := cfg.data()
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	var local, remote []release.Member
	for j := range cfg.providers {
		// Registered as the data owner registers data: a snapshot (with
		// its row cache), from a CSV file, in its own state directory.
		state := filepath.Join(dir, fmt.Sprintf("p%d", j+1))
		csv := filepath.Join(dir, fmt.Sprintf("p%d.csv", j+1))
		flags, err := write(csv, j)
		if err != nil {
			return fail(err)
		}
		add := append([]string{"dataset", "add", "part", "--from", csv, "--eps", "1000", "--delta", "0.5", "--state", state}, flags...)
		if code := dispatch(add, io.Discard, stderr); code != 0 {
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
	run, unit := release.RunFederatedPCA, "n"
	setting := fmt.Sprintf("%d providers × n=%d, d=%d, k=%d, T=%d", cfg.providers, cfg.n, cfg.d, cfg.k, cfg.iters)
	if cfg.workload == "fedrep" {
		run, unit = release.RunFederatedFedRep, "users"
		setting = fmt.Sprintf("%d silos × %d users × m=%d, d=%d, k=%d", cfg.providers, cfg.n, fedrepRecords, cfg.d, cfg.k)
	}
	// Warm up both paths once (connections, page cache), then alternate.
	var tl, tr []time.Duration
	for rep := -1; rep < cfg.reps; rep++ {
		a, err := timeIt(func() error { _, err := run(ctx, local, nil); return err })
		if err != nil {
			return fail(fmt.Errorf("in-process: %w", err))
		}
		b, err := timeIt(func() error { _, err := run(ctx, remote, nil); return err })
		if err != nil {
			return fail(fmt.Errorf("grpc: %w", err))
		}
		if rep >= 0 {
			tl, tr = append(tl, a), append(tr, b)
		}
	}
	// private_count: one call's round trip.
	cc := benchCall(catalog.PrivateCount.Name, map[string]any{"eps": 1e-3})
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
	ml, mr := medianDur(tl), medianDur(tr)
	fmt.Fprintf(tw, "%s\t%s\tin-process\t%d\t%v\t1.00\t\n", cfg.workload, setting, cfg.reps, ml.Round(time.Microsecond))
	fmt.Fprintf(tw, "%s\t%s\tgrpc (loopback, mTLS)\t%d\t%v\t%.2f\t\n", cfg.workload, setting, cfg.reps, mr.Round(time.Microsecond), float64(mr)/float64(ml))
	ml, mr = medianDur(cl), medianDur(cr)
	fmt.Fprintf(tw, "%s\tone call, %s=%d\tin-process\t%d\t%v\t1.00\t\n", catalog.PrivateCount.Name, unit, cfg.n, cfg.countReps, ml.Round(time.Microsecond))
	fmt.Fprintf(tw, "%s\tone call, %s=%d\tgrpc (loopback, mTLS)\t%d\t%v\t%.2f\t\n", catalog.PrivateCount.Name, unit, cfg.n, cfg.countReps, mr.Round(time.Microsecond), float64(mr)/float64(ml))
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
	a, err := release.ArgsFor(fn, kw)
	if err != nil {
		panic(err) // fn is a literal of this package
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

// writeFedRepCSV writes users lo … hi−1 of data (their records, uid and
// response y) as a CSV file with a header.
func writeFedRepCSV(path string, data *synth.FedRepData, lo, hi int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	_, d := data.X.Dims()
	var b []byte
	for c := range d {
		b = append(b, 'x')
		b = strconv.AppendInt(b, int64(c+1), 10)
		b = append(b, ',')
	}
	w.Write(append(b, "uid,y\n"...))
	for u := lo; u < hi; u++ {
		for i := u * data.M; i < (u+1)*data.M; i++ {
			b = b[:0]
			for _, v := range data.X.RawRowView(i) {
				b = strconv.AppendFloat(b, v, 'g', -1, 64)
				b = append(b, ',')
			}
			b = append(b, 'u')
			b = strconv.AppendInt(b, int64(u), 10)
			b = append(b, ',')
			b = strconv.AppendFloat(b, data.Y[i], 'g', -1, 64)
			w.Write(append(b, '\n'))
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
