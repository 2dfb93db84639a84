package runtime

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// SynthData is PUBLIC synthetic data from one of the seed papers' recipes,
// with its ground truth. Private functions accept it in place of a dataset
// handle, for demos and experiments: they run the same mechanism with the
// same noise, report the cost in the receipt, count it against an
// enclosing budget block, and charge no ledger.
type SynthData struct {
	// X holds the rows (n×d).
	X *mat.Dense
	// Truth spans the planted subspace (d×k).
	Truth *mat.Dense
	// Values are the planted eigenvalues (synth_spiked only).
	Values []float64
	// Y are the responses and M the records per user (synth_fedrep only).
	Y      []float64
	Users  int
	M      int
	Recipe string
	Seed   int

	x      *mat.Dense // the rows the mechanisms read (X may be modified by the cell)
	users  []int32
	y      []float64
	schema ledger.Schema
}

// maxSynthCells bounds n·d of synthetic data (memory of the kernel).
const maxSynthCells = 50_000_000

func (s *SynthData) String() string {
	n, d := s.x.Dims()
	u := ""
	if s.Users > 0 {
		u = fmt.Sprintf(", %d users × %d records", s.Users, s.M)
	}
	return fmt.Sprintf("SynthData(%s, seed %d: n=%d, d=%d%s; PUBLIC synthetic data, no privacy cost)", s.Recipe, s.Seed, n, d, u)
}

func (s *SynthData) data() *ledger.Data {
	n := 0
	if s.users != nil {
		n = s.Users
	}
	return &ledger.Data{Schema: s.schema, X: s.x, Users: s.users, NumUsers: n, Y: s.y}
}

func synthSchema(name string, d int, clip float64) ledger.Schema {
	cols := make([]string, d)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d", i+1)
	}
	return ledger.Schema{Name: name, Columns: cols, D: d, Clip: clip, Unit: "row", Center: "none",
		Neighbour: accounting.ReplaceOne.String(), Accountant: accounting.ModeZCDP.String(), BadRows: "reject"}
}

// maxRowNorm is the clip norm of public data: the largest row norm, so
// that no row is shortened (synthetic data are public; the bound may
// depend on them).
func maxRowNorm(x *mat.Dense) float64 {
	r, _ := x.Dims()
	m := 0.0
	for i := range r {
		m = math.Max(m, mat.Norm(x.RowView(i), 2))
	}
	if m == 0 {
		m = 1
	}
	return m
}

func checkSynthSize(fn string, n, d int) {
	if n < 1 || d < 1 {
		panic(errorf(NameArgumentError, "%s: need n ≥ 1 and d ≥ 1", fn))
	}
	if float64(n)*float64(d) > maxSynthCells {
		panic(errorf(NameArgumentError, "%s: n·d = %d·%d exceeds %d values: use smaller data", fn, n, d, maxSynthCells))
	}
}

func synthSpiked(kws ...KW) *SynthData {
	const fn = "synth_spiked"
	a := mustArgs(fn, kws)
	n, d, k, gap, seed := a.int("n"), a.int("d"), a.int("k"), a.float("gap"), a.int("seed")
	checkSynthSize(fn, n, d)
	if k < 1 || k > d {
		panic(errorf(NameArgumentError, "%s: k=%d must satisfy 1 ≤ k ≤ d=%d", fn, k, d))
	}
	if !(gap > 0) {
		panic(errorf(NameArgumentError, "%s: gap=%v must be > 0", fn, gap))
	}
	// Spikes gap·k, gap·(k−1), …, gap over a unit bulk: the eigengap at k
	// is gap.
	spikes := make([]float64, k)
	for i := range spikes {
		spikes[i] = gap * float64(k-i)
	}
	sd, err := synth.Spiked(uint64(seed), n, d, spikes, 1)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	s := &SynthData{X: mat.DenseCopyOf(sd.X), Truth: sd.U, Values: sd.Values, Recipe: "spiked", Seed: seed, x: sd.X}
	s.schema = synthSchema("synthetic:spiked", d, maxRowNorm(sd.X))
	s.schema.PublicN = n // public data: every fact about them is public
	return s
}

// fedrepSynthClip is the per-user clip ψ of the FedRep experiment
// (federated.md §2.5), the default for synth_fedrep data.
const fedrepSynthClip = 10

func synthFedRep(kws ...KW) *SynthData {
	const fn = "synth_fedrep"
	a := mustArgs(fn, kws)
	users, m, d, k, r, seed := a.int("users"), a.int("m"), a.int("d"), a.int("k"), a.float("noise"), a.int("seed")
	if users < 1 || m < 1 {
		panic(errorf(NameArgumentError, "%s: need users ≥ 1 and m ≥ 1", fn))
	}
	checkSynthSize(fn, users*m, d)
	fd, err := synth.FedRep(uint64(seed), users, m, d, k, r)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	us := make([]int32, users*m)
	for i := range us {
		us[i] = int32(i / m)
	}
	s := &SynthData{X: mat.DenseCopyOf(fd.X), Truth: fd.UStar, Y: append([]float64(nil), fd.Y...), Users: users, M: m,
		Recipe: "fedrep", Seed: seed, x: fd.X, users: us, y: fd.Y}
	sc := synthSchema("synthetic:fedrep", d, fedrepSynthClip)
	sc.Unit, sc.UserColumn, sc.Label = "user", "user", "y"
	sc.PublicN = users
	s.schema = sc
	return s
}
