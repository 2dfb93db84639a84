package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/bench"
)

func TestBenchList(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"bench", "--list"}, &out, &errb); code != 0 {
		t.Fatalf("bench --list: exit %d, stderr %q", code, errb.String())
	}
	ws := bench.Workloads()
	if len(ws) == 0 {
		t.Fatal("no workloads registered")
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != len(ws) {
		t.Errorf("bench --list printed %d lines for %d workloads:\n%s", len(lines), len(ws), out.String())
	}
	for _, w := range ws {
		if !strings.Contains(out.String(), w.Name+" ") {
			t.Errorf("bench --list does not list %q:\n%s", w.Name, out.String())
		}
	}
	// The binary links internal/benchrun, whose tabular workload registers
	// itself.
	if !strings.Contains(out.String(), "tabular ") {
		t.Errorf("bench --list does not show tabular:\n%s", out.String())
	}
}

func TestBenchUnknownWorkload(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"bench", "--workload", "nope"}, &out, &errb); code == 0 {
		t.Fatal("bench --workload nope: exit 0")
	}
	msg := errb.String()
	if !strings.Contains(msg, `"nope"`) {
		t.Errorf("error does not name the bad workload: %q", msg)
	}
	for _, w := range bench.Workloads() {
		if !strings.Contains(msg, w.Name) {
			t.Errorf("error does not name the valid workload %q: %q", w.Name, msg)
		}
	}
	if out.Len() != 0 {
		t.Errorf("stdout not empty on error: %q", out.String())
	}
}

func TestBenchJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"bench", "--workload", "spiked", "--json", "--n", "2000", "--seeds", "1", "--eps", "2"}
	if code := dispatch(args, &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
	}
	methods := map[string]bool{}
	lines := 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not one JSON object: %v: %q", lines, err, sc.Text())
		}
		for _, key := range []string{"workload", "method", "n", "d", "k", "eps", "delta", "seed", "error", "seconds"} {
			if _, ok := m[key]; !ok {
				t.Errorf("line %d lacks %q: %s", lines, key, sc.Text())
			}
		}
		if m["workload"] != "spiked" || m["n"] != 2000.0 || m["eps"] != 2.0 || m["seed"] != 0.0 {
			t.Errorf("line %d does not follow the flags: %s", lines, sc.Text())
		}
		if e, _ := m["error"].(float64); !(e >= 0) {
			t.Errorf("line %d: error %v, want ≥ 0", lines, m["error"])
		}
		if s, _ := m["seconds"].(float64); !(s > 0) {
			t.Errorf("line %d: seconds %v, want > 0", lines, m["seconds"])
		}
		method, _ := m["method"].(string)
		methods[method] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// One seed, one ε: one row per method.
	if lines != 3 || !methods["npm"] || !methods["adaptive"] || !methods["gauss"] {
		t.Errorf("%d lines with methods %v, want one each of npm, adaptive, gauss:\n%s", lines, methods, out.String())
	}
}

// Bad flag values end with a non-zero status and a message naming the
// flag or the value and what is accepted.
func TestBenchBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"--workload", "spiked", "--n", "500", "--seeds", "1", "--calibration", "nope"}, []string{`"nope"`, "zcdp", "paper"}},
		{[]string{"--workload", "spiked", "--eps", "-1"}, []string{"--eps", "-1", "positive"}},
		{[]string{"--workload", "spiked", "--eps", "x"}, []string{"--eps", `"x"`}},
		{[]string{"--workload", "spiked", "--seeds", "-2"}, []string{"≥ 0"}},
		{[]string{"--workload", "spiked", "--delta", "1"}, []string{"delta"}},
		{[]string{"--n", "many"}, []string{"-n", "many"}},
		{[]string{"--workload", "spiked", "extra"}, []string{`"extra"`}},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"bench"}, c.args...), &out, &errb)
		if code == 0 {
			t.Errorf("bench %v: exit 0, want non-zero", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("bench %v: stderr %q lacks %q", c.args, errb.String(), w)
			}
		}
	}
}
