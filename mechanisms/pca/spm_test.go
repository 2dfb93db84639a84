package pca

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// Spec §5 check 8 (Thm 3.2): on the spiked model, SPM's tan θ falls as the
// stream grows at fixed L, since each block's Y_ℓ/T_b concentrates around
// Cov·X_{ℓ−1}.
//
// Measured (9 seeds, d = 50, k = 2, p = 4, L = 8, spikes (1, 0.8), noise
// 0.25): median tan θ_k 0.224, 0.111, 0.0598, 0.0272 at m = 2000, 8000,
// 32000, 128000, i.e. about 1/√m.
func TestSPMSpikedErrorFallsWithM(t *testing.T) {
	testtier.Long(t)
	const d, k, p, L, seeds = 50, 2, 4, 8, 9
	ms := []int{2000, 8000, 32000, 128000}
	meds := make([]float64, len(ms))
	for i, m := range ms {
		var tans []float64
		for seed := uint64(1); seed <= seeds; seed++ {
			data, err := synth.Spiked(seed, m, d, []float64{1, 0.8}, 0.25)
			if err != nil {
				t.Fatal(err)
			}
			res, err := StreamingPowerRows(context.Background(), data.X, StreamOptions{P: p, Iters: L, Start: noise.NewSeeded(seed)})
			if err != nil {
				t.Fatal(err)
			}
			tan, err := TanTheta(data.U, res.Basis)
			if err != nil {
				t.Fatal(err)
			}
			tans = append(tans, tan)
		}
		meds[i] = median(tans)
	}
	t.Logf("median tan θ_k at m=%v (L=%d): %.3g", ms, L, meds)
	for i := 1; i < len(meds); i++ {
		if !(meds[i] < meds[i-1]) {
			t.Errorf("median tan θ did not fall from m=%d (%.3g) to m=%d (%.3g)", ms[i-1], meds[i-1], ms[i], meds[i])
		}
	}
	// 64× more samples: ~1/√m predicts 8×; demand at least 4×.
	if meds[0] < 4*meds[len(meds)-1] {
		t.Errorf("median tan θ fell only from %.3g to %.3g over m ∈ [2000, 128000]", meds[0], meds[len(meds)-1])
	}
}

// When every block of the stream holds the same rows R, SPM is exact
// subspace iteration on RᵀR from the same public start, and the leftover
// m − L·T_b samples are never read.
func TestSPMIsBlockSubspaceIteration(t *testing.T) {
	const d, p, L = 6, 2, 5
	// Stream: each block holds the rows of R, so Y_ℓ = RᵀR·X_{ℓ−1}.
	r := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		r.Set(i, i, float64(d-i))
	}
	m := L*d + 3 // 3 leftover samples, never read
	read := 0
	next := func(dst []float64) bool {
		if read >= m {
			return false
		}
		mat.Row(dst, read%d, r)
		read++
		return true
	}
	res, err := StreamingPower(context.Background(), next, d, m, StreamOptions{P: p, Iters: L, Start: noise.NewSeeded(4)})
	if err != nil {
		t.Fatal(err)
	}
	if res.BlockSize != d || res.Used != L*d || read != L*d {
		t.Errorf("block %d used %d read %d, want T_b=%d and %d samples read", res.BlockSize, res.Used, read, d, L*d)
	}
	x := randomOrthonormal(source{s: noise.NewSeeded(4), scale: 1}, d, p)
	var c mat.Dense
	c.Mul(r.T(), r)
	for l := 0; l < L; l++ {
		var y mat.Dense
		y.Mul(&c, x)
		x = cloneDense(&y)
		orthonormalize(x)
	}
	if !mat.EqualApprox(x, res.Basis, 1e-12) {
		t.Errorf("SPM basis differs from subspace iteration on the block covariance")
	}
	if math.IsNaN(res.Basis.At(0, 0)) {
		t.Error("NaN basis")
	}
}

func TestSPMErrors(t *testing.T) {
	x := mat.NewDense(10, 3, nil)
	cases := []struct {
		name string
		opt  StreamOptions
		want string
	}{
		{"no iters", StreamOptions{}, "iters"},
		{"p > d", StreamOptions{P: 4, Iters: 2}, "p=4"},
		{"more blocks than samples", StreamOptions{Iters: 11}, "blocks"},
	}
	for _, c := range cases {
		if _, err := StreamingPowerRows(context.Background(), x, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	short := func(dst []float64) bool { return false }
	if _, err := StreamingPower(context.Background(), short, 3, 10, StreamOptions{Iters: 2}); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("short stream: error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := StreamingPowerRows(ctx, x, StreamOptions{Iters: 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v", err)
	}
}
