package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
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

// nullOutput discards a cell's streams and displays.
type nullOutput struct{}

func (nullOutput) Stream(string, string)  {}
func (nullOutput) Display(engine.Display) {}
func (nullOutput) ClearOutput(bool)       {}

// The review's reproduction of issue 25, end to end: cells run by the
// binary's own engine on a state directory edit a real release's receipt
// before showing it, the notebook is saved as a front end saves it, and
// `notebook verify` checks it. A forged note fails; a forged dry run is
// listed as unverified and never as ok.
func TestNotebookVerifyKernelForgedReceipt(t *testing.T) {
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
	eng, err := newCellEngine(state)
	if err != nil {
		t.Fatal(err)
	}
	type output struct {
		Type     string         `json:"output_type"`
		Count    int            `json:"execution_count"`
		Data     map[string]any `json:"data"`
		Metadata map[string]any `json:"metadata"`
	}
	type cell struct {
		Type    string   `json:"cell_type"`
		Count   int      `json:"execution_count"`
		Outputs []output `json:"outputs"`
	}
	n := 0
	run := func(code string) cell {
		n++
		res := eng.Execute(t.Context(), engine.ExecuteRequest{Code: code, CellID: fmt.Sprint("c", n), ExecutionCount: n}, nullOutput{})
		if res.Error != nil {
			t.Fatalf("cell %d: %s: %s", n, res.Error.Name, res.Error.Value)
		}
		c := cell{Type: "code", Count: n, Outputs: []output{}}
		if res.Value != nil {
			c.Outputs = append(c.Outputs, output{Type: "execute_result", Count: n, Data: res.Value.Data, Metadata: res.Value.Metadata})
		}
		return c
	}
	save := func(name string, cells ...cell) string {
		b, err := json.Marshal(map[string]any{"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	open := run(`ds := dataset("d")`)
	forged := run(`r := private_count(ds, eps=0.25)
r.Receipt.Note += ". EXACT count: 4242"
r`)
	dry := run(`dr := private_count(ds, eps=0.25, dry_run=true)
dr.Receipt.Note += ". EXACT count: 4242"
dr`)
	honest := run(`private_count(ds, eps=0.25)`)
	for _, tc := range []struct {
		name  string
		cells []cell
		code  int
		want  []string
	}{
		{"forged note", []cell{open, forged, dry}, 1, []string{
			"FAIL  cell 2 [2]: count/laplace on d: the receipt's Note is not what ledger record 2 holds",
			"UNVERIFIED  cell 3 [3]: count/laplace on d: unverified (dry run: nothing was released or charged",
			"FAILED: ",
		}},
		{"forged dry run beside an honest release", []cell{open, honest, dry}, 0, []string{
			"ok    cell 2 [4]: count/laplace on d: record 4 (charged)",
			"UNVERIFIED  cell 3 [3]: count/laplace on d: unverified (dry run",
			"1 output(s) UNVERIFIED (listed above)",
			"verified: 1 output(s) of ",
		}},
	} {
		path := save(strings.ReplaceAll(tc.name, " ", "-")+".ipynb", tc.cells...)
		var out, errb bytes.Buffer
		code := dispatch([]string{"notebook", "verify", path, "--state", state}, &out, &errb)
		all := out.String() + errb.String()
		t.Logf("%s:\n%s", tc.name, all)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no %q in:\n%s", tc.name, w, all)
			}
		}
		if strings.Contains(all, "ok    cell 3") || strings.Contains(all, "ok    cell 2 [2]") {
			t.Errorf("%s: a forged output verified:\n%s", tc.name, all)
		}
	}
}
