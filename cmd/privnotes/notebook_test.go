package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// notebook verify and receipts: usage errors, a notebook without receipts,
// and a receipt the ledger cannot back, named by its cell.
func TestNotebookCommands(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	st, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := dataset.Read(strings.NewReader("a,b\n1,2\n3,4\n"), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Register(t.Context(), ledger.Registration{Name: "d", Table: tab, Budget: accounting.Budget{Eps: 1}, Accountant: accounting.ModeBasic, Clip: 1, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	plain := filepath.Join(dir, "plain.ipynb")
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(plain, `{"cells":[{"cell_type":"code","execution_count":1,"outputs":[{"output_type":"stream","text":"hi"}]}]}`)
	forged := filepath.Join(dir, "forged.ipynb")
	write(forged, `{"cells":[{"cell_type":"markdown"},{"cell_type":"code","execution_count":3,"outputs":[{"output_type":"execute_result","data":{"text/plain":"private count ≈ 7"},
"metadata":{"privnotes":{"dataset":"d","mechanism":"count/laplace","ledger_id":9,"charged":true,"accountant":"basic","release_hash":"00"}}}]}]}`)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"notebook"}, 2, "Usage: privnotes notebook verify"},
		{[]string{"notebook", "nosuch"}, 2, `unknown subcommand "nosuch"`},
		{[]string{"notebook", "verify"}, 2, "give the notebook FILE.ipynb"},
		{[]string{"notebook", "verify", plain, "--state", state, "--ledger", "x.json"}, 2, "give --state or --ledger, not both"},
		{[]string{"notebook", "verify", filepath.Join(dir, "missing.ipynb"), "--state", state}, 1, "no such file"},
		{[]string{"notebook", "verify", plain, "--ledger", plain}, 1, "not an exported privnotes ledger"},
		{[]string{"notebook", "verify", plain, "--state", state}, 0, "shows no output with a privnotes receipt"},
		{[]string{"notebook", "verify", forged, "--state", state}, 1, "FAIL  cell 2 [3]: count/laplace on d: ledger record 9 is not a charge of this ledger"},
		{[]string{"notebook", "receipts", forged}, 0, "cell 2 [3]: count/laplace on d: charged"},
		{[]string{"notebook", "receipts", plain}, 0, "it spent nothing"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(tc.args, &out, &errb)
		all := out.String() + errb.String()
		if code != tc.code || !strings.Contains(all, tc.want) {
			t.Errorf("%v: status %d, want %d and %q in:\n%s", tc.args[1:], code, tc.code, tc.want, all)
		}
	}
}
