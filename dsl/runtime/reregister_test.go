package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A handle opened before `dataset rm` and a new registration under the
// same name must not charge the new registration with a plan made from
// the old schema (here: another clip norm, which sets the sensitivity):
// the call is refused before its charge, and dataset(name) opens the new
// registration. A re-registration with the same schema keeps handles
// valid, since a plan depends on the public schema only.
func TestHandleAfterReregistration(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(40, 3, 1, 0.3), accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`old := dataset("d")`)

	reregister := func(clip float64) {
		t.Helper()
		st, err := ledger.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Remove(context.Background(), "d"); err != nil {
			t.Fatal(err)
		}
		st.Close()
		registerWith(t, dir, ledger.Registration{Name: "d", Table: table(40, 3, 2, 0.3), Budget: accounting.Budget{Eps: 5, Delta: 1e-5},
			Accountant: accounting.ModeZCDP, Clip: clip, Source: "test"})
	}

	reregister(4)
	res, o := s.run(`m := private_mean(old, eps=0.5, delta=1e-6)`)
	if res.Error == nil || res.Error.Name != NameDatasetError || !strings.Contains(res.Error.Value, "registered again") {
		t.Fatalf("call on the old handle: want DatasetError saying the dataset was registered again, got %s", o.all(res))
	}
	if st := status(t, dir, "d"); st.Charges != 0 {
		t.Fatalf("%d charges after the refused call, want 0", st.Charges)
	}
	out := s.ok(`m := private_mean(dataset("d"), eps=0.5, delta=1e-6)
fmt.Println(m.Receipt.Charged)`)
	if strings.TrimSpace(out) != "true" {
		t.Fatalf("call on a fresh handle: %q", out)
	}

	// The same schema again (other rows): the old handle stays usable.
	s.ok(`cur := dataset("d")`)
	register(t, dir, "e", table(40, 3, 3, 0.3), accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	s.ok(`e := dataset("e")`)
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remove(context.Background(), "e"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	register(t, dir, "e", table(50, 3, 4, 0.3), accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	if out := s.ok(`c := private_count(e, eps=0.5)
fmt.Println(c.Receipt.Charged)`); strings.TrimSpace(out) != "true" {
		t.Fatalf("same schema: %q", out)
	}
}
