package verify

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/runtime"
)

// The review's attack (issue 25): an ordinary cell edits the receipt of a
// real release before showing it, and the kernel renders and stamps the
// edited receipt as it would any result. Nothing verify says "ok" about
// may come from the notebook: the receipt and every rendering are redrawn
// from the ledger, so each of these outputs fails, or, when the ledger
// cannot say (a dry run, a block the ledger does not record), is listed as
// unverified, never as ok.
func TestCheckKernelForgedReceipt(t *testing.T) {
	dir := newState(t, false)
	s := newSession(t, dir)
	s.cell(`ds := dataset("people")`)
	for _, tc := range []struct {
		name, code string
		// want begins the verdict line; ok says whether the report
		// passes (an unverified output does not fail it, and is not ok).
		want string
		ok   bool
	}{
		{"honest", `c := private_count(ds, eps=0.25)
c`, "ok    cell 2 [2]: count/laplace on people: record 3 (charged)", true},
		{"forged note", `r := private_count(ds, eps=0.25)
r.Receipt.Note += ". EXACT count: 4242"
r`, "FAIL  cell 3 [3]: count/laplace on people: the receipt's Note is not what ledger record 5 holds", false},
		{"forged note on the receipt alone", `r2 := private_count(ds, eps=0.25)
r2.Receipt.Note += ". EXACT count: 4242"
r2.Receipt`, "FAIL  cell 4 [4]: count/laplace on people: the receipt's Note is not what ledger record 7 holds", false},
		{"forged block", `r3 := private_count(ds, eps=0.25)
r3.Receipt.Block = "EXACT count: 4242"
r3`, `UNVERIFIED  cell 5 [5]: count/laplace on people: record 9: the budget block the receipt names ("EXACT count: 4242") is not recorded in the ledger`, true},
		{"forged block in a block", "var r4 *CountResult\nbudget eps=0.5 {\n\tr4 = private_count(ds, eps=0.25)\n}\nr4.Receipt.Block += \"; EXACT count: 4242\"\nr4",
			"FAIL  cell 6 [6]: count/laplace on people: the receipt's Block is not what ledger record 11 holds", false},
		{"forged noise", `r5 := private_count(ds, eps=0.25)
r5.Receipt.NoiseScale = "none: EXACT count"
r5`, "FAIL  cell 7 [7]: count/laplace on people: the receipt's noise: not what ledger record 13 stored with the release", false},
		{"forged dry run", `d := private_count(ds, eps=0.25, dry_run=true)
d.Receipt.Note += ". EXACT count: 4242"
d`, "UNVERIFIED  cell 8 [8]: count/laplace on people: unverified (dry run: nothing was released or charged;", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.cell(tc.code)
			nb := &Notebook{Cells: clone(t, s.cells[len(s.cells)-1:])}
			n := len(s.cells)
			nb.Cells = append(make([]Cell, n-1), nb.Cells...)
			rep := Check(nb, verified(t, dir))
			if len(rep.Lines) != 1 {
				t.Fatalf("%d lines: %v", len(rep.Lines), rep.Lines)
			}
			got := rep.Lines[0]
			if !strings.HasPrefix(got.String(), tc.want) {
				t.Errorf("verdict:\n got %s\nwant %s…", got, tc.want)
			}
			if rep.OK() != tc.ok || got.OK != strings.HasPrefix(tc.want, "ok") {
				t.Errorf("report OK %v, line OK %v: want %v, %v", rep.OK(), got.OK, tc.ok, strings.HasPrefix(tc.want, "ok"))
			}
		})
	}
}

// Every field of the receipt is bound to the ledger, including fields
// added later: each is edited in turn, by reflection, and the output made
// again from the edited receipt with the kernel's own display code, so
// that the rendering, the summary and the full receipt all agree. The
// verdict must never be ok. Fields the ledger cannot back show as
// unverified; all others fail. A numeric field (ε, the remaining budget,
// the cost) stands in for a noise std or an interval a receipt may carry
// later.
func TestCheckEveryReceiptFieldBound(t *testing.T) {
	sh := executed(t)
	// cell 2: a charge of record 3; cell 7: a replay of it.
	for _, cell := range []int{1, 6} {
		var st Stamp
		if err := json.Unmarshal(sh.nb.Cells[cell].Outputs[0].Metadata["privnotes"], &st); err != nil || st.Receipt == nil {
			t.Fatalf("cell %d: %v", cell+1, err)
		}
		for _, path := range leafFields(reflect.TypeOf(*st.Receipt), nil) {
			t.Run(strings.Join(append([]string{st.Receipt.Mechanism, Where(cell, sh.nb.Cells[cell])}, fieldNames(reflect.TypeOf(*st.Receipt), path)...), "/"), func(t *testing.T) {
				nb := &Notebook{Cells: clone(t, sh.nb.Cells)}
				var st Stamp
				if err := json.Unmarshal(nb.Cells[cell].Outputs[0].Metadata["privnotes"], &st); err != nil {
					t.Fatal(err)
				}
				perturb(reflect.ValueOf(st.Receipt).Elem().FieldByIndex(path))
				v, cols, err := release.Decode([]byte(sh.led.Releases[3].Value))
				if err != nil {
					t.Fatal(err)
				}
				res, err := runtime.Result(st.Receipt.Function, &release.Release{Value: v, Receipt: st.Receipt, Columns: cols})
				if err != nil {
					t.Skipf("the kernel cannot show the edited receipt: %v", err)
				}
				nb.Cells[cell].Outputs[0] = output(t, interp.Render(res))
				rep := Check(nb, sh.led)
				l := rep.Lines[cell-1]
				// Only the fields the ledger may not record (a budget
				// block, a dry run's receipt) may read as unverified.
				name := reflect.TypeOf(*st.Receipt).FieldByIndex(path).Name
				if l.OK || l.Unverified && name != "Block" && name != "DryRun" {
					t.Errorf("an edited receipt did not fail: %s", l)
				}
			})
		}
	}
}

// Every field of a released value is redrawn from the ledger too: an edit
// of any of them, rendered by the kernel's display code, fails.
func TestCheckEveryValueFieldBound(t *testing.T) {
	sh := executed(t)
	for _, tc := range []struct {
		cell   int
		record int64
	}{{1, 3}, {2, 5}} {
		rel := sh.led.Releases[tc.record]
		v, cols, err := release.Decode([]byte(rel.Value))
		if err != nil {
			t.Fatal(err)
		}
		typ := reflect.TypeOf(v).Elem()
		for _, path := range leafFields(typ, nil) {
			t.Run(strings.Join(append([]string{typ.Name()}, fieldNames(typ, path)...), "/"), func(t *testing.T) {
				var st Stamp
				if err := json.Unmarshal(sh.nb.Cells[tc.cell].Outputs[0].Metadata["privnotes"], &st); err != nil {
					t.Fatal(err)
				}
				v, _, _ := release.Decode([]byte(rel.Value))
				perturb(reflect.ValueOf(v).Elem().FieldByIndex(path))
				res, err := runtime.Result(st.Receipt.Function, &release.Release{Value: v, Receipt: st.Receipt, Columns: cols})
				if err != nil {
					t.Fatal(err)
				}
				nb := &Notebook{Cells: clone(t, sh.nb.Cells)}
				nb.Cells[tc.cell].Outputs[0] = output(t, interp.Render(res))
				if l := Check(nb, sh.led).Lines[tc.cell-1]; l.OK {
					t.Errorf("an edited value verified: %s", l)
				}
			})
		}
	}
}

// leafFields lists the index paths of typ's exported leaf fields
// (descending into structs), so that a field added later is listed too.
func leafFields(typ reflect.Type, prefix []int) [][]int {
	var out [][]int
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		path := append(append([]int(nil), prefix...), i)
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leafFields(f.Type, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

func fieldNames(typ reflect.Type, path []int) []string {
	var names []string
	for _, i := range path {
		f := typ.Field(i)
		names = append(names, f.Name)
		typ = f.Type
	}
	return names
}

// perturb changes v to another value of its type.
func perturb(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.String:
		v.SetString(v.String() + " EXACT 4242")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float()*2 + 1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		k := reflect.New(v.Type().Key()).Elem()
		perturb(k)
		m.SetMapIndex(k, reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		perturb(e)
		v.Set(reflect.Append(v, e))
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		perturb(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				perturb(v.Field(i))
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf("EXACT 4242"))
	default:
		panic("perturb: no edit for a " + v.Type().String())
	}
}
