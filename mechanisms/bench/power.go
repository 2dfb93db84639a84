package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// Power-method workloads (power_methods.md §5): the spiked covariance model
// and the APM Gaussian recipe of check 1.
func init() {
	Register(Workload{
		Name:    "spiked",
		Summary: "spiked covariance (Hardt–Price): npm, adaptive (k=1), gauss (opt-in adaptive-k0, adaptive-auto); error ‖sinΘ‖²_F",
		Run:     runSpiked,
	})
	Register(Workload{
		Name:    "apm-gaussian",
		Summary: "APM Gaussian recipe (spec §5.1): d=20, n∈{1e4,1e5}, ε∈{0.5,1,2,4}; adaptive, npm, gauss (opt-in adaptive-k0, adaptive-auto); error sin²",
		Run:     runAPMGaussian,
	})
}

// Adaptive variants of the power workloads, run only when named in
// Config.Methods (each runs the adaptive method with another gap rule):
// "adaptive-k0" leaves the gap unspecified (the default κ₀ = 0.5, what a
// cell gets without gap=), "adaptive-auto" selects it privately
// (gap="auto": one run per guess of pca.AutoGaps, then the exponential
// mechanism). Plain "adaptive" is given the recipe's true gap.
const (
	adaptiveK0   = "adaptive-k0"
	adaptiveAuto = "adaptive-auto"
)

// powerMethods returns the methods a power workload runs: base, then the
// opt-in adaptive variants named in cfg.Methods.
func powerMethods(cfg Config, base []string) []string {
	var out []string
	for _, m := range base {
		if cfg.WantMethod(m) {
			out = append(out, m)
		}
	}
	for _, m := range []string{adaptiveK0, adaptiveAuto} {
		if slices.Contains(cfg.Methods, m) {
			out = append(out, m)
		}
	}
	return out
}

// gapVariant sets opt for a power workload's method and returns the pca
// method to run: the adaptive variants run pca.MethodAdaptive with the
// gap unspecified or "auto", the others run as named with the known gap.
func gapVariant(method string, opt *pca.Options, known float64) string {
	opt.Gap = known
	switch method {
	case adaptiveK0:
		opt.Gap = 0
		return pca.MethodAdaptive
	case adaptiveAuto:
		opt.Gap, opt.AutoGap = 0, true
		return pca.MethodAdaptive
	}
	return method
}

// pcaOptions turns the common config into pca options.
func pcaOptions(cfg Config, k int, eps, delta float64) (pca.Options, error) {
	cal, err := pca.ParseCalibration(cfg.Calibration)
	if err != nil {
		return pca.Options{}, err
	}
	nb := accounting.ReplaceOne
	if cfg.Neighbour != "" {
		if nb, err = accounting.ParseNeighbour(cfg.Neighbour); err != nil {
			return pca.Options{}, err
		}
	}
	return pca.Options{K: k, Eps: eps, Delta: delta, Calibration: cal, Neighbour: nb, Workers: cfg.Workers}, nil
}

// runPCA times one private PCA run and scores it against truth (d×k).
func runPCA(ctx context.Context, method string, x, truth *mat.Dense, opt pca.Options) (float64, float64, *pca.Result, error) {
	start := time.Now()
	res, err := pca.Run(ctx, method, x, opt)
	secs := time.Since(start).Seconds()
	if err != nil {
		return 0, 0, nil, err
	}
	return pca.SinThetaSq(truth, res.Components), secs, res, nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func epsGrid(cfg Config, def []float64) []float64 {
	if len(cfg.Eps) > 0 {
		return cfg.Eps
	}
	return def
}

func deltaOf(cfg Config) float64 {
	if cfg.Delta > 0 {
		return cfg.Delta
	}
	return 1e-6
}

// runSpiked: rows from Spiked with planted eigenvalues 1 + g·(k−i+1)
// (bulk 1, eigengap g at every one of the top k), clipped at the public
// bound 1.5·√(tr Cov). Adaptive runs with k = 1 against the top direction.
func runSpiked(ctx context.Context, cfg Config) ([]Row, error) {
	n := orDefault(cfg.N, pick(cfg.Quick, 20000, 100000))
	d := orDefault(cfg.D, pick(cfg.Quick, 20, 50))
	k := orDefault(cfg.K, 3)
	seeds := orDefault(cfg.Seeds, pick(cfg.Quick, 3, 9))
	const gap = 2.0
	if k > d {
		return nil, fmt.Errorf("spiked: k=%d exceeds d=%d", k, d)
	}
	spikes := make([]float64, k)
	trace := float64(d)
	for i := range spikes {
		spikes[i] = gap * float64(k-i)
		trace += spikes[i]
	}
	clip := 1.5 * math.Sqrt(trace)
	delta := deltaOf(cfg)
	var rows []Row
	for s := 0; s < seeds; s++ {
		data, err := synth.Spiked(uint64(s), n, d, spikes, 1)
		if err != nil {
			return nil, err
		}
		top := mat.DenseCopyOf(data.U.Slice(0, d, 0, 1))
		for _, eps := range epsGrid(cfg, pickF(cfg.Quick, []float64{1}, []float64{0.5, 1, 2})) {
			for _, method := range powerMethods(cfg, pca.Methods) {
				kk, truth := k, data.U
				if strings.HasPrefix(method, pca.MethodAdaptive) {
					kk, truth = 1, top
				}
				opt, err := pcaOptions(cfg, kk, eps, delta)
				if err != nil {
					return nil, err
				}
				opt.Clip, opt.PublicN = clip, n
				run := gapVariant(method, &opt, gap/(gap*float64(k)+1))
				opt.Noise = noise.NewSeeded(NoiseSeed("spiked", s, method, eps, n, d, k))
				e, secs, res, err := runPCA(ctx, run, data.X, truth, opt)
				if err != nil {
					return nil, fmt.Errorf("spiked %s n=%d ε=%v seed %d: %w", method, n, eps, s, err)
				}
				rows = append(rows, Row{Workload: "spiked", Method: method, N: n, D: d, K: kk, Eps: eps, Delta: delta,
					Seed: uint64(s), Error: e, Seconds: secs, Extra: extra(res, map[string]any{"clip": clip, "eigengap": gap})})
			}
		}
	}
	return rows, nil
}

// runAPMGaussian is spec §5 check 1: Σ̄² = diag(4,1,…,1)/(d+3), rows divided
// by s_L and clipped to norm 1, δ = 1e−6, T = ⌈ln(n/(βδε))/0.75⌉, metric
// sin²(v̄1, x). npm and gauss run on the same data with k = 1 and the same
// public gap 0.75 (npm's default L = ⌈2 ln d/0.75⌉).
func runAPMGaussian(ctx context.Context, cfg Config) ([]Row, error) {
	d := orDefault(cfg.D, 20)
	ns := []int{10000, 100000}
	if cfg.N > 0 {
		ns = []int{cfg.N}
	}
	grid := epsGrid(cfg, pickF(cfg.Quick, []float64{1, 4}, []float64{0.5, 1, 2, 4}))
	seeds := orDefault(cfg.Seeds, pick(cfg.Quick, 5, 9))
	delta := deltaOf(cfg)
	const beta = 0.05
	var rows []Row
	for _, n := range ns {
		for s := 0; s < seeds; s++ {
			data, err := synth.APMGaussian(uint64(s), n, d, beta)
			if err != nil {
				return nil, err
			}
			for _, eps := range grid {
				for _, method := range powerMethods(cfg, []string{pca.MethodAdaptive, pca.MethodNPM, pca.MethodGauss}) {
					if err := ctx.Err(); err != nil {
						return rows, err
					}
					opt, err := pcaOptions(cfg, 1, eps, delta)
					if err != nil {
						return nil, err
					}
					opt.PublicN, opt.Beta = n, beta
					run := gapVariant(method, &opt, 0.75)
					opt.Noise = noise.NewSeeded(NoiseSeed("apm-gaussian", s, method, eps, n, d))
					e, secs, res, err := runPCA(ctx, run, data.X, data.U, opt)
					if err != nil {
						return nil, fmt.Errorf("apm-gaussian %s n=%d ε=%v seed %d: %w", method, n, eps, s, err)
					}
					rows = append(rows, Row{Workload: "apm-gaussian", Method: method, N: n, D: d, K: 1, Eps: eps, Delta: delta,
						Seed: uint64(s), Error: e, Seconds: secs, Extra: extra(res, nil)})
				}
			}
		}
	}
	return rows, nil
}

// extra records the public run parameters next to a row.
func extra(res *pca.Result, more map[string]any) map[string]any {
	m := map[string]any{
		"iters":            res.Iters,
		"calibration":      res.Calibration,
		"neighbour":        res.Neighbour,
		"noise_multiplier": res.NoiseMultiplier,
	}
	if res.Gap > 0 { // gap="auto": the guess the exponential mechanism selected
		m["selected_gap"] = res.Gap
	}
	for k, v := range more {
		m[k] = v
	}
	return m
}

func pick(quick bool, q, full int) int {
	if quick {
		return q
	}
	return full
}

func pickF(quick bool, q, full []float64) []float64 {
	if quick {
		return q
	}
	return full
}

func nan() float64 { return math.NaN() }
