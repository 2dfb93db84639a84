// Package bench is the registry of accuracy-and-time workloads run by
// `privnotes bench`.
//
// A workload generates public synthetic data from a seed, runs one or more
// mechanisms on it, and returns one Row per (method, setting, seed) with the
// error against the planted truth and the wall time. Workloads register
// themselves in init functions, one file per family (power.go holds the
// power-method workloads), so other packages' authors add workloads by
// adding a file here. The package computes only; the command prints.
//
// Benchmarks use seeded noise (noise.NewSeeded) so that a table can be
// reproduced exactly. That is acceptable only because the data are public
// synthetic draws: no private data ever reaches a seeded sampler.
package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Config holds the knobs common to all workloads. Zero values mean "the
// workload's default"; workloads ignore knobs that do not apply to them.
type Config struct {
	// Quick selects a reduced grid; every quick workload together must
	// finish within a minute on two cores.
	Quick bool
	// Seeds is the number of seeds per setting.
	Seeds int
	// N, D, K override the workload's sizes.
	N, D, K int
	// Eps overrides the privacy grid; Delta the δ.
	Eps   []float64
	Delta float64
	// Methods restricts the methods run (nil: all the workload knows).
	Methods []string
	// Calibration ("zcdp" or "paper") and Neighbour ("replace-one" or
	// "add-remove") select the accounting; empty means the default.
	Calibration string
	Neighbour   string
	// Workers bounds the goroutines of each data pass (0: all cores).
	Workers int
}

// WantMethod reports whether cfg selects method.
func (c Config) WantMethod(method string) bool {
	return len(c.Methods) == 0 || slices.Contains(c.Methods, method)
}

// Row is one run. Error is sin² of the angle to the truth for k = 1 and
// ‖sin Θ‖²_F for k > 1 unless the workload documents another metric in
// Extra["metric"].
type Row struct {
	Workload string         `json:"workload"`
	Method   string         `json:"method"`
	N        int            `json:"n"`
	D        int            `json:"d"`
	K        int            `json:"k"`
	Eps      float64        `json:"eps"`
	Delta    float64        `json:"delta"`
	Seed     uint64         `json:"seed"`
	Error    float64        `json:"error"`
	Seconds  float64        `json:"seconds"`
	Extra    map[string]any `json:"extra,omitempty"`
}

// Workload is a named benchmark.
type Workload struct {
	Name    string
	Summary string // one line for listings
	Run     func(ctx context.Context, cfg Config) ([]Row, error)
}

var (
	mu        sync.Mutex
	workloads = map[string]Workload{}
)

// Register adds w to the registry. It panics on an empty or duplicate name
// or a nil Run, programming errors that any test run catches.
func Register(w Workload) {
	mu.Lock()
	defer mu.Unlock()
	if w.Name == "" || w.Run == nil {
		panic("bench: workload needs a name and a Run function")
	}
	if _, dup := workloads[w.Name]; dup {
		panic("bench: duplicate workload " + w.Name)
	}
	workloads[w.Name] = w
}

// Workloads returns the registered workloads sorted by name.
func Workloads() []Workload {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Workload, 0, len(workloads))
	for _, w := range workloads {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the workload called name, or an error listing the names.
func Lookup(name string) (Workload, error) {
	mu.Lock()
	w, ok := workloads[name]
	mu.Unlock()
	if !ok {
		var names []string
		for _, w := range Workloads() {
			names = append(names, w.Name)
		}
		return Workload{}, fmt.Errorf("bench: unknown workload %q: choose one of %s", name, strings.Join(names, ", "))
	}
	return w, nil
}

// Summary aggregates the rows of one setting over seeds.
type Summary struct {
	Workload, Method string
	N, D, K          int
	Eps, Delta       float64
	// Setting distinguishes rows that differ in a parameter outside the
	// common fields (Extra["setting"]), e.g. a noise level.
	Setting       string
	Seeds         int
	MedianError   float64
	MedianSeconds float64
}

// Summarize groups rows by workload, method, sizes, ε, δ and
// Extra["setting"], and returns the medians in first-appearance order.
func Summarize(rows []Row) []Summary {
	type key struct {
		w, m    string
		n, d, k int
		e, dl   float64
		s       string
	}
	var order []key
	errs := map[key][]float64{}
	secs := map[key][]float64{}
	for _, r := range rows {
		s, _ := r.Extra["setting"].(string)
		k := key{r.Workload, r.Method, r.N, r.D, r.K, r.Eps, r.Delta, s}
		if _, seen := errs[k]; !seen {
			order = append(order, k)
		}
		errs[k] = append(errs[k], r.Error)
		secs[k] = append(secs[k], r.Seconds)
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		out = append(out, Summary{
			Workload: k.w, Method: k.m, N: k.n, D: k.d, K: k.k, Eps: k.e, Delta: k.dl, Setting: k.s,
			Seeds: len(errs[k]), MedianError: Median(errs[k]), MedianSeconds: Median(secs[k]),
		})
	}
	return out
}

// Median returns the median of xs (NaN for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return nan()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// NoiseSeed derives a reproducible noise seed from the parts of a setting,
// so that different methods and settings never share a noise stream.
func NoiseSeed(parts ...any) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return h.Sum64()
}
