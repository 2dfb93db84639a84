package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// %ledger without an argument shows the records of the datasets the
// session opened, not other analysts' datasets of the same state
// directory, and says how to see them all; %ledger --all and %ledger NAME
// show every dataset's and one dataset's. Seal records are rows ("seal of
// record N"), so the ids shown run without gaps, as the chain numbers
// them.
func TestLedgerMagicScope(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "mine", 50, false, accounting.ReplaceOne)
	registerRegions(t, dir, "theirs", 50, false, accounting.ReplaceOne)
	other := newSession(t, dir)
	other.ok(`c := private_count(dataset("theirs"), eps=1, name="their_release")
fmt.Println(c.Value > -1e9)`)
	s := newSession(t, dir)
	table := func(arg string) string {
		t.Helper()
		res, out := s.run("%ledger " + arg)
		if res.Error != nil {
			t.Fatalf("%%ledger %s: %s: %s", arg, res.Error.Name, res.Error.Value)
		}
		if len(out.disp) == 0 {
			return out.stdout()
		}
		return fmt.Sprint(out.disp[0].Data["text/plain"])
	}
	if got := table(""); !strings.Contains(got, "this session has opened no dataset yet") || !strings.Contains(got, "%ledger --all") {
		t.Errorf("%%ledger before any dataset(...):\n%s", got)
	}
	s.ok(`c := private_count(dataset("mine"), eps=1, name="my_release")
fmt.Println(c.Value > -1e9)`)
	for _, tc := range []struct {
		arg         string
		want, avoid []string
		ids         []int64
	}{
		{"", []string{"mine", "my_release", "seal of record 5", "records of the dataset(s) this session opened: mine (%ledger --all shows every dataset's"},
			[]string{"theirs", "their_release"}, []int64{1, 5, 6}},
		{"--all", []string{"mine", "theirs", "their_release", "my_release", "seal of record 3"}, nil, []int64{1, 2, 3, 4, 5, 6}},
		{"theirs", []string{"theirs", "their_release"}, []string{"my_release"}, []int64{2, 3, 4}},
	} {
		got := table(tc.arg)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%%ledger %s lacks %q:\n%s", tc.arg, w, got)
			}
		}
		for _, w := range tc.avoid {
			if strings.Contains(got, w) {
				t.Errorf("%%ledger %s shows %q:\n%s", tc.arg, w, got)
			}
		}
		var ids []int64
		for _, line := range strings.Split(got, "\n")[1:] {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if id, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
		if fmt.Sprint(ids) != fmt.Sprint(tc.ids) {
			t.Errorf("%%ledger %s shows records %v, want %v:\n%s", tc.arg, ids, tc.ids, got)
		}
	}
}
