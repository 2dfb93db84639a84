package main

// dataset add NAME --from-synth DATASET/RELEASE (issue 31): the owner
// shares a private_synthesize release as a PUBLIC dataset beside a
// notebook. The rows are sampled from the stored release as its replay
// samples them (post-processing: no new charge), so nothing private but
// the released model goes into them; the schema takes only public facts
// of the origin (its columns' bounds and domains, its accountant and
// neighbouring relation, so that calls plan as they would on it), and the
// registration records the release it came from (ledger.SynthOrigin),
// which the ledger checks against the sealed release and chains.

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// checkSynthFlags refuses the flags that do not apply to a public
// synthetic dataset: another source, a budget (nothing is charged) and the
// options of the origin's registration, which the rows inherit.
func checkSynthFlags(f *addFlags) error {
	switch {
	case countSet(f.csv, f.from, f.sql, f.matrix) != 0:
		return errors.New("--from-synth is a source of its own: leave out --from, --csv, --sql and --matrix")
	case !math.IsNaN(f.eps) || !math.IsNaN(f.delta):
		return errors.New("--from-synth registers PUBLIC rows, which charge nothing: leave out --eps and --delta")
	case !math.IsNaN(f.clip) || f.label != "" || f.unit != "row" || f.columns != "" || len(f.bounds) > 0 || len(f.categories) > 0 || f.publicN:
		return errors.New("--from-synth takes its columns, bounds and domains from the release: leave out --clip, --label, --unit, --columns, --bounds, --categories and --public-n")
	}
	ds, rel, ok := strings.Cut(f.fromSynth, "/")
	if !ok || ds == "" || rel == "" {
		return fmt.Errorf("--from-synth %q: write DATASET/RELEASE, the dataset and the name= of a private_synthesize call", f.fromSynth)
	}
	return nil
}

// synthRelease reads the stored private_synthesize release DATASET/RELEASE
// and the origin's schema.
func synthRelease(st *ledger.Store, spec string) (*release.Synth, *ledger.SynthOrigin, ledger.Schema, error) {
	ds, name, _ := strings.Cut(spec, "/")
	sc, err := st.Schema(ds)
	if err != nil {
		return nil, nil, sc, fmt.Errorf("--from-synth %s: dataset %q: %w", spec, ds, err)
	}
	if sc.Public() {
		return nil, nil, sc, fmt.Errorf("--from-synth %s: dataset %q is itself public synthetic data; give the release of the private dataset", spec, ds)
	}
	nr, err := st.Named(ds, name)
	switch {
	case err != nil:
		return nil, nil, sc, err
	case nr == nil:
		return nil, nil, sc, fmt.Errorf("--from-synth %s: dataset %q has no release named %q (%%ledger %s lists its named releases)", spec, ds, name, ds)
	case !nr.Sealed():
		return nil, nil, sc, fmt.Errorf("--from-synth %s: the call named %q was charged but produced no release", spec, name)
	}
	v, _, err := release.Decode([]byte(nr.Value))
	if err != nil {
		return nil, nil, sc, fmt.Errorf("--from-synth %s: the stored release cannot be read back: %v (run privnotes ledger verify)", spec, err)
	}
	syn, ok := v.(*release.Synth)
	if !ok {
		return nil, nil, sc, fmt.Errorf("--from-synth %s: release %q is not a synthetic table (private_synthesize)", spec, name)
	}
	return syn, &ledger.SynthOrigin{Dataset: ds, Release: name, Record: nr.Record, ValueHash: nr.ValueHash}, sc, nil
}

// datasetAddSynth registers --from-synth as a public snapshot.
func datasetAddSynth(name string, f *addFlags, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "privnotes dataset add: %v\n", err)
		return code
	}
	st, err := openForRegistration(f.state, name)
	if err != nil {
		return fail(1, err)
	}
	defer st.Close()
	syn, origin, src, err := synthRelease(st, f.fromSynth)
	if err != nil {
		return fail(1, err)
	}
	if err := os.MkdirAll(st.SnapshotDir(), 0o700); err != nil {
		return fail(1, err)
	}
	// The rows, written once as CSV beside the snapshots (the state
	// directory's private folder) and removed when the snapshot is built.
	tmp, err := os.CreateTemp(st.SnapshotDir(), ".synth-*.csv")
	if err != nil {
		return fail(1, err)
	}
	defer os.Remove(tmp.Name())
	spec := snapshot.Spec{From: tmp.Name(), Bounds: map[string][2]float64{}, Categories: map[string][]string{}, BadRows: "reject"}
	for i, c := range syn.Columns {
		if syn.Numeric[i] {
			// The origin's public bounds, which hold every midpoint.
			if b, ok := src.Bounds[c]; ok {
				spec.Bounds[c] = b
			}
			continue
		}
		l := syn.Labels[i]
		spec.Categories[c] = append([]string(nil), l[:len(l)-1]...) // "other" is the bucket
	}
	if err := writeSynthCSV(tmp, syn); err != nil {
		tmp.Close()
		return fail(1, err)
	}
	if err := tmp.Close(); err != nil {
		return fail(1, err)
	}
	ctx := context.Background()
	info, err := snapshot.Build(ctx, spec, st.SnapshotDir(), name)
	if err != nil {
		return fail(1, err)
	}
	mode, err := src.Mode()
	if err != nil || mode == accounting.ModeAdvanced {
		mode = accounting.ModeBasic // an old "advanced" registration composes as basic
	}
	nb, err := accounting.ParseNeighbour(src.Neighbour)
	if err != nil {
		snapshot.Discard(info.Path)
		return fail(1, err)
	}
	owner, err := st.Register(ctx, ledger.Registration{
		Name: name, Snapshot: info.Ref(), Budget: src.Budget, Accountant: mode, Neighbour: nb, BadRows: "reject",
		Source:  fmt.Sprintf("synthetic: release %q of dataset %q (ledger record %d)", origin.Release, origin.Dataset, origin.Record),
		PublicN: true, Synthetic: origin,
	})
	if err != nil {
		snapshot.Discard(info.Path)
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "registered PUBLIC dataset %q in %s: %d synthetic rows of release %q of dataset %q, no new charge\n",
		name, st.Dir(), syn.N, origin.Release, origin.Dataset)
	writeOwnerInfo(stdout, owner, nil)
	return 0
}

// writeSynthCSV writes the release's rows (Synth.Rows: the replay's) with
// a header line.
func writeSynthCSV(w io.Writer, syn *release.Synth) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(syn.Columns); err != nil {
		return err
	}
	cells := make([]string, len(syn.Columns))
	for _, row := range syn.Rows() {
		for j, v := range row {
			cells[j] = fmt.Sprint(v) // a float64 in its shortest exact form
		}
		if err := cw.Write(cells); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
