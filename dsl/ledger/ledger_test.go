package ledger

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// childEnv selects a child-process role for the crash and race tests: the
// test binary re-executes itself with it set.
const childEnv = "PRIVNOTES_LEDGER_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "charge-then-hang":
		childChargeThenHang()
	case "race":
		childRace()
	case "live-writer":
		childLiveWriter() // live_test.go
	default:
		fmt.Fprintln(os.Stderr, "unknown child role")
		os.Exit(1)
	}
}

// childChargeThenHang charges, reports the receipt, then "runs the
// mechanism" forever: the parent kills it with SIGKILL.
func childChargeThenHang() {
	st, err := Open(os.Getenv(EnvState))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	r, err := st.Charge(context.Background(), "crash", withMech(accounting.Pure(0.25), "test/crash"), ChargeMeta{Cell: "child", Params: map[string]int{"k": 1}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("charged %d\n", r.ID)
	for {
		time.Sleep(time.Hour)
	}
}

// childRace waits for a byte on stdin, then tries to spend ε=0.5 on the
// dataset named by PRIVNOTES_RACE_DATASET. Exit 0: charged; 3: refused.
func childRace() {
	st, err := Open(os.Getenv(EnvState))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	var b [1]byte
	os.Stdin.Read(b[:])
	_, err = st.Charge(context.Background(), os.Getenv("PRIVNOTES_RACE_DATASET"), withMech(accounting.Pure(0.5), "test/race"), ChargeMeta{Cell: "race"})
	switch {
	case err == nil:
		os.Exit(0)
	case errors.Is(err, accounting.ErrBudgetExceeded):
		os.Exit(3)
	}
	fmt.Println("error", err)
	os.Exit(1)
}

func withMech(e accounting.Event, m string) accounting.Event {
	e.Mechanism = m
	return e
}

func tinyTable(t testing.TB) *dataset.Table {
	t.Helper()
	tab, err := dataset.Read(strings.NewReader("a,b\n1,2\n3,4\n-1,0.5\n"), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func register(t testing.TB, st *Store, name string, mode accounting.Mode, b accounting.Budget) {
	t.Helper()
	_, err := st.Register(context.Background(), Registration{Name: name, Table: tinyTable(t), Budget: b, Accountant: mode, Clip: 1, Source: "test"})
	if err != nil {
		t.Fatalf("Register(%s): %v", name, err)
	}
}

func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

func TestStateDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv(EnvState, filepath.Join(tmp, "env"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(tmp, "xdg"))
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	tests := []struct {
		flag, env, xdg, want string
	}{
		{"flagdir", "x", "y", "flagdir"},
		{"", filepath.Join(tmp, "env"), "y", filepath.Join(tmp, "env")},
		{"", "", filepath.Join(tmp, "xdg"), filepath.Join(tmp, "xdg", "privnotes")},
		{"", "", "", filepath.Join(tmp, "home", ".local", "share", "privnotes")},
	}
	for _, tc := range tests {
		t.Setenv(EnvState, tc.env)
		t.Setenv("XDG_DATA_HOME", tc.xdg)
		flag := tc.flag
		if flag != "" {
			flag = filepath.Join(tmp, flag)
			tc.want = flag
		}
		got, err := StateDir(flag)
		if err != nil || got != tc.want {
			t.Errorf("StateDir(%q) with env %q xdg %q = %q, %v; want %q", flag, tc.env, tc.xdg, got, err, tc.want)
		}
		if fi, err := os.Stat(got); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("state dir %s not created with mode 0700: %v %v", got, fi, err)
		}
	}
}

func TestRegisterLoadAndSchema(t *testing.T) {
	st, dir := openTemp(t)
	tab, err := dataset.Read(strings.NewReader("user,x,y,label\nu1,1,2,0.5\nu2,3,4,1\nu1,5,6,-1\n"),
		dataset.Options{Unit: "user:user", Label: "label", Center: "public-mean", Mean: []float64{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Register(context.Background(), Registration{Name: "users", Table: tab, Budget: accounting.Budget{Eps: 2, Delta: 1e-6},
		Accountant: accounting.ModeZCDP, Neighbour: accounting.AddRemove, Clip: 3, LabelClip: 1, Source: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 3 || info.Users != 2 {
		t.Errorf("owner info = %+v", info)
	}
	sc, err := st.Schema("users")
	if err != nil {
		t.Fatal(err)
	}
	want := Schema{Name: "users", Columns: []string{"x", "y"}, D: 2, Clip: 3, Unit: "user", UserColumn: "user", Label: "label", LabelClip: 1,
		Center: "public-mean", Mean: []float64{1, 1}, Neighbour: "add-remove", Accountant: "zcdp", Budget: accounting.Budget{Eps: 2, Delta: 1e-6}, BadRows: "reject"}
	if fmt.Sprint(sc) != fmt.Sprint(want) {
		t.Errorf("schema = %+v\nwant     %+v", sc, want)
	}
	// The public schema carries no row count, in any form.
	js, _ := json.Marshal(sc)
	var keys map[string]any
	json.Unmarshal(js, &keys)
	for k := range keys {
		switch k {
		case "name", "columns", "d", "clip", "unit", "user_column", "label", "label_clip", "center", "mean", "neighbour", "accountant", "budget", "bad_rows":
		default:
			t.Errorf("public schema has an unexpected field %q", k)
		}
	}
	// Reopen: the data survive, centred by the public mean.
	st.Close()
	st2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	d, err := st2.Load("users")
	if err != nil {
		t.Fatal(err)
	}
	r, c := d.X.Dims()
	if r != 3 || c != 2 || d.X.At(0, 0) != 0 || d.X.At(2, 1) != 5 || d.NumUsers != 2 ||
		fmt.Sprint(d.Users) != "[0 1 0]" || fmt.Sprint(d.Y) != "[0.5 1 -1]" {
		t.Errorf("loaded %v users %v y %v", d.X.RawMatrix().Data, d.Users, d.Y)
	}
	if _, err := st2.Load("nope"); !errors.Is(err, ErrNoDataset) {
		t.Errorf("Load(nope) = %v, want ErrNoDataset", err)
	}
}

// Load hands on the registration hash it checked the data against: the
// same for every load of one registration, different for another
// registration of the same rows (a new salt) and for other rows. A memory
// table cache keys by it (dsl/release), so its changing with the content
// is what keeps that cache from going stale.
func TestLoadHash(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "a", accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	register(t, st, "b", accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	other, err := dataset.Read(strings.NewReader("a,b\n1,2\n3,4\n-1,0.25\n"), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Register(context.Background(), Registration{Name: "c", Table: other, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Clip: 1}); err != nil {
		t.Fatal(err)
	}
	hash := func(name string) string {
		t.Helper()
		d, err := st.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Hash) != 64 {
			t.Fatalf("%s: hash %q, want 64 hex digits", name, d.Hash)
		}
		return d.Hash
	}
	a := hash("a")
	if again := hash("a"); again != a {
		t.Errorf("two loads of one registration: %s, %s", a, again)
	}
	if b := hash("b"); b == a {
		t.Errorf("another registration of the same rows has the same hash %s", b)
	}
	if c := hash("c"); c == a {
		t.Errorf("other rows have the same hash %s", c)
	}
}

func TestLoadManyChunks(t *testing.T) {
	st, _ := openTemp(t)
	var b strings.Builder
	n := 2*chunkRows + 17
	for i := range n {
		fmt.Fprintf(&b, "%d,%d\n", i, -i)
	}
	tab, err := dataset.Read(strings.NewReader(b.String()), dataset.Options{Header: "no"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Register(context.Background(), Registration{Name: "big", Table: tab, Budget: accounting.Budget{Eps: 1}, Accountant: accounting.ModeBasic, Clip: 1}); err != nil {
		t.Fatal(err)
	}
	d, err := st.Load("big")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := d.X.Dims(); r != n || d.X.At(n-1, 0) != float64(n-1) || d.X.At(chunkRows, 1) != -chunkRows {
		t.Errorf("rows %d, last %v", r, d.X.At(n-1, 0))
	}
}

func TestRegisterRefusals(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	tab := tinyTable(t)
	tests := []struct {
		name string
		reg  Registration
		want string
	}{
		{"duplicate", Registration{Name: "d", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Clip: 1}, `dataset "d" is already registered; registrations are final`},
		{"bad name", Registration{Name: "1x; drop", Table: tab, Budget: accounting.Budget{Eps: 1}, Clip: 1}, "dataset name"},
		{"zero eps", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 0}, Clip: 1}, "ε must be a finite number > 0"},
		{"inf eps", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: math.Inf(1)}, Clip: 1}, "ε must be a finite number > 0"},
		{"delta one", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1}, Clip: 1}, "δ must be in [0, 1)"},
		{"negative clip", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1}, Clip: -1}, "clip norm must be a finite number > 0"},
		{"zcdp without delta", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1}, Clip: 1}, "zcdp accountant needs δ > 0"},
		{"bounds of no column", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Clip: 1, Accountant: accounting.ModeZCDP,
			Bounds: map[string][2]float64{"nope": {0, 1}}}, `the data have no numeric column "nope"`},
		{"empty bounds", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Clip: 1, Accountant: accounting.ModeZCDP,
			Bounds: map[string][2]float64{tab.Columns[0]: {2, 2}}}, "lo < hi"},
		{"infinite bounds", Registration{Name: "e", Table: tab, Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Clip: 1, Accountant: accounting.ModeZCDP,
			Bounds: map[string][2]float64{tab.Columns[0]: {0, math.Inf(1)}}}, "finite bounds"},
	}
	for _, tc := range tests {
		_, err := st.Register(context.Background(), tc.reg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Register = %v, want %q", tc.name, err, tc.want)
		}
	}
	// the refused registrations left nothing behind
	all, err := st.Datasets()
	if err != nil || len(all) != 1 {
		t.Errorf("datasets after refusals = %v, %v", all, err)
	}
}

func TestChargeUntilExceeded(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1, Delta: 1e-6})
	ctx := context.Background()
	for i := range 3 {
		r, err := st.Charge(ctx, "d", withMech(accounting.Pure(0.25), "test/count"), ChargeMeta{Cell: fmt.Sprintf("cell[%d]", i), Params: map[string]any{"k": 3}})
		if err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
		if want := 0.25 * float64(i+1); math.Abs(r.Spent.Eps-want) > 1e-12 || math.Abs(r.Remaining.Eps-(1-want)) > 1e-12 {
			t.Errorf("receipt %d: spent %v remaining %v", i, r.Spent, r.Remaining)
		}
	}
	// Precheck does not write.
	if err := st.Precheck("d", accounting.Pure(0.25)); err != nil {
		t.Errorf("Precheck of the last 0.25: %v", err)
	}
	err := st.Precheck("d", accounting.Pure(0.3))
	var ex *accounting.ExceededError
	if !errors.As(err, &ex) {
		t.Fatalf("Precheck over budget = %v", err)
	}
	_, err = st.Charge(ctx, "d", withMech(accounting.Pure(0.5), "test/count"), ChargeMeta{Cell: "over"})
	if !errors.As(err, &ex) || !errors.Is(err, accounting.ErrBudgetExceeded) {
		t.Fatalf("over-budget charge = %v, want *ExceededError", err)
	}
	if ex.Requested.Eps != 0.5 || math.Abs(ex.Spent.Eps-0.75) > 1e-12 || math.Abs(ex.Remaining.Eps-0.25) > 1e-12 || ex.Budget.Eps != 1 {
		t.Errorf("refusal = %+v", ex)
	}
	s, err := st.Status("d")
	if err != nil || s.Charges != 3 || math.Abs(s.Spent.Eps-0.75) > 1e-12 {
		t.Errorf("status = %+v, %v", s, err)
	}
	if rem, err := st.Remaining("d"); err != nil || math.Abs(rem.Eps-0.25) > 1e-12 {
		t.Errorf("Remaining = %v, %v", rem, err)
	}
	if _, err := st.Charge(ctx, "d", withMech(accounting.Pure(0.25), "test/count"), ChargeMeta{}); err != nil {
		t.Errorf("the last 0.25: %v", err)
	}
	es, err := st.Entries("d")
	if err != nil || len(es) != 5 || es[0].Kind != "register" || es[1].Event == nil || es[1].Event.Eps != 0.25 || es[1].Cell != "cell[0]" || string(es[1].Params) != `{"k":3}` {
		t.Errorf("entries = %+v, %v", es, err)
	}
	if err := st.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}
	// bad inputs
	if _, err := st.Charge(ctx, "nope", withMech(accounting.Pure(0.1), "m"), ChargeMeta{}); !errors.Is(err, ErrNoDataset) {
		t.Errorf("charge to unknown dataset = %v", err)
	}
	if _, err := st.Charge(ctx, "d", accounting.Pure(0.1), ChargeMeta{}); err == nil {
		t.Error("charge without a mechanism name accepted")
	}
	if _, err := st.Charge(ctx, "d", withMech(accounting.Pure(-1), "m"), ChargeMeta{}); err == nil {
		t.Error("negative ε accepted")
	}
}

func TestZCDPCharges(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "z", accounting.ModeZCDP, accounting.Budget{Eps: 1, Delta: 1e-6})
	ctx := context.Background()
	ev := withMech(accounting.ZcdpFor(0.5, 1e-7), "test/gauss")
	n := 0
	for ; n < 100; n++ {
		if _, err := st.Charge(ctx, "z", ev, ChargeMeta{}); err != nil {
			if !errors.Is(err, accounting.ErrBudgetExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	// zCDP composes tighter than the sum of ε: more than two (0.5, 1e-7)
	// Gaussian charges fit in ε=1, and the chain still verifies.
	if n <= 2 || n >= 100 {
		t.Errorf("%d zCDP charges of ε=0.5 fit in ε=1", n)
	}
	s, _ := st.Status("z")
	if s.Spent.Eps > 1+1e-9 {
		t.Errorf("spent %v exceeds the budget", s.Spent)
	}
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

func TestAppendOnlyAndTamper(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10})
	ctx := context.Background()
	for range 3 {
		if _, err := st.Charge(ctx, "d", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`UPDATE ledger SET cell = 'x' WHERE id = 2`, `DELETE FROM ledger WHERE id = 4`,
		`UPDATE datasets SET eps = 100`, `DELETE FROM data_chunks`} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s succeeded on an append-only table", q)
		}
	}
	// Someone with the file drops the triggers and edits a record:
	// Verify names the first altered record.
	if _, err := db.Exec(`DROP TRIGGER ledger_append_only_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE ledger SET event = replace(event, '1', '0.001') WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != 3 || !strings.Contains(ce.Reason, "hash") {
		t.Errorf("Verify after tampering = %v, want record 3", err)
	}
	// Raising a budget behind the ledger's back is caught too.
	if _, err := db.Exec(`UPDATE ledger SET event = (SELECT event FROM ledger WHERE id = 2) WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DROP TRIGGER datasets_immutable_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE datasets SET schema = replace(schema, '"Eps":10', '"Eps":100')`); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != 1 || !strings.Contains(ce.Reason, "differ from its registration") {
		t.Errorf("Verify after a budget raise = %v, want record 1", err)
	}
}

func TestDataTamperAndSalt(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "a", accounting.ModeBasic, accounting.Budget{Eps: 1})
	register(t, st, "b", accounting.ModeBasic, accounting.Budget{Eps: 1})
	ia, _ := st.OwnerInfo("a")
	ib, _ := st.OwnerInfo("b")
	if ia.DataHash == ib.DataHash {
		t.Error("the same data registered twice has the same hash: the hash is not salted")
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TRIGGER data_immutable_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE data_chunks SET x = ? WHERE dataset = 'b'`, floatBytes([]float64{9, 9, 9, 9, 9, 9})); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load("b"); err == nil || !strings.Contains(err.Error(), "does not match its registration hash") {
		t.Errorf("Load of altered data = %v", err)
	}
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != 2 {
		t.Errorf("Verify of altered data = %v, want record 2", err)
	}
}

func TestExport(t *testing.T) {
	st, _ := openTemp(t)
	var b strings.Builder
	if err := st.Export(&b, true); err != nil || !strings.Contains(b.String(), `"records": []`) {
		t.Errorf("empty export = %q, %v", b.String(), err)
	}
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 10, Delta: 1e-6})
	if _, err := st.Charge(context.Background(), "d", withMech(accounting.Approx(1, 1e-9), "pca/gauss"), ChargeMeta{Cell: "c1", Params: map[string]string{"method": "gauss"}}); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := st.Export(&b, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema_version": 4`, `"kind": "register"`, `"mechanism": "pca/gauss"`, `"method": "gauss"`, `"Kind": "approx"`, `"prev_hash"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON export lacks %s:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := st.Export(&b, false); err != nil || !strings.Contains(b.String(), "approx ε=1, δ=1e-09") || !strings.Contains(b.String(), "pca/gauss") {
		t.Errorf("text export = %q, %v", b.String(), err)
	}
}

// TestCrashAfterCharge kills (SIGKILL) a process right after its charge
// committed, while it "runs the mechanism": the charge must be in the
// ledger and the chain must verify.
func TestCrashAfterCharge(t *testing.T) {
	st, dir := openTemp(t)
	register(t, st, "crash", accounting.ModeBasic, accounting.Budget{Eps: 1})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=charge-then-hang", EnvState+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "charged ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	cmd.Wait()
	st2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	es, err := st2.Entries("crash")
	if err != nil || len(es) != 2 || es[1].Mechanism != "test/crash" || fmt.Sprintf("charged %d\n", es[1].ID) != line {
		t.Fatalf("after the crash: entries %+v, %v (child said %q)", es, err, line)
	}
	if err := st2.Verify(); err != nil {
		t.Errorf("Verify after the crash: %v", err)
	}
	if s, _ := st2.Status("crash"); s.Spent.Eps != 0.25 {
		t.Errorf("spent after the crash = %v, want 0.25", s.Spent)
	}
}

// TestTwoProcessesRace: two processes try to spend the last ε=0.5 at the
// same moment; exactly one wins, every time.
func TestTwoProcessesRace(t *testing.T) {
	st, dir := openTemp(t)
	const rounds = 3
	for round := range rounds {
		name := fmt.Sprintf("race%d", round)
		register(t, st, name, accounting.ModeBasic, accounting.Budget{Eps: 1})
		if _, err := st.Charge(context.Background(), name, withMech(accounting.Pure(0.5), "test/first"), ChargeMeta{}); err != nil {
			t.Fatal(err)
		}
		var cmds []*exec.Cmd
		var stdins []interface{ Write([]byte) (int, error) }
		for range 2 {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=race", EnvState+"="+dir, "PRIVNOTES_RACE_DATASET="+name)
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("child: %q %v", line, err)
			}
			cmds = append(cmds, cmd)
			stdins = append(stdins, in)
		}
		for _, in := range stdins {
			in.Write([]byte{1})
		}
		wins, refusals := 0, 0
		for _, cmd := range cmds {
			err := cmd.Wait()
			var ee *exec.ExitError
			switch {
			case err == nil:
				wins++
			case errors.As(err, &ee) && ee.ExitCode() == 3:
				refusals++
			default:
				t.Errorf("child failed: %v", err)
			}
		}
		if wins != 1 || refusals != 1 {
			t.Errorf("round %d: %d wins, %d refusals; want exactly one of each", round, wins, refusals)
		}
		if s, err := st.Status(name); err != nil || s.Spent.Eps != 1 || s.Charges != 2 {
			t.Errorf("round %d: status %+v, %v", round, s, err)
		}
	}
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

// TestConcurrentGoroutines: many goroutines of one process charge at once;
// exactly budget/cost of them succeed.
func TestConcurrentGoroutines(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "g", accounting.ModeBasic, accounting.Budget{Eps: 1})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Charge(context.Background(), "g", withMech(accounting.Pure(0.125), "test/goroutine"), ChargeMeta{Cell: fmt.Sprint(i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, accounting.ErrBudgetExceeded):
				refused++
			default:
				t.Errorf("charge: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 8 || refused != 16 {
		t.Errorf("%d charges succeeded and %d were refused; want 8 and 16", ok, refused)
	}
	if s, _ := st.Status("g"); s.Spent.Eps != 1 {
		t.Errorf("spent %v", s.Spent)
	}
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

func TestSchemaVersionMismatch(t *testing.T) {
	st, dir := openTemp(t)
	st.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Errorf("Open with a newer schema = %v", err)
	}
}

func TestBreastCancer(t *testing.T) {
	f, err := os.Open("testdata/breast_cancer.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := dataset.Read(f, dataset.Options{Columns: []string{"1-30"}})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Rows != 569 || len(tab.Columns) != 30 || tab.X[0] != 17.99 || tab.X[30] != 20.57 {
		t.Errorf("breast cancer: %d rows, %d columns, first values %v %v", tab.Rows, len(tab.Columns), tab.X[0], tab.X[30])
	}
}

// BenchmarkCharge measures a durable charge (BEGIN IMMEDIATE, resume from
// the stored totals, insert, fsync'd commit) against Precheck (the same
// resume, no write) as the baseline. The ledger grows during the run, as in
// a long session; neither should slow down with it.
func BenchmarkCharge(b *testing.B) {
	st, _ := openTemp(b)
	register(b, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1e12})
	ev := withMech(accounting.Pure(1e-3), "bench")
	b.Run("charge", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Charge(context.Background(), "d", ev, ChargeMeta{Cell: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("precheck", func(b *testing.B) {
		for b.Loop() {
			if err := st.Precheck("d", ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestOpenExisting: read-only commands open with OpenExisting, which must
// report a directory without state (a typo in --state) and create nothing.
func TestOpenExisting(t *testing.T) {
	tmp := t.TempDir()
	typo := filepath.Join(tmp, "typo")
	tests := []struct {
		name, dir string
	}{
		{"missing directory", typo},
		{"empty directory", tmp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := OpenExisting(tc.dir)
			if err == nil {
				st.Close()
				t.Fatal("OpenExisting succeeded on a directory without state")
			}
			if !errors.Is(err, ErrNoState) || !strings.Contains(err.Error(), tc.dir) {
				t.Errorf("error %q: want ErrNoState naming %s", err, tc.dir)
			}
		})
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenExisting created %s (stat: %v)", typo, err)
	}
	// the database vanishing between the check and the open
	if st, err := open(tmp, true); err == nil {
		st.Close()
		t.Error("open(mustExist) created a database")
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("OpenExisting created files in %s: %v", tmp, ents)
	}

	st, dir := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1, Delta: 1e-6})
	ro, err := OpenExisting(dir)
	if err != nil {
		t.Fatalf("OpenExisting on a state directory: %v", err)
	}
	defer ro.Close()
	if ds, err := ro.Datasets(); err != nil || len(ds) != 1 || ds[0].Name != "d" {
		t.Errorf("Datasets through OpenExisting = %v, %v", ds, err)
	}
}

func TestResolveStateDirCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	got, err := ResolveStateDir(dir)
	if err != nil || got != dir {
		t.Fatalf("ResolveStateDir(%q) = %q, %v", dir, got, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ResolveStateDir created %s", dir)
	}
}
