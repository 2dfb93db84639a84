package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/synth"
)

// TestFedRepServers runs private_fedrep on a federation of three real
// server processes, each a silo of 150 users of one planted representation
// (d = 6, k = 1): each server is charged once, the receipt lists the three
// charges, and U recovers the planted direction (‖sinΘ‖² < 0.2 at ε = 8,
// far below the ≈ 5/6 of a random direction; measured: 0.037).
func TestFedRepServers(t *testing.T) {
	for _, k := range []string{envServers, envTLSDir, envTimeout} {
		t.Setenv(k, "")
	}
	const users, d = 450, 6
	data, err := synth.FedRep(21, users, 10, d, 1, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tls := filepath.Join(dir, "tls")
	if code, _, errs := runCLI("certs", "init", tls, "--hosts", "127.0.0.1,localhost"); code != 0 {
		t.Fatalf("certs init: %s", errs)
	}
	var states [3]string
	var addrs []string
	for s := range 3 {
		var b strings.Builder
		for j := range d {
			fmt.Fprintf(&b, "x%d,", j+1)
		}
		b.WriteString("uid,y\n")
		for u := s * users / 3; u < (s+1)*users/3; u++ {
			x, y := data.User(u)
			for r := range y {
				for j := range d {
					fmt.Fprintf(&b, "%.8f,", x.At(r, j))
				}
				fmt.Fprintf(&b, "u%d,%.8f\n", u, y[r])
			}
		}
		csv := writeCSV(t, dir, fmt.Sprintf("silo%d.csv", s+1), b.String())
		states[s] = filepath.Join(dir, fmt.Sprintf("p%d", s+1))
		if code, _, errs := runCLI("dataset", "add", "part", "--csv", csv, "--unit", "user:uid", "--label", "y", "--label-clip", "10", "--public-n",
			"--eps", "20", "--delta", "1e-5", "--clip", "10", "--state", states[s]); code != 0 {
			t.Fatalf("dataset add: %s", errs)
		}
		srv := startServe(t, states[s], tls, "127.0.0.1:0")
		addrs = append(addrs, fmt.Sprintf("p%d=%s", s+1, srv.addr))
	}
	e := &fedEnv{dir: dir, tls: tls, client: filepath.Join(dir, "client")}
	e.states = states
	script := fedOpen + `r := private_fedrep(fed, k=1, eps=8, delta=1e-6)
fmt.Println(r.Receipt)
fmt.Println("U", r.U.RawMatrix().Data)
`
	path := writeCSV(t, dir, "s.pn", script)
	var out, errb strings.Builder
	code := runScript([]string{path, "--state", e.client, "--servers", strings.Join(addrs, ","), "--tls-dir", tls}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("federated FedRep: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	t.Logf("%s", out.String())
	for i, p := range []string{"p1", "p2", "p3"} {
		if !strings.Contains(out.String(), p+":part: charged") {
			t.Errorf("the receipt does not list %s's charge", p)
		}
		if c := e.charges(t, i); c != 1 {
			t.Errorf("%s's ledger has %d charges, want 1", p, c)
		}
	}
	line := out.String()[strings.Index(out.String(), "U [")+3:]
	line = line[:strings.Index(line, "]")]
	var u []float64
	for _, f := range strings.Fields(line) {
		var v float64
		if _, err := fmt.Sscan(f, &v); err != nil {
			t.Fatalf("U %q", line)
		}
		u = append(u, v)
	}
	if len(u) != d {
		t.Fatalf("U %q", line)
	}
	var p mat.Dense
	p.Mul(mat.NewDense(d, 1, u).T(), data.UStar)
	sin2 := 1 - p.At(0, 0)*p.At(0, 0)
	t.Logf("‖sinΘ(U, U*)‖² = %.4g", sin2)
	if !(sin2 < 0.2) {
		t.Errorf("‖sinΘ(U, U*)‖² = %.4g over three servers, want < 0.2", sin2)
	}
}
