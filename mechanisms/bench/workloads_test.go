package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
)

// workloadCase is a tiny configuration of one registered workload and what
// its rows must look like.
type workloadCase struct {
	cfg Config
	// methods are the methods the workload documents; every one must
	// appear in the rows and no other.
	methods []string
	// nonPrivate methods report Eps = 0 (the ε = ∞ baselines); the others
	// report an ε from cfg.Eps.
	nonPrivate []string
	// baseEps are ε values the workload runs whatever cfg.Eps says (a
	// fixed base point of its curves).
	baseEps []float64
	// k1 methods report K = 1 whatever cfg.K is (single-component methods).
	k1 []string
	// extra keys every row must carry.
	extra []string
}

// tinyCases keeps every workload to a second or two on two cores: each
// honours Config.N and Config.D, so the sizes are set explicitly. The DP-PCA
// workloads need n ≳ 73000 at ε = 2, d = 5 (Algorithm 3's minibatches).
var tinyCases = map[string]workloadCase{
	"spiked": {
		cfg:     Config{Quick: true, Seeds: 2, N: 2000, D: 10, K: 2, Eps: []float64{2}, Delta: 1e-6},
		methods: []string{"npm", "adaptive", "gauss"},
		k1:      []string{"adaptive"},
		extra:   []string{"iters", "calibration", "noise_multiplier"},
	},
	"spiked-offset": {
		cfg:     Config{Quick: true, Seeds: 2, N: 2000, D: 10, K: 2, Eps: []float64{2}, Delta: 1e-6},
		methods: []string{"npm", "npm+center", "adaptive", "adaptive+center", "gauss", "gauss+center"},
		k1:      []string{"adaptive", "adaptive+center"},
		extra:   []string{"iters", "calibration", "noise_multiplier", "centred", "mean_norm"},
	},
	"apm-gaussian": {
		cfg:     Config{Quick: true, Seeds: 2, N: 2000, D: 10, Eps: []float64{2}, Delta: 1e-6},
		methods: []string{"adaptive", "npm", "gauss"},
		k1:      []string{"adaptive", "npm", "gauss"},
		extra:   []string{"iters", "calibration", "noise_multiplier"},
	},
	"dppca-gaussian": {
		cfg:     Config{Quick: true, Seeds: 2, N: 80000, D: 5, Eps: []float64{2}, Delta: 1e-6},
		methods: []string{"dppca", "oja", "gauss", "adaptive"},
		k1:      []string{"dppca", "oja", "gauss", "adaptive"},
		extra:   []string{"sin"},
	},
	"dppca-example41": {
		cfg:     Config{Quick: true, Seeds: 1, N: 80000, D: 5, Eps: []float64{2}, Delta: 1e-6},
		methods: []string{"dppca", "oja", "gauss", "adaptive"},
		k1:      []string{"dppca", "oja", "gauss", "adaptive"},
		extra:   []string{"sin", "sigma", "setting"},
	},
	"fedrep-fig1": {
		cfg:        Config{Quick: true, Seeds: 1, N: 2000, D: 10, K: 2, Eps: []float64{2}, Delta: 1e-6},
		methods:    []string{"fedrep", "fedrep-nonprivate", "local-gd"},
		nonPrivate: []string{"fedrep-nonprivate", "local-gd"},
		extra:      []string{"metric", "users"},
	},
	"ppm-entry": {
		cfg:        Config{Quick: true, Seeds: 2, N: 40, D: 40, K: 2, Eps: []float64{4}, Delta: 1e-6},
		methods:    []string{"gaussian", "laplace", "nonprivate"},
		nonPrivate: []string{"nonprivate"},
		extra:      []string{"iters", "p"},
	},
	"dpspca": {
		cfg:        Config{Quick: true, Seeds: 1, N: 2000, D: 40, K: 2, Eps: []float64{2}, Delta: 1e-6},
		methods:    []string{"dpspca", "npm", "dpspca-nonprivate"},
		nonPrivate: []string{"dpspca-nonprivate"},
		// Only the ε-curve follows cfg.Eps; the t, d and N curves sit at ε0 = 8.
		baseEps: []float64{8},
		extra:   []string{"providers", "sparsity", "t", "curve", "recall"},
	},
}

var requiredJSONKeys = []string{"workload", "method", "n", "d", "k", "eps", "delta", "seed", "error", "seconds"}

// TestEveryWorkloadTiny runs every registered workload at a tiny size and
// checks the rows are complete, well formed, serialisable and reproducible
// from their seeds. A workload registered without a case here fails, so a
// new workload cannot go untested.
func TestEveryWorkloadTiny(t *testing.T) {
	for _, w := range Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel() // each workload builds its own data and seeds
			tc, ok := tinyCases[w.Name]
			if !ok {
				t.Fatalf("workload %q has no tiny case in tinyCases: add one", w.Name)
			}
			if w.Summary == "" {
				t.Errorf("workload %q has no summary for --list", w.Name)
			}
			rows, err := w.Run(context.Background(), tc.cfg)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			seen := map[string]bool{}
			seeds := map[uint64]bool{}
			for _, r := range rows {
				checkRow(t, w.Name, tc, r)
				seen[r.Method] = true
				seeds[r.Seed] = true
			}
			for _, m := range tc.methods {
				if !seen[m] {
					t.Errorf("method %q produced no row", m)
				}
			}
			if len(seeds) != tc.cfg.Seeds {
				t.Errorf("rows cover seeds %v, want %d seeds", seeds, tc.cfg.Seeds)
			}

			again, err := w.Run(context.Background(), tc.cfg)
			if err != nil {
				t.Fatalf("second run: %v", err)
			}
			if len(again) != len(rows) {
				t.Fatalf("second run: %d rows, first %d", len(again), len(rows))
			}
			for i := range rows {
				a, b := rows[i], again[i]
				if rowKey(a) != rowKey(b) || a.Error != b.Error {
					t.Errorf("row %d not reproducible: %s error %v, then %s error %v", i, rowKey(a), a.Error, rowKey(b), b.Error)
				}
			}
		})
	}
}

func rowKey(r Row) string {
	return fmt.Sprintf("%s/%s n=%d d=%d k=%d eps=%g seed=%d setting=%v t=%v",
		r.Workload, r.Method, r.N, r.D, r.K, r.Eps, r.Seed, r.Extra["setting"], r.Extra["t"])
}

func checkRow(t *testing.T, name string, tc workloadCase, r Row) {
	t.Helper()
	cfg := tc.cfg
	id := rowKey(r)
	if r.Workload != name {
		t.Errorf("%s: workload %q, want %q", id, r.Workload, name)
	}
	if !slices.Contains(tc.methods, r.Method) {
		t.Errorf("%s: method %q is not one of %v", id, r.Method, tc.methods)
	}
	if r.N != cfg.N || r.D != cfg.D {
		t.Errorf("%s: n=%d d=%d, want the configured n=%d d=%d", id, r.N, r.D, cfg.N, cfg.D)
	}
	wantK := cfg.K
	if wantK == 0 || slices.Contains(tc.k1, r.Method) {
		wantK = 1
	}
	if r.K != wantK {
		t.Errorf("%s: k=%d, want %d", id, r.K, wantK)
	}
	if slices.Contains(tc.nonPrivate, r.Method) {
		if r.Eps != 0 {
			t.Errorf("%s: non-private method reports ε=%v, want 0", id, r.Eps)
		}
	} else if !slices.Contains(cfg.Eps, r.Eps) && !slices.Contains(tc.baseEps, r.Eps) {
		t.Errorf("%s: ε=%v not in the configured grid %v", id, r.Eps, cfg.Eps)
	}
	if r.Delta != cfg.Delta {
		t.Errorf("%s: δ=%v, want the configured %v", id, r.Delta, cfg.Delta)
	}
	if r.Seed >= uint64(cfg.Seeds) {
		t.Errorf("%s: seed %d outside [0, %d)", id, r.Seed, cfg.Seeds)
	}
	if math.IsNaN(r.Error) || math.IsInf(r.Error, 0) || r.Error < 0 {
		t.Errorf("%s: error %v, want finite and ≥ 0", id, r.Error)
	}
	// sin² metrics are bounded by k; workloads with another metric name it.
	if _, other := r.Extra["metric"]; !other && r.Error > float64(r.K)+1e-9 {
		t.Errorf("%s: ‖sinΘ‖²_F = %v exceeds k = %d", id, r.Error, r.K)
	}
	if !(r.Seconds > 0) || math.IsInf(r.Seconds, 0) {
		t.Errorf("%s: seconds %v, want > 0", id, r.Seconds)
	}
	for _, key := range tc.extra {
		if _, ok := r.Extra[key]; !ok {
			t.Errorf("%s: Extra lacks %q: %v", id, key, r.Extra)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Errorf("%s: JSON: %v", id, err)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: JSON round trip: %v", id, err)
	}
	for _, key := range requiredJSONKeys {
		if _, ok := m[key]; !ok {
			t.Errorf("%s: JSON lacks %q: %s", id, key, b)
		}
	}
}

// TestEveryWorkloadMethodsAndCancel: Config.Methods restricts every workload
// to the named method, and a cancelled context ends every workload with an
// error rather than a silently short table.
func TestEveryWorkloadMethodsAndCancel(t *testing.T) {
	for _, w := range Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel() // each workload builds its own data and seeds
			tc, ok := tinyCases[w.Name]
			if !ok {
				t.Fatalf("workload %q has no tiny case in tinyCases: add one", w.Name)
			}
			cfg := tc.cfg
			cfg.Seeds = 1
			only := tc.methods[len(tc.methods)-1]
			cfg.Methods = []string{only}
			rows, err := w.Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Methods=[%s]: %v", only, err)
			}
			if len(rows) == 0 {
				t.Fatalf("Methods=[%s]: no rows", only)
			}
			for _, r := range rows {
				if r.Method != only {
					t.Errorf("Methods=[%s] produced a %q row", only, r.Method)
				}
			}

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := w.Run(ctx, tc.cfg); err == nil {
				t.Error("cancelled run returned no error")
			}
		})
	}
}
