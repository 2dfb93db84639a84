package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClipOptional: a dataset that will only get counts, histograms, sums
// and quantiles is registered without --clip (before, dataset add refused
// it). The methods that clip rows to a norm refuse such a dataset at plan
// time, naming the flag, and charge nothing; a call that gives clip= runs.
func TestClipOptional(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	csv := writeCSV(t, dir, "t.csv", "a,b\n1,2\n3,4\n5,6\n7,8\n")
	if code, out, errs := runCLI("dataset", "add", "t", "--from", csv, "--bounds", "a=0:10", "--eps", "100", "--delta", "1e-5", "--state", state); code != 0 {
		t.Fatalf("dataset add without --clip: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI("dataset", "show", "t", "--state", state); code != 0 || !strings.Contains(norm(out), "clip norm none") {
		t.Errorf("dataset show: exit %d, %q %q; want the clip norm shown as none", code, out, errs)
	}
	const refused = `dataset "t" was registered without --clip, a public L2 norm to clip its rows to, which this method needs; give clip=NORM`
	tests := []struct {
		name, call string
		charged    bool
		errs       string
	}{
		{"count", `private_count(ds, eps=0.5)`, true, ""},
		{"histogram", `private_histogram(ds, col="a", bins=2, eps=0.5)`, true, ""},
		{"sum", `private_sum(ds, col="a", eps=0.5)`, true, ""},
		{"quantile", `private_quantile(ds, col="a", q=0.5, eps=0.5)`, true, ""},
		{"pca", `private_pca(ds, k=1, eps=0.5, delta=1e-6, method="gauss")`, false, refused},
		{"mean of rows", `private_mean(ds, columns=[]string{"a", "b"}, eps=0.5, delta=1e-6)`, false, refused},
		{"pca with clip=", `private_pca(ds, k=1, eps=0.5, delta=1e-6, method="gauss", clip=10)`, true, ""},
	}
	charges := 0
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := filepath.Join(dir, tt.name+".pn")
			if err := os.WriteFile(script, []byte("ds := dataset(\"t\")\nr := "+tt.call+"\n_ = r\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, errs := runCLI("run", "--state", state, script)
			if tt.errs == "" && code != 0 || tt.errs != "" && (code != exitError || !strings.Contains(errs, "ArgumentError") || !strings.Contains(errs, tt.errs)) {
				t.Errorf("call %d: exit %d, stderr %q; want %q", i, code, errs, tt.errs)
			}
			if tt.charged {
				charges++
			}
			// A refused call charged nothing: the ledger holds the
			// registration and the charges of the calls that ran.
			_, out, _ := runCLI("ledger", "export", "--csv", "--state", state)
			if n := strings.Count(out, ",charge,"); n != charges {
				t.Errorf("after %s: %d charges in the ledger, want %d:\n%s", tt.name, n, charges, out)
			}
		})
	}
}
