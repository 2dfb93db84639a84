package ledger

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A live table's registration keeps where the table is and its password
// out of the public schema and the ledger: the reference in the private
// engines table, the password in a 0600 file that rm removes; verify
// passes with nothing stored to hash.
func TestRegisterEngine(t *testing.T) {
	st, _ := openTemp(t)
	ctx := context.Background()
	ref := &EngineRef{Kind: "postgres", URL: "postgres://reader@db.internal:5432/clinic", Table: "public.visits",
		Types: map[string]string{"age": "integer", "ward": "text"}}
	reg := Registration{Name: "visits", Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP,
		Bounds: map[string][2]float64{"age": {0, 110}}, Engine: ref, EngineSecret: "s3cret-pw",
		EngineColumns: EngineColumns{Numeric: []string{"age"}, Categorical: map[string][]string{"ward": {"A", "B"}}}}
	for _, bad := range []func(r *Registration){
		func(r *Registration) { r.PublicN = true },
		func(r *Registration) { r.EngineColumns = EngineColumns{} },
		func(r *Registration) { r.Bounds = map[string][2]float64{"cost": {0, 1}} },
	} {
		r := reg
		bad(&r)
		if _, err := st.Register(ctx, r); err == nil {
			t.Errorf("registered %+v", r)
		}
		if _, err := os.Stat(st.EngineSecretPath("visits")); !os.IsNotExist(err) {
			t.Errorf("a refused registration left its password file: %v", err)
		}
	}
	info, err := st.Register(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 0 || info.DataHash != "" {
		t.Errorf("owner info %+v: a live table's rows are not counted", info)
	}
	sc, err := st.Schema("visits")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(sc)
	for _, private := range []string{"db.internal", "reader", "s3cret", "public.visits"} {
		if strings.Contains(string(js), private) {
			t.Errorf("the public schema holds %q: %s", private, js)
		}
	}
	if len(sc.Columns) != 1 || sc.Columns[0] != "age" || len(sc.Categorical["ward"]) != 2 {
		t.Errorf("schema %s", js)
	}
	got, ok, err := st.Engine("visits")
	if err != nil || !ok || got.URL != ref.URL || got.Types["ward"] != "text" {
		t.Errorf("Engine: %+v, %v, %v", got, ok, err)
	}
	if _, ok, err := st.Engine("nope"); ok || err != nil {
		t.Errorf("Engine of an unknown dataset: %v, %v", ok, err)
	}
	fi, err := os.Stat(st.EngineSecretPath("visits"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v, %v", fi, err)
	}
	recs, err := st.Entries("")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for _, private := range []string{"s3cret", "db.internal"} {
			if strings.Contains(string(r.Params), private) {
				t.Errorf("record %d holds %q", r.ID, private)
			}
		}
	}
	if err := st.Verify(); err != nil {
		t.Errorf("verify: %v", err)
	}
	if _, err := st.Load("visits"); err == nil {
		t.Error("Load read a live table's data")
	}
	if _, err := st.Remove(ctx, "visits"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.EngineSecretPath("visits")); !os.IsNotExist(err) {
		t.Errorf("rm left the password file: %v", err)
	}
	if _, ok, _ := st.Engine("visits"); ok {
		t.Error("rm left the engine reference")
	}
}
