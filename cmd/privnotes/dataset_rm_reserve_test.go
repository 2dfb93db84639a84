package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A live reservation of a federated call in progress shows in ledger show
// (call, cost, lapse, what it holds) and keeps dataset rm from removing
// its dataset; once it is aborted, rm removes the dataset and ledger show
// lists no reservation.
func TestDatasetRmReserved(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	src := writeCSV(t, dir, "d.csv", "a,b\n1,2\n3,4\n5,6\n")
	if code, _, errs := runCLI("dataset", "add", "fed", "--state", state, "--from", src, "--eps", "5", "--delta", "1e-6", "--clip", "10"); code != 0 {
		t.Fatalf("add: %d %s", code, errs)
	}
	withStore := func(f func(st *ledger.Store)) {
		t.Helper()
		st, err := ledger.Open(state)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f(st)
	}
	ev := accounting.Pure(0.5)
	ev.Mechanism = "private_pca/federated"
	var lapse time.Time
	withStore(func(st *ledger.Store) {
		r, err := st.Reserve(context.Background(), "call-42", "fed", ev, ledger.ChargeMeta{Cell: "[3]"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		lapse = r.Expires
	})
	steps := []struct {
		args     []string
		code     int
		out, err []string // each must appear
		notOut   []string
	}{
		{[]string{"ledger", "show", "--state", state}, 0,
			[]string{"1 live reservation(s) of federated calls in progress", "call-42", "private_pca/federated", lapse.Format("2006-01-02 15:04:05"),
				`dataset "fed": spent ε=0, δ=0 by 0 charge(s); held ε=`, "by 1 reservation(s)"}, nil, nil},
		{[]string{"ledger", "show", "--state", state, "--dataset", "fed"}, 0, []string{"call-42"}, nil, nil},
		{[]string{"dataset", "rm", "fed", "--state", state}, 1, nil,
			[]string{`dataset "fed" has 1 live reservation(s)`, "call-42", "cannot be removed while they are held", "commits or aborts them or they lapse"}, nil},
		{[]string{"ledger", "verify", "--state", state}, 0, []string{"ledger OK"}, nil, nil},
	}
	run := func() {
		t.Helper()
		for _, s := range steps {
			code, out, errs := runCLI(s.args...)
			if code != s.code {
				t.Fatalf("%v: exit %d, want %d\n%s%s", s.args, code, s.code, out, errs)
			}
			for _, w := range s.out {
				if !strings.Contains(out, w) {
					t.Errorf("%v: output does not say %q:\n%s", s.args, w, out)
				}
			}
			for _, w := range s.err {
				if !strings.Contains(errs, w) {
					t.Errorf("%v: stderr does not say %q:\n%s", s.args, w, errs)
				}
			}
			for _, w := range s.notOut {
				if strings.Contains(out, w) {
					t.Errorf("%v: output says %q:\n%s", s.args, w, out)
				}
			}
		}
	}
	run()
	withStore(func(st *ledger.Store) {
		if released, err := st.AbortReserved(context.Background(), "call-42"); err != nil || !released {
			t.Fatalf("abort: %v %v", released, err)
		}
	})
	steps = steps[:1]
	steps[0].out, steps[0].notOut = nil, []string{"reservation", "call-42"}
	run()
	if code, out, errs := runCLI("dataset", "rm", "fed", "--state", state); code != 0 || !strings.Contains(out, `removed dataset "fed"`) {
		t.Fatalf("rm after the abort: %d %s %s", code, out, errs)
	}
}
