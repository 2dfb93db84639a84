package snapshot

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// memoryOf reads a snapshot's rows back through its table reference, in
// file order, as the registry's memory format would hold them.
func memoryOf(t *testing.T, r *Reader, cols []string, label, user string) *MemoryRows {
	t.Helper()
	sel := append([]string(nil), cols...)
	if label != "" {
		sel = append(sel, label)
	}
	order := ""
	if user != "" {
		sel = append(sel, user)
		order = " ORDER BY " + sqlplan.RowColumn
	}
	for i := range sel {
		sel[i] = quoteIdent(sel[i])
	}
	out, err := r.Query(context.Background(), "SELECT "+strings.Join(sel, ", ")+" FROM "+r.Table()+order)
	if err != nil {
		t.Fatal(err)
	}
	m := &MemoryRows{Columns: cols, N: len(out), Label: label, UserColumn: user}
	for _, row := range out {
		for j := range cols {
			m.X = append(m.X, row[j].(float64))
		}
		k := len(cols)
		if label != "" {
			m.Y = append(m.Y, row[k].(float64))
			k++
		}
		if user != "" {
			m.Users = append(m.Users, row[k].(int32))
		}
	}
	return m
}

// A memory table of a snapshot's rows answers the statements the column
// analyses print as the snapshot does: the same columns, types and row
// positions (the first rows of each user).
func TestMemoryTableMatchesSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b strings.Builder
	b.WriteString("a,b,y,uid\n")
	for i := range 200 {
		fmt.Fprintf(&b, "%d,%v,%d,u%d\n", (i*37)%101-10, float64(i%13)/4, i%3, (i*7)%23)
	}
	dir := t.TempDir()
	spec := Spec{From: write(t, dir, "t.csv", b.String()), Label: "y", UserColumn: "uid"}
	info, err := Build(ctx, spec, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := memoryOf(t, r, []string{"a", "b"}, "y", "uid")
	mt, err := OpenMemoryTable(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	defer mt.Close()
	stmts := []string{
		"SELECT count(*), sum(a), sum(CAST(b AS DOUBLE)), count(DISTINCT uid), sum(y) FROM %s",
		"SELECT typeof(a), typeof(b), typeof(y), typeof(uid), typeof(" + sqlplan.RowColumn + ") FROM %s LIMIT 1",
		// Each user's first three rows, in row order: the bound's rule.
		"SELECT uid, sum(a) FROM (SELECT *, row_number() OVER (PARTITION BY uid ORDER BY " + sqlplan.RowColumn + ") AS k FROM %s) WHERE k <= 3 GROUP BY uid ORDER BY uid",
		"SELECT least(greatest(a, 0), 50) AS c, count(*) FROM %s WHERE b > 1 GROUP BY c ORDER BY c",
	}
	for _, s := range stmts {
		want, err := r.Query(ctx, fmt.Sprintf(s, r.Table()))
		if err != nil {
			t.Fatalf("%s on the snapshot: %v", s, err)
		}
		got, err := mt.Query(ctx, fmt.Sprintf(s, mt.Table()))
		if err != nil {
			t.Fatalf("%s on the memory table: %v", s, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: memory table %v, snapshot %v", s, got, want)
		}
	}
	if _, err := mt.Query(ctx, "SELECT * FROM read_csv("+quoteString(spec.From)+")"); err != ErrQuery {
		t.Errorf("a statement reading a file: %v, want ErrQuery", err)
	}
}

// A memory table refuses rows that disagree with its columns, and
// repeated names (which would hide a column from every statement).
func TestMemoryTableRefused(t *testing.T) {
	t.Parallel()
	for _, m := range []*MemoryRows{
		{Columns: []string{"a"}, X: []float64{1, 2}, N: 3},
		{Columns: []string{"a"}, X: []float64{1}, N: 1, Label: "y"},
		{Columns: []string{"a"}, X: []float64{1}, N: 1, UserColumn: "u"},
		{Columns: []string{"a", "a"}, X: []float64{1, 2}, N: 1},
		{Columns: []string{"a"}, X: []float64{1}, N: 1, UserColumn: "a", Users: []int32{0}},
		{Columns: []string{sqlplan.RowColumn}, X: []float64{1}, N: 1, UserColumn: "u", Users: []int32{0}},
	} {
		if mt, err := OpenMemoryTable(context.Background(), m); err == nil {
			mt.Close()
			t.Errorf("%+v: opened", m)
		}
	}
}

// BenchmarkMemoryTable measures loading rows into a memory table and a
// small statement on it.
func BenchmarkMemoryTable(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100_000} {
		m := &MemoryRows{Columns: []string{"a", "b", "c"}, N: n, UserColumn: "u"}
		for i := range n {
			m.X = append(m.X, float64(i%97), float64(i%13), float64(i))
			m.Users = append(m.Users, int32(i/10))
		}
		b.Run(fmt.Sprintf("load/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				mt, err := OpenMemoryTable(ctx, m)
				if err != nil {
					b.Fatal(err)
				}
				mt.Close()
			}
		})
		mt, err := OpenMemoryTable(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("query/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := mt.Query(ctx, "SELECT count(*), sum(least(greatest(a, 0), 50)) FROM "+mt.Table()+" WHERE b > 3"); err != nil {
					b.Fatal(err)
				}
			}
		})
		mt.Close()
	}
}
