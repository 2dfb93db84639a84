package runtime

// Leak tests of the paths by which a failure inside a private call reaches
// the analyst (docs/threat-model.md, escape 13): a mechanism that panics or
// fails with a message holding private values, injected through
// testRunHook after a real charge.

import (
	"context"
	"fmt"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"gonum.org/v1/gonum/mat"
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// injected mechanisms: each fails in a way whose message carries the row
// count and a value of the data.
var injected = map[string]func(ctx context.Context, d *release.Data) (any, error){
	// a runtime error whose index is the private row count
	"index panic": func(ctx context.Context, d *release.Data) (any, error) {
		r, _ := matrix(d).Dims()
		a := make([]int, 3)
		return a[r%1000], nil
	},
	// a panic whose value prints a private value
	"value panic": func(ctx context.Context, d *release.Data) (any, error) {
		panic(fmt.Sprintf("non-finite step at row %d: %.9f", matrix(d).RawMatrix().Rows, matrix(d).At(0, 0)))
	},
	// a panic with an error value, as gonum and the noise samplers raise
	"error panic": func(ctx context.Context, d *release.Data) (any, error) {
		panic(fmt.Errorf("eigen: %d rows, first %.9f", matrix(d).RawMatrix().Rows, matrix(d).At(0, 0)))
	},
	// an error whose text holds the same facts
	"error": func(ctx context.Context, d *release.Data) (any, error) {
		return nil, fmt.Errorf("too few rows: %d, first %.9f", matrix(d).RawMatrix().Rows, matrix(d).At(0, 0))
	},
}

// matrix reads a run's rows into memory.
func matrix(d *release.Data) *mat.Dense {
	x, err := rows.Collect(context.Background(), d.Rows)
	if err != nil {
		panic(err)
	}
	return x.Matrix()
}

var ledgerRecord = regexp.MustCompile(`ledger record \d+`)

func withRunHook(t *testing.T, run func(context.Context, *release.Data) (any, error)) {
	t.Helper()
	testRunHook = func(func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error) {
		return run
	}
	t.Cleanup(func() { testRunHook = nil })
}

// A mechanism that panics after its charge (index out of range with a
// data-dependent index, a panic value printing data) gives the same fixed
// MechanismFailed message as one that fails with an error: no value, no
// row count, no stack; the charge stands, the session keeps its
// variables, and the message is the same on every dataset.
func TestMechanismPanicHidden(t *testing.T) {
	dir := t.TempDir()
	b := accounting.Budget{Eps: 5, Delta: 1e-5}
	register(t, dir, "secret", secretTable(), b, accounting.ModeZCDP)
	register(t, dir, "other", table(52, 4, 5, 3), b, accounting.ModeZCDP)
	msgs := map[string]string{}
	for _, ds := range []string{"secret", "other"} {
		s := newSession(t, dir)
		s.ok(fmt.Sprintf("ds := dataset(%q)\nkept := 42", ds))
		for name, run := range injected {
			withRunHook(t, run)
			res, out := s.run(`r := private_count(ds, eps=0.1, delta=1e-6)`)
			text := out.all(res)
			if res.Error == nil || res.Error.Name != NameMechanismFailed {
				t.Fatalf("%s on %s: got %s, want %s", name, ds, text, NameMechanismFailed)
			}
			if l := leaks(text); len(l) > 0 {
				t.Errorf("%s on %s: private facts %v reached the cell:\n%s", name, ds, l, text)
			}
			for _, bad := range []string{"52", "panic", "goroutine", ".go:", "runtime error"} {
				if strings.Contains(text, bad) {
					t.Errorf("%s on %s: the cell shows %q:\n%s", name, ds, bad, text)
				}
			}
			if !strings.Contains(res.Error.Value, "its charge (ledger record") {
				t.Errorf("%s on %s: the message does not say the charge stands: %s", name, ds, res.Error.Value)
			}
			msg := strings.ReplaceAll(res.Error.Name+": "+res.Error.Value, `"`+ds+`"`, "DS")
			msg = strings.Join(strings.Fields(ledgerRecord.ReplaceAllString(msg, "ledger record N")), " ")
			if prev, ok := msgs["*"]; ok && prev != msg {
				t.Errorf("%s on %s: message differs from another failure's:\n %s\n %s", name, ds, msg, prev)
			}
			msgs["*"] = msg
		}
		testRunHook = nil
		if got := strings.TrimSpace(s.ok(`fmt.Println(kept)`)); got != "42" {
			t.Errorf("the session lost its variables after the failures: kept = %q", got)
		}
		if st := status(t, dir, ds); st.Charges != len(injected) {
			t.Errorf("%s: %d charges, want %d (a failed call's charge stands)", ds, st.Charges, len(injected))
		}
	}
	verify(t, dir)
}

// On public synthetic data the reason of a failure is shown, panics
// included: it describes public data only.
func TestMechanismPanicOnSyntheticShown(t *testing.T) {
	s := newSession(t, t.TempDir())
	withRunHook(t, injected["value panic"])
	res, _ := s.fails(`sd := synth_spiked(n=137, d=4, k=1, seed=1)
r := private_count(sd, eps=0.1, delta=1e-6)`, NameMechanismFailed)
	if !strings.Contains(res.Error.Value, "panic: non-finite step at row 137") {
		t.Errorf("a failure on public data hides its reason: %s", res.Error.Value)
	}
}
