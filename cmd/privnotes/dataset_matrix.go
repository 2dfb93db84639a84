package main

// dataset add --matrix: registers one matrix whose private units are its
// entries (entry-level DP, Hardt–Price 2014 Def. 4.1; spec
// power_methods.md §2). The file is validated here, in the owner's
// terminal, then written as an immutable snapshot (one snapshot row per
// matrix row) like a row dataset, and registered with kind "matrix" and
// neighbour relation "entry".

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// maxMatrixDim bounds the dimension the mechanisms iterate on: d for a
// symmetric matrix, m+n for a rectangular one (its [[0, M], [Mᵀ, 0]]).
const maxMatrixDim = pca.MaxGaussDim

// matrixFile is a parsed matrix file.
type matrixFile struct {
	rows, cols int
	vals       []float64 // row-major
}

// readMatrix parses a matrix file: one matrix row per line, entries
// separated by commas and/or blanks; blank lines and lines starting with
// '#' are skipped. Every entry must be a finite number and every row as
// long as the first.
func readMatrix(r io.Reader, name string) (*matrixFile, error) {
	m := &matrixFile{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.FieldsFunc(text, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' || c == ';' })
		if m.rows == 0 {
			m.cols = len(fields)
		} else if len(fields) != m.cols {
			return nil, fmt.Errorf("%s line %d: %d entries, but the first row has %d: every row of the matrix must have the same length", name, line, len(fields), m.cols)
		}
		for j, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s line %d, column %d: %q is not a finite number (a matrix file holds numbers only: no header, no missing values)", name, line, j+1, f)
			}
			m.vals = append(m.vals, v)
		}
		m.rows++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if m.rows == 0 {
		return nil, fmt.Errorf("%s: no matrix rows", name)
	}
	return m, nil
}

// check validates the matrix against the owner's flags: shape, symmetry
// and the entry bound (entries beyond it are refused, not clamped, so the
// registered matrix is the one the owner gave).
func (m *matrixFile) check(name string, symmetric bool, bound float64) error {
	dim := m.rows
	if !symmetric {
		dim = m.rows + m.cols
	}
	if dim > maxMatrixDim {
		return fmt.Errorf("%s: %d×%d gives dimension %d, more than the %d the mechanisms iterate on", name, m.rows, m.cols, dim, maxMatrixDim)
	}
	if symmetric && m.rows != m.cols {
		return fmt.Errorf("%s is %d×%d, not square: a symmetric matrix must be square; give --rectangular to analyse it through [[0, M], [Mᵀ, 0]]", name, m.rows, m.cols)
	}
	for i := 0; i < m.rows; i++ {
		for j := 0; j < m.cols; j++ {
			v := m.vals[i*m.cols+j]
			if math.Abs(v) > bound {
				return fmt.Errorf("%s: entry (%d, %d) = %g lies outside --entry-bound %g: fix the file or register with a larger public bound (entries are refused, not clamped)", name, i+1, j+1, v, bound)
			}
			if symmetric && j < i && v != m.vals[j*m.cols+i] {
				return fmt.Errorf("%s: entry (%d, %d) = %g differs from entry (%d, %d) = %g: the matrix is not symmetric; give --rectangular to analyse it through [[0, M], [Mᵀ, 0]]", name, i+1, j+1, v, j+1, i+1, m.vals[j*m.cols+i])
			}
		}
	}
	return nil
}

// checkMatrixFlags validates the flags of dataset add --matrix.
func checkMatrixFlags(f *addFlags) error {
	switch {
	case countSet(f.csv, f.from, f.sql) != 0:
		return errors.New("--matrix is a source of its own: leave out --from, --csv and --sql")
	case math.IsNaN(f.entryBound):
		return errors.New("--matrix needs --entry-bound B: a public bound on |entry| (neighbouring matrices differ in one entry, anywhere in [-B, B])")
	case !(f.entryBound > 0) || math.IsInf(f.entryBound, 0):
		return fmt.Errorf("--entry-bound %v: must be a finite number > 0", f.entryBound)
	case !math.IsNaN(f.clip):
		return errors.New("--clip is for row datasets; a matrix dataset is bounded entrywise by --entry-bound")
	case f.label != "" || f.unit != "row" || f.columns != "" || len(f.bounds) > 0 || len(f.categories) > 0 || f.publicN || f.neighbour != "replace-one":
		return errors.New("--label, --unit, --columns, --bounds, --categories, --public-n and --neighbour are for row datasets; a matrix dataset's neighbours differ in one entry")
	case math.IsNaN(f.eps) || !(f.eps > 0) || math.IsInf(f.eps, 0):
		return errors.New("--eps E is required: the dataset's total privacy budget ε, a finite number > 0")
	case math.IsNaN(f.delta) || !(f.delta >= 0 && f.delta < 1):
		return errors.New("--delta D is required, in [0, 1) (0 allows only the pure-ε Laplace variant, with --accountant basic)")
	}
	mode, err := accounting.ParseMode(f.accountant)
	if err != nil || mode == accounting.ModeAdvanced {
		return fmt.Errorf("--accountant %q: use zcdp, basic, gdp or rdp", f.accountant)
	}
	if mode != accounting.ModeBasic && f.delta == 0 {
		return fmt.Errorf("--delta 0: the %s accountant states costs as (ε, δ) with δ > 0; give --delta (e.g. 1e-6) or use --accountant basic for a pure ε budget", mode)
	}
	return nil
}

// datasetAddMatrix registers --matrix FILE.
func datasetAddMatrix(name string, f *addFlags, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "privnotes dataset add: %v\n", err)
		return code
	}
	in, err := os.Open(f.matrix)
	if err != nil {
		return fail(1, err)
	}
	m, err := readMatrix(in, f.matrix)
	in.Close()
	if err != nil {
		return fail(1, err)
	}
	symmetric := !f.rectangular
	if err := m.check(f.matrix, symmetric, f.entryBound); err != nil {
		return fail(1, err)
	}
	mode, _ := accounting.ParseMode(f.accountant)
	st, err := openForRegistration(f.state, name)
	if err != nil {
		return fail(1, err)
	}
	defer st.Close()
	ctx := context.Background()
	info, err := buildMatrixSnapshot(ctx, m, st.SnapshotDir(), name)
	if err != nil {
		return fail(1, err)
	}
	shape := &ledger.MatrixShape{Rows: m.rows, Cols: m.cols, Symmetric: symmetric, EntryBound: f.entryBound}
	owner, err := st.Register(ctx, ledger.Registration{
		Name: name, Snapshot: info.Ref(), Budget: accounting.Budget{Eps: f.eps, Delta: f.delta}, Accountant: mode,
		Clip: f.entryBound, BadRows: "reject", Source: sourcePath(f.matrix), Matrix: shape,
	})
	if err != nil {
		snapshot.Discard(info.Path) // nothing registered: the snapshot is not kept
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "registered matrix dataset %q in %s\n", name, st.Dir())
	writeOwnerInfo(stdout, owner, nil)
	return 0
}

// buildMatrixSnapshot writes m as a snapshot with columns c1..cn, one row
// per matrix row, and reads it back to check that every entry survived
// exactly (the snapshot is what every later analysis reads).
func buildMatrixSnapshot(ctx context.Context, m *matrixFile, dir, name string) (*snapshot.Info, error) {
	tmp, err := os.CreateTemp(dir, ".matrix-*.csv")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	cols := matrixColumns(m.cols)
	fmt.Fprintln(w, strings.Join(cols, ","))
	buf := make([]byte, 0, 32)
	for i := 0; i < m.rows; i++ {
		for j := 0; j < m.cols; j++ {
			if j > 0 {
				w.WriteByte(',')
			}
			buf = strconv.AppendFloat(buf[:0], m.vals[i*m.cols+j], 'g', -1, 64)
			w.Write(buf)
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	info, err := snapshot.Build(ctx, snapshot.Spec{From: tmp.Name(), BadRows: "reject"}, dir, name)
	if err != nil {
		return nil, err
	}
	if err := verifyMatrixSnapshot(ctx, info, m, cols); err != nil {
		snapshot.Discard(info.Path)
		return nil, err
	}
	return info, nil
}

func matrixColumns(n int) []string {
	cols := make([]string, n)
	for j := range cols {
		cols[j] = "c" + strconv.Itoa(j+1)
	}
	return cols
}

func verifyMatrixSnapshot(ctx context.Context, info *snapshot.Info, m *matrixFile, cols []string) error {
	if int(info.Rows) != m.rows || len(info.Columns) != m.cols {
		return fmt.Errorf("the snapshot holds %d×%d values, the file %d×%d (nothing registered)", info.Rows, len(info.Columns), m.rows, m.cols)
	}
	r, err := snapshot.Open(info.Path, info.Hash)
	if err != nil {
		return err
	}
	defer r.Close()
	// Parquet, not the row cache: this one check would not repay it.
	src, err := r.ParquetSource(cols)
	if err != nil {
		return err
	}
	collected, err := rows.Collect(ctx, src)
	if err != nil {
		return err
	}
	got := collected.Matrix()
	gr, gc := got.Dims()
	if gr != m.rows || gc != m.cols {
		return fmt.Errorf("the snapshot reads back as %d×%d, the file is %d×%d (nothing registered)", gr, gc, m.rows, m.cols)
	}
	for i := 0; i < m.rows; i++ {
		for j := 0; j < m.cols; j++ {
			if got.At(i, j) != m.vals[i*m.cols+j] {
				return fmt.Errorf("entry (%d, %d) did not survive the snapshot exactly (nothing registered)", i+1, j+1)
			}
		}
	}
	return nil
}

// writeMatrixInfo is writeOwnerInfo for a matrix dataset.
func writeMatrixInfo(w io.Writer, info *ledger.OwnerInfo) {
	sc := info.Schema
	ms := sc.Matrix
	kind := "symmetric"
	if !ms.Symmetric {
		kind = fmt.Sprintf("rectangular, analysed as the %d×%d symmetric [[0, M], [Mᵀ, 0]]", ms.Rows+ms.Cols, ms.Rows+ms.Cols)
	}
	fmt.Fprintf(w, "  name\t%s\n", sc.Name)
	fmt.Fprintf(w, "  matrix\t%d×%d (%s)\n", ms.Rows, ms.Cols, kind)
	fmt.Fprintf(w, "  neighbours\tentry: one entry (and its mirror, if symmetric) replaced by any value in [-%g, %g]\n", ms.EntryBound, ms.EntryBound)
	fmt.Fprintf(w, "  budget\tε=%g, δ=%g (%s accountant)\n", sc.Budget.Eps, sc.Budget.Delta, accountantLabel(sc.Accountant))
	fmt.Fprintf(w, "  source\t%s\n", info.Source)
	fmt.Fprintf(w, "  data hash\t%s\n", info.DataHash)
}
