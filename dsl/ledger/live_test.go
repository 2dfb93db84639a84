package ledger

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// chainRecords reads the chain's records of dataset name ("": all) in one
// View.
func chainRecords(st *Store, name string) (recs []record, err error) {
	err = st.view(func(v *View) error { recs, err = v.records(name); return err })
	return recs, err
}

// liveWrite is one writer's step on a live ledger, as a server's sessions
// make them: a charge that reserves a named release, then its seal (a
// second transaction, a moment later), and now and then the registration
// of a new dataset. Between the charge and the seal the release row is
// stored unsealed; after the seal the chain holds one more record. An
// audit that reads the chain before a step and the releases, registry or
// totals after it sees a ledger that never existed.
func liveWrite(st *Store, who string, i int) error {
	ctx := context.Background()
	if i%8 == 7 {
		tab, err := liveTable()
		if err != nil {
			return err
		}
		_, err = st.Register(ctx, Registration{Name: fmt.Sprintf("%s-%d", who, i), Table: tab, Budget: accounting.Budget{Eps: 1},
			Accountant: accounting.ModeBasic, Clip: 1, Source: "live"})
		return err
	}
	rc, err := st.Charge(ctx, "live", withMech(accounting.Pure(0.001), "test/live"),
		ChargeMeta{Cell: who, Release: &ReleaseMeta{Name: fmt.Sprintf("%s-%d", who, i), Call: `{}`}})
	if err != nil {
		return err
	}
	_, err = st.SealRelease(ctx, rc.ID, []byte(fmt.Sprintf(`{"who":%q,"i":%d}`, who, i)))
	return err
}

func liveTable() (*dataset.Table, error) {
	return dataset.Read(bytes.NewReader([]byte("a,b\n1,2\n3,4\n")), dataset.Options{})
}

// liveGap is each writer's pause between steps: it keeps the ledger small
// enough for thirty rounds of audits in a few seconds, while six writers
// still commit several records during each audit.
const liveGap = 2 * time.Millisecond

// childLiveWriter is a writer process of TestAuditsOfALiveLedger: it
// writes (liveWrite) until its stdin closes, then prints how many steps
// it made.
func childLiveWriter() {
	st, err := Open(os.Getenv(EnvState))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var stop atomic.Bool
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	fmt.Println("ready")
	who := os.Getenv("PRIVNOTES_LIVE_WRITER")
	i := 0
	for ; !stop.Load(); i++ {
		if err := liveWrite(st, who, i); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		time.Sleep(liveGap)
	}
	fmt.Println("wrote", i)
}

// TestAuditsOfALiveLedger attacks the audits as the review did: writers
// charge, seal and register on one state directory (four goroutines, each
// with its own connection pool, and two processes) while Verify, ExportDoc
// and Export run again and again. Every audit must pass and every export
// must verify on its own: each reads one snapshot, so a write lands wholly
// before or wholly after it. (Audits that read the chain, the releases and
// the totals in separate statements reported tampering here, e.g. "no
// charge record N … for the stored release" or "the seal was deleted".)
func TestAuditsOfALiveLedger(t *testing.T) {
	testtier.Long(t) // concurrent writers for a few seconds
	st, dir := openTemp(t)
	register(t, st, "live", accounting.ModeBasic, accounting.Budget{Eps: 1e6})

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	werrs := make(chan error, 8)
	type child struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	var children []child
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=live-writer", EnvState+"="+dir, fmt.Sprintf("PRIVNOTES_LIVE_WRITER=p%d", p))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := child{cmd: cmd, in: in, out: bufio.NewReader(out)}
		if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("writer process %d: %q %v", p, line, err)
		}
		children = append(children, c)
	}
	for g := range 4 {
		w, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if err := liveWrite(w, fmt.Sprintf("g%d", g), i); err != nil {
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
		for p, c := range children {
			c.in.Close()
			line, _ := c.out.ReadString('\n')
			if err := c.cmd.Wait(); err != nil {
				t.Errorf("writer process %d: %v (%s)", p, err, line)
			}
		}
		children = nil
	}
	defer stopWriters()

	// At least 30 rounds, and on until the writers have committed at
	// least two records a round: on a slow disk a commit (synchronous
	// FULL) can take longer than a round of audits.
	const rounds = 30
	startHead, _, err := st.Head()
	if err != nil {
		t.Fatal(err)
	}
	grew := func() int64 {
		h, _, err := st.Head()
		if err != nil {
			t.Fatal(err)
		}
		return h - startHead
	}
	var failures []string
	deadline := time.Now().Add(15 * time.Second)
	round := 0
	for ; (round < rounds || grew() < 2*rounds) && time.Now().Before(deadline); round++ {
		if err := st.Verify(); err != nil {
			failures = append(failures, fmt.Sprintf("round %d: Verify: %v", round, err))
		}
		if doc, err := st.ExportDoc(); err != nil {
			failures = append(failures, fmt.Sprintf("round %d: ExportDoc: %v", round, err))
		} else if _, err := VerifyExport(doc); err != nil {
			failures = append(failures, fmt.Sprintf("round %d: the exported ledger (head %d) does not verify: %v", round, doc.HeadID, err))
		}
		var buf bytes.Buffer
		if err := st.Export(&buf, true); err != nil {
			failures = append(failures, fmt.Sprintf("round %d: Export: %v", round, err))
		} else if doc, err := ReadExport(&buf); err != nil {
			failures = append(failures, fmt.Sprintf("round %d: ReadExport: %v", round, err))
		} else if _, err := VerifyExport(doc); err != nil {
			failures = append(failures, fmt.Sprintf("round %d: Export's document does not verify: %v", round, err))
		}
	}
	written := grew()
	stopWriters()
	close(werrs)
	for err := range werrs {
		t.Error(err)
	}
	// Vacuous unless the writers wrote throughout the audits.
	if written < 2*rounds {
		t.Errorf("the chain grew by %d records during %d rounds of audits; the writers were too slow to test anything", written, round)
	}
	t.Logf("%d rounds of 3 audits, %d records written meanwhile, %d false reports", round, written, len(failures))
	for _, f := range failures {
		t.Error(f)
	}
	// Quiet again, the whole ledger verifies.
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestViewIsOneSnapshot: what a View reads is the database as it was when
// the View began, though another connection pool (as another process
// would) charges and seals meanwhile; that writer is not held up by the
// open View; and the Store sees the writes once the View ends.
func TestViewIsOneSnapshot(t *testing.T) {
	old := busyTimeout
	busyTimeout = 2 * time.Second // a writer held up by the View fails, rather than waiting 30 s
	st, dir := openTemp(t)
	w, err := Open(dir)
	busyTimeout = old
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 100})
	chargeRelease(t, st, "a", `{}`, `{"v":1}`)
	head, hash, err := st.Head()
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		head, charges, releases, entries int64
		hash                             string
	}
	look := func(v *View) (s seen, err error) {
		if s.head, s.hash, err = v.Head(); err != nil {
			return s, err
		}
		stat, err := v.Status("d")
		if err != nil {
			return s, err
		}
		rels, err := v.Releases("")
		if err != nil {
			return s, err
		}
		es, err := v.Entries("")
		if err != nil {
			return s, err
		}
		return seen{s.head, int64(stat.Charges), int64(len(rels)), int64(len(es)), s.hash}, nil
	}
	before := seen{head: head, hash: hash, charges: 1, releases: 1, entries: 2}
	err = st.View(context.Background(), func(v *View) error {
		// The other pool writes before this View reads anything of its
		// own: the snapshot is the one taken when the View began.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rc, err := w.Charge(ctx, "d", withMech(accounting.Pure(1), "m"), ChargeMeta{Release: &ReleaseMeta{Name: "b", Call: `{}`}})
		if err != nil {
			return fmt.Errorf("a charge while a View is open: %w (an audit must not hold up a live server's charges)", err)
		}
		if _, err := w.SealRelease(ctx, rc.ID, []byte(`{"v":2}`)); err != nil {
			return fmt.Errorf("a seal while a View is open: %w", err)
		}
		got, err := look(v)
		if err != nil {
			return err
		}
		if got != before {
			t.Errorf("inside the View, after another connection's charge and seal: %+v, want the snapshot of its start %+v", got, before)
		}
		if err := v.Verify(); err != nil {
			t.Errorf("Verify inside the View: %v", err)
		}
		doc, err := v.ExportDoc()
		if err != nil {
			return err
		}
		if doc.HeadID != head || len(doc.Chain) != int(head) || len(doc.Releases) != 1 {
			t.Errorf("ExportDoc inside the View: head %d, %d records, %d releases; want %d, %d, 1", doc.HeadID, len(doc.Chain), len(doc.Releases), head, head)
		}
		_, err = VerifyExport(doc)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after := seen{head: head + 2, charges: 2, releases: 2, entries: 3}
	err = st.View(context.Background(), func(v *View) error {
		got, err := look(v)
		got.hash = ""
		if err == nil && got != after {
			t.Errorf("after the View: %+v, want the charge and seal %+v", got, after)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
