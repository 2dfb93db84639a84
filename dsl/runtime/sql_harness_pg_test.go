package runtime

// The harness's SQL grammar against PostgreSQL: the same private_sql calls
// (sql_harness_test.go, the same seed) on live tables that hold each
// world's rows, registered beside the world's snapshots. Neighbouring
// worlds must agree on a live table as they do on a snapshot, and every
// call must give on PostgreSQL what it gives on DuckDB: the same outcome
// class and, with the same seeded noise, the same release. The column
// analyses and Analyze Gauss/npm join them (live_harness_pg_test.go).

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/internal/pgtest"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The test binary links the PostgreSQL engine in, as cmd/privnotes does.
func init() {
	if err := pgsource.Register(); err != nil {
		panic(err) // a second registration: a build error
	}
}

// pgAnalystPassword is the password of the role the live datasets are
// registered with: it may only read the tables.
const pgAnalystPassword = "harness-analyst"

// sqlDataset matches a query's FROM of a snapshot SQL dataset of the
// harness; its live twin is the same name with the prefix "pg".
var sqlDataset = regexp.MustCompile(`\bFROM (u?cats)\b`)

// pgCall is a snapshot call's twin on the live table, or false when the
// call reads no SQL snapshot of the harness (the in-memory "rows").
func pgCall(c harnessCall) (harnessCall, bool) {
	m := sqlDataset.FindStringSubmatch(c.query)
	if m == nil || m[1] != c.dataset {
		return c, false
	}
	p := c
	p.dataset = "pg" + c.dataset
	p.query = sqlDataset.ReplaceAllString(c.query, "FROM pg$1")
	return p, true
}

// loadPG loads world w's rows of "cats" and "ucats" (variant v) into
// tables of srv named after prefix, and registers them in w's state
// directory as the live-table datasets "pgcats" and "pgucats", with the
// public facts of the snapshots: bounds, categories, budget, accountant,
// relation and clip. The user-level table has a unique id in the rows'
// file order, its --order, so that each user's first rows are the same
// rows as in the snapshot.
func loadPG(t *testing.T, srv *pgtest.Server, prefix string, w *world, c harnessConfig, v variant) {
	t.Helper()
	for _, users := range []bool{false, true} {
		ds, table, user, order := "cats", prefix+"_cats", "", ""
		csv := harnessCSV(v, users)
		if users {
			ds, table, user, order = "ucats", prefix+"_ucats", "uid", "id"
			srv.Exec(t, `CREATE TABLE `+table+` (id bigint PRIMARY KEY, x1 double precision, x2 double precision, x3 double precision, g text, uid text)`)
			lines := strings.Split(strings.TrimSuffix(csv, "\n"), "\n")
			var b strings.Builder
			b.WriteString("id," + lines[0] + "\n")
			for i, l := range lines[1:] {
				fmt.Fprintf(&b, "%d,%s\n", i, l)
			}
			csv = b.String()
		} else {
			srv.Exec(t, `CREATE TABLE `+table+` (x1 double precision, x2 double precision, x3 double precision, g text)`)
		}
		srv.CopyCSV(t, table, csv)
		srv.Exec(t, `GRANT SELECT ON `+table+` TO analyst`)
		ref, cols, skipped, err := pgsource.Describe(context.Background(), srv.URL("analyst"), pgAnalystPassword, "public."+table,
			map[string][]string{"g": {"a", "b"}}, user, order)
		if err != nil {
			t.Fatalf("describe %s: %v", table, err)
		}
		if len(skipped) > 0 {
			t.Fatalf("describe %s: columns not registered: %v", table, skipped)
		}
		registerWith(t, w.dir, ledger.Registration{Name: "pg" + ds, Budget: accounting.Budget{Eps: 1e4, Delta: 0.5}, Accountant: accounting.ModeZCDP,
			Neighbour: c.neighbour, Clip: 1, Bounds: harnessBounds, Source: "postgres",
			Engine: ref, EngineColumns: cols, EngineSecret: pgAnalystPassword})
	}
}

// twinText is an outcome's text or ledger record without what differs
// between a snapshot and its live twin in one state directory by
// construction: the dataset's name (in the query, the receipt and the
// ledger), the ledger ids, and the offsets into the query, whose FROM is
// two letters longer.
func twinText(s string) string {
	s = strings.NewReplacer("pgucats", "ucats", "pgcats", "cats").Replace(s)
	return twinDiffs.ReplaceAllString(s, "")
}

var twinDiffs = regexp.MustCompile(`ledger=\d+|id=\d+|at offset \d+`)

// firstDiff is a and b from the first byte where they differ, for
// failure messages about long texts.
func firstDiff(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	i = max(0, i-40)
	return a[i:min(len(a), i+400)], b[i:min(len(b), i+400)]
}

// releaseValues is what a release holds apart from its receipt: the
// table's rows, printed with every float64's shortest exact form.
func releaseValues(v any) string {
	if r, ok := v.(*TableResult); ok {
		return fmt.Sprintf("%v %v %v", r.Columns, r.Kinds, r.Rows)
	}
	return fmt.Sprintf("%T", v)
}

func TestNeighbouringDatasetsPostgreSQL(t *testing.T) {
	testtier.Long(t)       // a grid of worlds, as TestNeighbouringDatasets
	srv := pgtest.Start(t) // integration tier; skips only without the binaries outside CI
	srv.Exec(t, `CREATE ROLE analyst LOGIN PASSWORD '`+pgAnalystPassword+`'`)

	seed := uint64(1)
	old := newSampler
	newSampler = func() *noise.Sampler { return noise.NewSeeded(seed) }
	t.Cleanup(func() { newSampler = old })

	// The default grid's sample of the grammar (harnessGrid) and of the
	// column analyses' forms (liveSample, drawn with -audit.seed).
	n, forms := 14, liveDefaultForms
	if *auditWide || *auditAll {
		n, forms = 200, len(liveForms())
	}
	var only *regexp.Regexp
	if *auditRun != "" {
		only = regexp.MustCompile(*auditRun)
		forms = len(liveForms())
	}
	var pairs []pgPair
	for _, c := range sqlHarnessCalls(n) {
		if p, ok := pgCall(c); ok && (only == nil || only.MatchString(c.String())) {
			pairs = append(pairs, pgPair{snap: c, live: p})
		}
	}
	for _, f := range liveSample(*auditSeed, forms) {
		if only == nil || only.MatchString(f.call.String()) {
			pairs = append(pairs, pgPair{snap: f.call, live: liveTwin(f.call), refused: f.refused})
		}
	}
	t.Logf("%d calls on PostgreSQL: the grammar's sample, the live tables' refusals and up to %d of the forms that run there, drawn with -audit.seed=%d", len(pairs), forms, *auditSeed)
	runPGHarness(t, srv, pairs, &seed, only == nil && forms == len(liveForms()))
}

// liveDefaultForms is how many of the forms that run on a live table
// (liveForms) the default run draws: each adds about two seconds on the
// shared machine (docs/testing.md).
const liveDefaultForms = 12

// pgPair is a call on a snapshot of the harness and its twin on the live
// table. refused marks a twin the live table must refuse before the
// charge (liveForm): the snapshot call is then not run.
type pgPair struct {
	snap, live harnessCall
	refused    bool
}

// runPGHarness runs each pair's live call in the worlds of both
// relations, beside its snapshot call, with the noise seeded by *seed
// alike on both engines. every says the pairs hold every live form, so
// that each function of liveRunFunctions must release on a live table.
func runPGHarness(t *testing.T, srv *pgtest.Server, pairs []pgPair, seed *uint64, every bool) {
	t.Helper()
	runs, charged := 0, 0
	released := map[string]int{}          // releases on a live table, per function
	var setup, onPG, onSnap time.Duration // for the log: where the time goes
	var forms time.Duration               // of the calls' time, the column-analysis forms'
	for ci, c := range []harnessConfig{{accounting.ReplaceOne, false}, {accounting.AddRemove, false}} {
		var worlds []*world
		for vi, v := range harnessVariants() {
			began := time.Now()
			w := newWorld(t, c, v)
			loadPG(t, srv, fmt.Sprintf("w%d_%d", ci, vi), w, c, v)
			setup += time.Since(began)
			worlds = append(worlds, w)
		}
		for i, p := range pairs {
			live := p.live
			var first *world
			var firstO outcome
			for _, w := range worlds {
				var want outcome
				began := time.Now()
				if !p.refused {
					*seed = uint64(i + 1)
					want = w.run(t, i, p.snap)
				}
				*seed = uint64(i + 1)
				mid := time.Now()
				o := w.run(t, i, live)
				onSnap, onPG = onSnap+mid.Sub(began), onPG+time.Since(mid)
				if p.snap.query == "" {
					forms += time.Since(began)
				}
				runs++
				if o.charged {
					charged++
				}
				if o.class == "ok" {
					released[live.fn]++
				}
				checkOutcome(t, c, w, live, o)
				if p.refused {
					if msg := checkLiveRefusal(o); msg != "" {
						t.Errorf("%s data (%s), %s: %s", c, w.name, live, msg)
					}
				} else if got, exp := twinText(o.text+" | "+o.ledger), twinText(want.text+" | "+want.ledger); o.class != want.class || o.charged != want.charged || got != exp {
					got, exp = firstDiff(got, exp)
					t.Errorf("%s data (%s), %s: PostgreSQL and the snapshot differ:\n  PostgreSQL: %s charged=%v …%s\n  snapshot:   %s charged=%v …%s",
						c, w.name, live, o.class, o.charged, got, want.class, want.charged, exp)
				} else if o.class == "ok" {
					if msg := liveValuesDiffer(live, o.value, want.value); msg != "" {
						t.Errorf("%s data (%s), %s: with the same noise PostgreSQL released %s\nthe server's errors:\n%s", c, w.name, live, msg, srv.Errors(t))
					}
				}
				if first == nil {
					first, firstO = w, o
					continue
				}
				if o.class != firstO.class || o.text != firstO.text || o.charged != firstO.charged || o.ledger != firstO.ledger {
					t.Errorf("%s data, %s: outcome differs between %q and %q on PostgreSQL:\n  %s: %s %s charged=%v %s\n  %s: %s %s charged=%v %s",
						c, live, first.name, w.name,
						first.name, firstO.class, firstO.text, firstO.charged, firstO.ledger,
						w.name, o.class, o.text, o.charged, o.ledger)
				}
			}
		}
		for _, w := range worlds {
			verify(t, w.dir)
		}
	}
	t.Logf("%d calls on PostgreSQL × worlds = %d runs (%d charged)", len(pairs), runs, charged)
	t.Logf("worlds and tables %v, calls on PostgreSQL %v, on the snapshots %v; the column-analysis forms' calls on both %v",
		setup.Round(time.Millisecond), onPG.Round(time.Millisecond), onSnap.Round(time.Millisecond), forms.Round(time.Millisecond))
	if charged == 0 || charged == runs {
		t.Errorf("%d of %d runs charged: the grid must hold both refused and charged calls", charged, runs)
	}
	t.Logf("releases on PostgreSQL by function: %v", released)
	for fn := range released {
		if !liveRunFunctions[fn] {
			t.Errorf("%s released on a live table, which liveRunFunctions says refuses it: update the list (and the harness's forms)", fn)
		}
	}
	if every {
		// Every form ran: each function the list says runs on a live
		// table released there at least once.
		for fn := range liveRunFunctions {
			if released[fn] == 0 {
				t.Errorf("%s never released on a live table, which liveRunFunctions says runs it", fn)
			}
		}
	}
}
