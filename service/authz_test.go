package service_test

import (
	"context"
	"crypto/x509"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/service"
	"github.com/privnotes/privnotes/service/client"
	"github.com/privnotes/privnotes/service/tlsdir"
)

func TestParseAuthz(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		// want maps each client to its datasets ("*" for all); err, if
		// set, is a fragment of the error.
		want map[string][]string
		err  string
	}{
		{name: "empty", file: "", want: map[string][]string{}},
		{name: "comments and blanks", file: "# who may use what\n\n   \n# end\n", want: map[string][]string{}},
		{name: "spaces, commas, comments", file: "alice census survey  # two\nbob\tcensus,survey2\n", want: map[string][]string{"alice": {"census", "survey"}, "bob": {"census", "survey2"}}},
		{name: "star", file: "ops *\n", want: map[string][]string{"ops": {"*"}}},
		{name: "email-like name", file: "a.b@example.org census\r\n", want: map[string][]string{"a.b@example.org": {"census"}}},
		{name: "no datasets", file: "alice census\nbob\n", err: "line 2: client \"bob\" is granted no dataset"},
		{name: "no datasets after comment", file: "bob # census\n", err: "line 1: client \"bob\" is granted no dataset"},
		{name: "listed twice", file: "alice a\n\nalice b\n", err: "line 3: client \"alice\" is listed twice"},
		{name: "star with names", file: "alice * census\n", err: "line 1: client \"alice\": * (every dataset) cannot be combined"},
		{name: "bad identity", file: "-alice census\n", err: "line 1: \"-alice\" is not a client identity"},
		{name: "bad dataset", file: "alice 9lives\n", err: "line 1: client \"alice\": \"9lives\" is not a dataset name"},
		{name: "quoted name", file: "\"alice\" census\n", err: "line 1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := service.ParseAuthz(strings.NewReader(tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, id := range a.Clients() {
				g, _ := a.Grant(id)
				if g.All {
					got[id] = []string{"*"}
					continue
				}
				for d := range g.Datasets {
					got[id] = append(got[id], d)
				}
				sortStrings(got[id])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestGrantAllows(t *testing.T) {
	a, err := service.ParseAuthz(strings.NewReader("alice tab\nops *\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, ds string
		want   bool
	}{{"alice", "tab", true}, {"alice", "other", false}, {"alice", "Tab", false}, {"ops", "tab", true}, {"ops", "anything", true}} {
		g, ok := a.Grant(tc.id)
		if !ok || g.Allows(tc.ds) != tc.want {
			t.Errorf("%s on %s: listed %v, allowed %v; want %v", tc.id, tc.ds, ok, g.Allows(tc.ds), tc.want)
		}
	}
	if _, ok := a.Grant("carol"); ok {
		t.Error("an unlisted client has a grant")
	}
}

// authzFixture is a fixture serving "tab" and "other" with an authz file
// granting alice "tab" and bob "other"; carol's certificate is signed by
// the same CA but she is not listed. It returns the three clients.
func authzFixture(t *testing.T) (f *fixture, alice, bob, carol *client.Client) {
	t.Helper()
	f = newFixture(t)
	r := rand.New(rand.NewPCG(3, 4))
	tab := &dataset.Table{Rows: 100, Columns: []string{"x1", "x2", "x3"}}
	for range 100 * 3 {
		tab.X = append(tab.X, 0.3*r.NormFloat64())
	}
	if _, err := f.st.Register(context.Background(), ledger.Registration{Name: "other", Table: tab, Budget: accounting.Budget{Eps: 2, Delta: 1e-5},
		Accountant: accounting.ModeZCDP, Clip: 1, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	a, err := service.ParseAuthz(strings.NewReader("alice tab\nbob other\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.stop()
	f.authz = a
	f.start("127.0.0.1:0")
	dirs := t.TempDir()
	var cs []*client.Client
	for _, name := range []string{"alice", "bob", "carol"} {
		dir := filepath.Join(dirs, name)
		if err := tlsdir.Issue(f.tls, name, dir); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, f.clientFrom(dir, 10*time.Second))
	}
	return f, cs[0], cs[1], cs[2]
}

func (f *fixture) chargesOf(ds string) int {
	f.t.Helper()
	s, err := f.st.Status(ds)
	if err != nil {
		f.t.Fatal(err)
	}
	return s.Charges
}

// refused reports whether err is the client's error for an authz refusal
// naming want (a client identity and a dataset).
func refused(err error, want ...string) bool {
	if !isName(err, "ProviderFailed") || !strings.Contains(err.Error(), "refused this client") {
		return false
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			return false
		}
	}
	return true
}

// TestAuthzRPCs: with an authz file, every RPC refuses an unlisted client
// and a dataset not granted, naming both, before anything is planned or
// charged; a granted client's calls run; Describe lists only the granted
// datasets.
func TestAuthzRPCs(t *testing.T) {
	f, alice, bob, carol := authzFixture(t)
	ctx := context.Background()

	if got, err := alice.Datasets(ctx); err != nil || !reflect.DeepEqual(got, []string{"tab"}) {
		t.Errorf("alice's datasets: %v, %v", got, err)
	}
	if got, err := bob.Datasets(ctx); err != nil || !reflect.DeepEqual(got, []string{"other"}) {
		t.Errorf("bob's datasets: %v, %v", got, err)
	}
	if _, err := carol.Datasets(ctx); !refused(err, `"carol"`, "not listed") {
		t.Errorf("carol's datasets: %v", err)
	}

	count := call(t, "private_count", "tab", map[string]any{"eps": 0.1})
	pca := fedCall(t, f, "fed-authz")
	for _, tc := range []struct {
		who  string
		c    *client.Client
		want []string
	}{
		{"bob (tab not granted)", bob, []string{`client "bob" may not use dataset "tab"`, "nothing was planned or charged"}},
		{"carol (not listed)", carol, []string{`client "carol" is not listed`}},
	} {
		if _, err := tc.c.Describe(ctx, "tab"); !refused(err, tc.want...) {
			t.Errorf("%s: Describe: %v", tc.who, err)
		}
		if _, err := tc.c.Describe(ctx, "no-such"); !refused(err) {
			t.Errorf("%s: Describe of an unknown dataset: %v (must not tell it apart from an ungranted one)", tc.who, err)
		}
		if _, err := tc.c.Plan(count); !refused(err, tc.want...) {
			t.Errorf("%s: Plan: %v", tc.who, err)
		}
		if _, err := tc.c.DryRun(ctx, count, nil); !refused(err, tc.want...) {
			t.Errorf("%s: DryRun: %v", tc.who, err)
		}
		g := &gate{}
		if _, err := tc.c.Execute(ctx, count, g); !refused(err, tc.want...) {
			t.Errorf("%s: Execute: %v", tc.who, err)
		}
		if g.commits+g.aborts != 0 {
			t.Errorf("%s: a refused call reached the gate", tc.who)
		}
		if _, err := tc.c.FedOpen(ctx, pca); !refused(err, tc.want...) {
			t.Errorf("%s: FedOpen: %v", tc.who, err)
		}
		if _, err := tc.c.FedRound(ctx, pca, federated.PCARequest{Round: 0, Step: federated.StepDiag}); !refused(err, tc.want...) {
			t.Errorf("%s: FedRound: %v", tc.who, err)
		}
	}
	if n := f.chargesOf("tab"); n != 0 {
		t.Fatalf("%d charges on tab after refusals", n)
	}

	// The granted client runs as without an authz file.
	if _, err := alice.Describe(ctx, "tab"); err != nil {
		t.Errorf("alice: Describe: %v", err)
	}
	count.ID = "alice-1"
	rel, err := alice.Execute(ctx, count, nil)
	if err != nil || rel.Receipt.Dataset != "tab" {
		t.Fatalf("alice: Execute: %v", err)
	}
	if _, err := alice.FedOpen(ctx, pca); err != nil {
		t.Fatalf("alice: FedOpen: %v", err)
	}
	if _, err := alice.FedRound(ctx, pca, federated.PCARequest{Round: 0, Step: federated.StepDiag}); err != nil {
		t.Fatalf("alice: FedRound: %v", err)
	}
	if _, err := alice.Execute(ctx, call(t, "private_count", "other", map[string]any{"eps": 0.1}), nil); !refused(err, `"alice"`, `"other"`) {
		t.Errorf("alice on other: %v", err)
	}
	if n := f.chargesOf("tab"); n != 2 {
		t.Errorf("%d charges on tab, want alice's 2", n)
	}

	// A call id names the call it continues: bob cannot fetch alice's
	// kept release, or a round of her federated call, by sending its id
	// with a dataset granted to him; the refusal does not name the
	// dataset of alice's call (it would tell that the call exists).
	steal := call(t, "private_count", "other", map[string]any{"eps": 0.1})
	steal.ID = "alice-1"
	if _, err := bob.Execute(ctx, steal, nil); !notYours(err) || strings.Contains(err.Error(), `"tab"`) {
		t.Errorf("bob replaying alice's call id: %v", err)
	}
	stealRound := pca
	stealRound.Dataset.Name = "other"
	if _, err := bob.FedRound(ctx, stealRound, federated.PCARequest{Round: 0, Step: federated.StepDiag}); !notYours(err) || strings.Contains(err.Error(), `"tab"`) {
		t.Errorf("bob asking a round of alice's federated call: %v", err)
	}
	if n := f.chargesOf("other"); n != 0 {
		t.Errorf("%d charges on other", n)
	}
}

// TestNoAuthzTrustsTheCA: without an authz file, any client the CA signed
// may use every dataset, and Describe lists them all.
func TestNoAuthzTrustsTheCA(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "carol")
	if err := tlsdir.Issue(f.tls, "carol", dir); err != nil {
		t.Fatal(err)
	}
	carol := f.clientFrom(dir, 10*time.Second)
	if got, err := carol.Datasets(context.Background()); err != nil || !reflect.DeepEqual(got, []string{"tab"}) {
		t.Errorf("datasets: %v, %v", got, err)
	}
	if _, err := carol.Execute(context.Background(), call(t, "private_count", "tab", map[string]any{"eps": 0.1}), nil); err != nil {
		t.Errorf("carol without an authz file: %v", err)
	}
}

func TestIssueNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	if err := tlsdir.Init(dir, []string{"127.0.0.1"}, "first"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "clients", "alice")
	if err := tlsdir.Issue(dir, "alice", out); err != nil {
		t.Fatal(err)
	}
	if err := tlsdir.Issue(dir, "alice2", out); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second issue into the same directory: %v", err)
	}
	if err := tlsdir.Issue(dir, "has space", filepath.Join(dir, "x")); err == nil {
		t.Error("a name with a space was issued")
	}
	cfg, err := tlsdir.Client(out)
	if err != nil {
		t.Fatal(err)
	}
	if cn := leafCN(t, cfg.Certificates[0].Certificate[0]); cn != "alice" {
		t.Errorf("issued common name %q", cn)
	}
}

func leafCN(t *testing.T, der []byte) string {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c.Subject.CommonName
}
