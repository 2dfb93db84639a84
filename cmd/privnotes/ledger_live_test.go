package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/runtime"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// discard is a cell's output stream that keeps nothing.
type discard struct{}

func (discard) Stream(string, string)  {}
func (discard) Display(engine.Display) {}
func (discard) ClearOutput(bool)       {}

// executedNotebook runs code as cell 1 of a session on state and writes
// the notebook a front end would save (its result as an execute_result,
// with the receipt in its metadata) to path.
func executedNotebook(t *testing.T, state, path, code string) {
	t.Helper()
	rt, err := runtime.New(runtime.Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	eng, err := interp.New(interp.Config{StateDir: state, Plugin: rt})
	if err != nil {
		t.Fatal(err)
	}
	res := eng.Execute(context.Background(), engine.ExecuteRequest{Code: code, CellID: "c1", ExecutionCount: 1}, discard{})
	if res.Error != nil || res.Value == nil {
		t.Fatalf("cell: %+v", res.Error)
	}
	out := map[string]any{"output_type": "execute_result", "execution_count": 1, "data": res.Value.Data, "metadata": res.Value.Metadata}
	nb := map[string]any{"cells": []any{map[string]any{"cell_type": "code", "id": "c1", "execution_count": 1, "source": code, "outputs": []any{out}}}}
	b, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// liveGap is each writer's pause between steps: the ledger stays small
// enough for thirty rounds of the audit commands in a few seconds, while
// six writers still commit during each command.
const liveGap = 60 * time.Millisecond

var (
	showRow  = regexp.MustCompile(`(?m)^(\d+) `)
	showHead = regexp.MustCompile(`(?m)^head: record (\d+), hash ([0-9a-f]{64})$`)
	verifyOK = regexp.MustCompile(`^ledger OK: (\d+) records, head hash ([0-9a-f]{64}) \(covers the (\d+) stored release`)
)

// stated is what an audit command said about the ledger: its head and,
// for ledger show, the records it listed, for ledger verify, how many
// stored releases the head covers. The chain is append-only, so once the
// writers stop, the final chain's first head records are the ledger the
// command saw, and must be exactly what it said.
type stated struct {
	round  int
	what   string
	head   int64
	hash   string
	listed []int64 // ledger show
	sealed int     // ledger verify
}

// TestAuditCommandsOnALiveLedger attacks the audit commands as the review
// did: while two `privnotes run` processes and four goroutines (each with
// its own connection pool) charge and seal on a state directory, `ledger
// verify`, `ledger export --json` and `--csv`, `ledger show` and
// `notebook verify --state` run again and again. None may report
// tampering that is not there; every export must verify on its own; ledger
// show's table and head must agree; the
// notebook's receipt must verify every time.
func TestAuditCommandsOnALiveLedger(t *testing.T) {
	testtier.Long(t) // concurrent writers for a few seconds
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	st, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tab, err := dataset.Read(strings.NewReader("a,b\n1,2\n3,4\n5,6\n"), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Register(context.Background(), ledger.Registration{Name: "d", Table: tab, Budget: accounting.Budget{Eps: 1e6},
		Accountant: accounting.ModeBasic, Clip: 10, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	nb := filepath.Join(dir, "shared.ipynb")
	executedNotebook(t, state, nb, "c := private_count(dataset(\"d\"), eps=0.5, name=\"first\")\nc")

	// Writer processes: the privnotes binary (this test binary as one)
	// running a script that charges and seals until it is killed.
	var procs []*exec.Cmd
	for p := range 2 {
		script := filepath.Join(dir, fmt.Sprintf("w%d.pn", p))
		code := fmt.Sprintf("for i := 0; i < 1000000; i++ {\n\tc := private_count(dataset(\"d\"), eps=0.001, name=fmt.Sprintf(\"p%d-%%d\", i))\n\t_ = c\n\ttime.Sleep(%d * time.Millisecond)\n}\n", p, liveGap.Milliseconds())
		if err := os.WriteFile(script, []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "run", "--state", state, script)
		cmd.Env = append(os.Environ(), cellChildEnv+"=1")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
			if s := errb.String(); s != "" && !strings.Contains(s, "signal: killed") {
				t.Logf("writer process %d: %s", p, s)
			}
		})
	}
	// Writer goroutines: the ledger API, as a server's sessions use it.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	werrs := make(chan error, 4)
	for g := range 4 {
		w, err := ledger.Open(state)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				rc, err := w.Charge(ctx, "d", accounting.Event{Kind: accounting.PureDP, Eps: 0.001, Mechanism: "test/live"},
					ledger.ChargeMeta{Cell: "live", Release: &ledger.ReleaseMeta{Name: fmt.Sprintf("g%d-%d", g, i), Call: `{}`}})
				if err == nil {
					_, err = w.SealRelease(ctx, rc.ID, []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))
				}
				if err != nil && ctx.Err() == nil {
					werrs <- fmt.Errorf("writer goroutine %d: %w", g, err)
					return
				}
				time.Sleep(liveGap)
			}
		})
	}
	stopWriters := func() {
		stop()
		wg.Wait()
		for _, cmd := range procs {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}
	}
	defer stopWriters()

	head := func() int64 {
		id, _, err := st.Head()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	start := head()
	const rounds = 30
	var failures []string
	var says []stated
	fail := func(round int, format string, args ...any) {
		failures = append(failures, fmt.Sprintf("round %d: ", round)+fmt.Sprintf(format, args...))
	}
	deadline := time.Now().Add(30 * time.Second)
	round := 0
	for ; (round < rounds || head()-start < 2*rounds) && time.Now().Before(deadline); round++ {
		if code, out, errs := runCLI("ledger", "verify", "--state", state); code != 0 || !verifyOK.MatchString(out) {
			fail(round, "ledger verify: status %d: %s%s", code, out, errs)
		} else {
			m := verifyOK.FindStringSubmatch(out)
			head, _ := strconv.ParseInt(m[1], 10, 64)
			sealed, _ := strconv.Atoi(m[3])
			says = append(says, stated{round: round, what: "ledger verify", head: head, hash: m[2], sealed: sealed})
		}
		if code, out, errs := runCLI("ledger", "export", "--json", "--state", state); code != 0 {
			fail(round, "ledger export --json: status %d: %s", code, errs)
		} else if doc, err := ledger.ReadExport(strings.NewReader(out)); err != nil {
			fail(round, "ledger export --json: %v", err)
		} else if _, err := ledger.VerifyExport(doc); err != nil {
			fail(round, "the document of ledger export --json (head %d) does not verify: %v", doc.HeadID, err)
		}
		if code, out, errs := runCLI("ledger", "export", "--csv", "--state", state); code != 0 {
			fail(round, "ledger export --csv: status %d: %s", code, errs)
		} else if recs, err := csv.NewReader(strings.NewReader(out)).ReadAll(); err != nil || len(recs) < 2 {
			fail(round, "ledger export --csv: %d rows, %v", len(recs), err)
		} else {
			last := int64(0)
			for _, r := range recs[1:] {
				id, err := strconv.ParseInt(r[0], 10, 64)
				if err != nil || id <= last {
					fail(round, "ledger export --csv: row id %q after %d", r[0], last)
					break
				}
				last = id
			}
		}
		if code, out, errs := runCLI("ledger", "show", "--state", state); code != 0 {
			fail(round, "ledger show: status %d: %s", code, errs)
		} else if m := showHead.FindStringSubmatch(out); m == nil {
			fail(round, "ledger show states no head:\n%s", out)
		} else {
			head, _ := strconv.ParseInt(m[1], 10, 64)
			say := stated{round: round, what: "ledger show", head: head, hash: m[2], listed: []int64{}}
			for _, r := range showRow.FindAllStringSubmatch(out, -1) {
				id, _ := strconv.ParseInt(r[1], 10, 64)
				say.listed = append(say.listed, id)
			}
			says = append(says, say)
		}
		if code, out, errs := runCLI("notebook", "verify", nb, "--state", state); code != 0 || !strings.Contains(out, "verified: 1 output(s)") {
			fail(round, "notebook verify --state: status %d: %s%s", code, out, errs)
		}
	}
	written := head() - start
	stopWriters()
	close(werrs)
	for err := range werrs {
		t.Error(err)
	}
	if written < 2*rounds {
		t.Errorf("the chain grew by %d records during %d rounds of audits; the writers were too slow to test anything", written, round)
	}
	// What ledger show and ledger verify said is the ledger up to the head
	// they stated: the records show listed are the chain's records up to
	// it, seal records included, and the releases verify counted are those
	// sealed up to it.
	doc, err := st.ExportDoc()
	if err != nil {
		t.Fatal(err)
	}
	for _, say := range says {
		if say.head < 1 || say.head > int64(len(doc.Chain)) || doc.Chain[say.head-1].Hash != say.hash {
			fail(say.round, "%s stated head %d, hash %s, which is not a record of the chain", say.what, say.head, say.hash)
			continue
		}
		listed, sealed := []int64{}, 0
		for _, c := range doc.Chain[:say.head] {
			if c.Kind == "seal" {
				sealed++
			}
			listed = append(listed, c.ID) // seal records are rows too
		}
		if say.listed != nil && !slices.Equal(say.listed, listed) {
			fail(say.round, "ledger show listed %d records under head %d, whose chain has %d", len(say.listed), say.head, len(listed))
		}
		if say.what == "ledger verify" && say.sealed != sealed {
			fail(say.round, "ledger verify said head %d covers %d stored releases; up to it, %d were sealed", say.head, say.sealed, sealed)
		}
	}
	t.Logf("%d rounds of 5 audit commands, %d records written meanwhile, %d false reports", round, written, len(failures))
	for _, f := range failures {
		t.Error(f)
	}
	// Quiet again (the writer processes were killed, maybe between a
	// charge and its seal), the ledger verifies.
	if code, out, errs := runCLI("ledger", "verify", "--state", state); code != 0 {
		t.Errorf("ledger verify after the writers stopped: status %d: %s%s", code, out, errs)
	}
}
