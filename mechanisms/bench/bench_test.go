package bench

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	names := map[string]bool{}
	for _, w := range Workloads() {
		names[w.Name] = true
	}
	for _, want := range []string{"spiked", "apm-gaussian"} {
		if !names[want] {
			t.Errorf("workload %q not registered", want)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "apm-gaussian") {
		t.Errorf("Lookup of an unknown name: %v, want an error listing the workloads", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("duplicate Register did not panic")
		}
	}()
	Register(Workload{Name: "spiked", Run: runSpiked})
}

func TestSummarize(t *testing.T) {
	rows := []Row{
		{Workload: "w", Method: "a", N: 1, Eps: 1, Error: 3, Seconds: 1},
		{Workload: "w", Method: "a", N: 1, Eps: 1, Error: 1, Seconds: 2},
		{Workload: "w", Method: "a", N: 1, Eps: 1, Error: 2, Seconds: 9},
		{Workload: "w", Method: "b", N: 1, Eps: 1, Error: 5, Seconds: 1},
		{Workload: "w", Method: "a", N: 1, Eps: 1, Error: 7, Seconds: 1, Extra: map[string]any{"setting": "x"}},
	}
	s := Summarize(rows)
	if len(s) != 3 {
		t.Fatalf("%d groups, want 3: %+v", len(s), s)
	}
	if s[0].Method != "a" || s[0].Seeds != 3 || s[0].MedianError != 2 || s[0].MedianSeconds != 2 {
		t.Errorf("first group %+v", s[0])
	}
	if s[2].Setting != "x" || s[2].MedianError != 7 {
		t.Errorf("setting group %+v", s[2])
	}
	if Median([]float64{4, 1}) != 2.5 || !math.IsNaN(Median(nil)) {
		t.Error("Median")
	}
	if NoiseSeed("a", 1) == NoiseSeed("a", 2) || NoiseSeed("a", 1) != NoiseSeed("a", 1) {
		t.Error("NoiseSeed must be a deterministic function of its parts")
	}
}

// Both workloads run end to end on tiny sizes and produce well-formed,
// reproducible rows with every JSON field the command promises.
func TestWorkloadsSmall(t *testing.T) {
	cfg := Config{Quick: true, Seeds: 2, N: 3000, Eps: []float64{2}}
	for _, name := range []string{"spiked", "apm-gaussian"} {
		w, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := w.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := w.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2*3 || len(again) != len(rows) {
			t.Fatalf("%s: %d rows, want 6 (2 seeds × 3 methods)", name, len(rows))
		}
		for i, r := range rows {
			if r.Workload != name || r.N != 3000 || r.Eps != 2 || r.Delta != 1e-6 || r.K < 1 {
				t.Errorf("%s: malformed row %+v", name, r)
			}
			if !(r.Error >= 0 && r.Error <= float64(r.K)) || r.Seconds <= 0 {
				t.Errorf("%s: error %v or time %v out of range", name, r.Error, r.Seconds)
			}
			if again[i].Error != r.Error {
				t.Errorf("%s: row %d not reproducible: %v vs %v", name, i, r.Error, again[i].Error)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"workload", "method", "n", "d", "k", "eps", "delta", "seed", "error", "seconds"} {
				if _, ok := m[key]; !ok {
					t.Errorf("%s: JSON row lacks %q: %s", name, key, b)
				}
			}
		}
	}
	if _, err := runSpiked(context.Background(), Config{Calibration: "bogus", N: 100, D: 5, Seeds: 1}); err == nil {
		t.Error("bad calibration accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := runAPMGaussian(ctx, cfg); err == nil {
		t.Error("cancelled run returned no error")
	}
}
