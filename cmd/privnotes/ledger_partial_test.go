package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The shared-notebook workflow with a partial export
// (docs/shared-notebooks.md): a notebook on dataset d, whose charges
// interleave with another analyst's on "payroll", is committed with
// `ledger export --json --dataset d`, which names nothing of payroll and
// verifies the notebook; an unknown --dataset is refused.
func TestLedgerExportDatasetVerifiesNotebook(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	st, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ name, csv string }{{"d", "a,b\n1,2\n3,4\n"}, {"payroll", "salary_secret\n1\n2\n"}} {
		tab, err := dataset.Read(strings.NewReader(r.csv), dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Register(t.Context(), ledger.Registration{Name: r.name, Table: tab, Budget: accounting.Budget{Eps: 1}, Accountant: accounting.ModeBasic, Clip: 1, Source: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	eng, err := newCellEngine(state)
	if err != nil {
		t.Fatal(err)
	}
	var cells []map[string]any
	for i, code := range []string{
		`private_count(dataset("d"), eps=0.25)`,
		`private_count(dataset("payroll"), eps=0.25, name="payroll_secret_name")`,
		`private_count(dataset("d"), eps=0.25)`,
	} {
		res := eng.Execute(t.Context(), engine.ExecuteRequest{Code: code, CellID: "c", ExecutionCount: i + 1}, nullOutput{})
		if res.Error != nil || res.Value == nil {
			t.Fatalf("cell %d: %+v", i+1, res.Error)
		}
		if i == 1 {
			continue // another analyst's cell, not in the notebook
		}
		cells = append(cells, map[string]any{"cell_type": "code", "execution_count": i + 1,
			"outputs": []any{map[string]any{"output_type": "execute_result", "execution_count": i + 1, "data": res.Value.Data, "metadata": res.Value.Metadata}}})
	}
	nb, _ := json.Marshal(map[string]any{"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{}})
	nbPath := filepath.Join(dir, "analysis.ipynb")
	if err := os.WriteFile(nbPath, nb, 0o600); err != nil {
		t.Fatal(err)
	}
	code, export, errs := runCLI("ledger", "export", "--json", "--dataset", "d", "--state", state)
	if code != 0 {
		t.Fatalf("export --dataset d: %d %s", code, errs)
	}
	for _, secret := range []string{"payroll", "salary_secret"} {
		if strings.Contains(export, secret) {
			t.Errorf("the export of d holds %q", secret)
		}
	}
	ledPath := filepath.Join(dir, "analysis.ledger.json")
	if err := os.WriteFile(ledPath, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"notebook", "verify", nbPath, "--ledger", ledPath}, &out, &errb); code != 0 || !strings.Contains(out.String(), "verified: 2 output(s)") {
		t.Errorf("notebook verify --ledger (partial): %d\n%s%s", code, out.String(), errb.String())
	}
	if code, _, errs := runCLI("ledger", "export", "--json", "--dataset", "nosuch", "--state", state); code != 1 || !strings.Contains(errs, `no dataset "nosuch" in the ledger`) {
		t.Errorf("export --dataset nosuch: %d %q", code, errs)
	}
}
