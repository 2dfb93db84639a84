package synth

// Recipes: spiked covariance (Hardt–Price 2014, seed 001, spiked model of
// power_methods.md §3), the APM Gaussian check (Nguyen–Ene–Nguyen, seed 000,
// power_methods.md §5 check 1), the DP-PCA data (Liu–Kong–Jain–Oh, seed 002,
// dppca.md: Gaussian Remark 3.4 and Example 4.1) and the DPS-PCA sparse
// spiked model (Ge et al., seed 003, federated.md §1.6).

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Data is a synthetic data set with its ground truth.
type Data struct {
	// X holds one individual per row (n×d).
	X *mat.Dense
	// U (d×k, orthonormal columns) spans the planted top-k eigenspace of
	// the population covariance Cov; its columns are eigenvectors in the
	// order of Values.
	U *mat.Dense
	// Values are the eigenvalues of Cov belonging to the columns of U,
	// non-increasing.
	Values []float64
	// Next is the (k+1)-th eigenvalue of Cov (0 when k = d), so that the
	// eigengap is Values[k-1] − Next.
	Next float64
	// Scale is the public factor every row was divided by (1 if none).
	Scale float64
	// Clipped counts the rows that clipping to the unit ball shortened
	// (always 0 for recipes that do not clip).
	Clipped int

	cov func() *mat.SymDense
}

// Cov returns the population second-moment matrix E[x xᵀ] of the rows as
// drawn and scaled, before any clipping. (All recipes have mean zero, so it
// is the covariance.) For clipped recipes it is the target the clipped data
// approximate; Clipped says how many rows differ from the unclipped draw.
func (d *Data) Cov() *mat.SymDense { return d.cov() }

// lowRankCov returns U diag(spikes) Uᵀ + noise·I, divided by scale².
func lowRankCov(u *mat.Dense, spikes []float64, noise, scale float64) func() *mat.SymDense {
	return func() *mat.SymDense {
		d, k := u.Dims()
		c := mat.NewSymDense(d, nil)
		s2 := scale * scale
		for i := range d {
			for j := i; j < d; j++ {
				var v float64
				for l := range k {
					v += u.At(i, l) * spikes[l] * u.At(j, l)
				}
				if i == j {
					v += noise
				}
				c.SetSym(i, j, v/s2)
			}
		}
		return c
	}
}

// lowRankRow draws x = U (√spikes ∘ z) + √noise·ν with z, ν standard normal.
func lowRankRow(u *mat.Dense, spikes []float64, noise float64) func(r *rand.Rand, dst []float64) {
	d, k := u.Dims()
	sd := make([]float64, k)
	for l, s := range spikes {
		sd[l] = math.Sqrt(s)
	}
	raw := u.RawMatrix()
	sn := math.Sqrt(noise)
	return func(r *rand.Rand, dst []float64) {
		var zb [16]float64
		z := zb[:0]
		if k > len(zb) {
			z = make([]float64, 0, k)
		}
		for l := range k {
			z = append(z, sd[l]*r.NormFloat64())
		}
		for j := range d {
			v := sn * r.NormFloat64()
			urow := raw.Data[j*raw.Stride : j*raw.Stride+k]
			for l, ul := range urow {
				v += ul * z[l]
			}
			dst[j] = v
		}
	}
}

// checkSpikes validates planted eigenvalues: positive, finite, non-increasing.
func checkSpikes(recipe string, spikes []float64, d int) error {
	if len(spikes) < 1 || len(spikes) > d {
		return fmt.Errorf("synth.%s: %d spikes for d = %d; need 1 ≤ k ≤ d", recipe, len(spikes), d)
	}
	for i, s := range spikes {
		if !(s > 0) || math.IsInf(s, 1) {
			return fmt.Errorf("synth.%s: spike %d = %v; need finite values > 0", recipe, i, s)
		}
		if i > 0 && s > spikes[i-1] {
			return fmt.Errorf("synth.%s: spikes must be non-increasing, got %v > %v at index %d", recipe, s, spikes[i-1], i)
		}
	}
	return nil
}

// Spiked draws n rows x = U z + ν in R^d from the spiked covariance model
//
//	Cov = U diag(spikes) Uᵀ + noise·I_d,
//
// with U a Haar-random d×k orthonormal matrix (k = len(spikes)), z ~
// N(0, diag(spikes)) and ν ~ N(0, noise·I). The planted eigenvalues are
// spikes[i] + noise and the bulk eigenvalue is noise, so the eigengap at k is
// spikes[k-1]. spikes must be positive and non-increasing; noise ≥ 0.
//
// Hardt–Price's model N(0, (UΛ²Uᵀ+σ²I)/D) (power_methods.md §3) is
// Spiked(seed, n, d, λ²/D, σ²/D) with D = dσ² + Σλ_i².
func Spiked(seed uint64, n, d int, spikes []float64, noise float64) (*Data, error) {
	if err := checkSizes("Spiked", n, d); err != nil {
		return nil, err
	}
	if err := checkSpikes("Spiked", spikes, d); err != nil {
		return nil, err
	}
	if !(noise >= 0) || math.IsInf(noise, 1) {
		return nil, fmt.Errorf("synth.Spiked: noise = %v; need a finite variance ≥ 0", noise)
	}
	k := len(spikes)
	u := haar(newRand(seed, tagTruth, 1), d, k)
	spikes = append([]float64(nil), spikes...)
	x := mat.NewDense(n, d, nil)
	fillRows(seed, tagRows^1, x, lowRankRow(u, spikes, noise))
	vals := make([]float64, k)
	for i, s := range spikes {
		vals[i] = s + noise
	}
	next := noise
	if k == d {
		next = 0
	}
	return &Data{X: x, U: u, Values: vals, Next: next, Scale: 1, cov: lowRankCov(u, spikes, noise, 1)}, nil
}

// APMScale is s_L = 1 + √(2 ln(4n/β)), the factor the APM Gaussian recipe
// divides rows by (power_methods.md §4, Thm 1.2 with tr Σ̄² = 1).
func APMScale(n int, beta float64) float64 {
	return 1 + math.Sqrt(2*math.Log(4*float64(n)/beta))
}

// APMGaussian draws the APM Gaussian recipe of power_methods.md §5 check 1:
// rows y ~ N(0, Σ̄²) with Σ̄² = diag(4, 1, …, 1)/(d+3) (trace 1, κ̄ = 3/4),
// divided by s_L = APMScale(n, beta), then clipped to norm ≤ 1. The truth
// is v̄1 = e1; Values[0] = 4/((d+3)s_L²) and Next = 1/((d+3)s_L²).
// Needs d ≥ 2 and 0 < beta < 1.
func APMGaussian(seed uint64, n, d int, beta float64) (*Data, error) {
	if err := checkSizes("APMGaussian", n, d); err != nil {
		return nil, err
	}
	if d < 2 {
		return nil, fmt.Errorf("synth.APMGaussian: d = %d; need d ≥ 2 for a top eigenvector with a gap", d)
	}
	if !(beta > 0 && beta < 1) {
		return nil, fmt.Errorf("synth.APMGaussian: beta = %v; need a failure probability in (0, 1), e.g. 0.05", beta)
	}
	sL := APMScale(n, beta)
	top := math.Sqrt(4/float64(d+3)) / sL
	rest := math.Sqrt(1/float64(d+3)) / sL
	x := mat.NewDense(n, d, nil)
	fillRows(seed, tagRows^2, x, func(r *rand.Rand, dst []float64) {
		dst[0] = top * r.NormFloat64()
		for j := 1; j < d; j++ {
			dst[j] = rest * r.NormFloat64()
		}
	})
	clipped, _ := ClipRows(x, 1)
	eig := make([]float64, d)
	eig[0] = 4 / float64(d+3)
	for j := 1; j < d; j++ {
		eig[j] = 1 / float64(d+3)
	}
	s2 := sL * sL
	return &Data{
		X: x, U: unitColumns(d, 1), Values: []float64{eig[0] / s2}, Next: eig[1] / s2,
		Scale: sL, Clipped: clipped, cov: diagCov(eig, sL),
	}, nil
}

// Gaussian draws n rows x ~ N(0, Σ) with Σ = diag(eigenvalues), the DP-PCA
// Gaussian data (dppca.md, Remark 3.4; the experiments use Σ = diag(1, 0.5, …)).
//
// CHOICE: "diag(1, 0.5, …)" is not spelled out in dppca.md; when fewer than
// d eigenvalues are given, the last one is repeated, so Gaussian(s, n, 10,
// []float64{1, 0.5}) gives diag(1, 0.5, …, 0.5) (λ1 = 1, λ2 = 0.5, κ = 2).
// eigenvalues must be positive and non-increasing with λ1 > λ_d. The truth U
// is e1..e_k, where k is the first index with λ_k > λ_{k+1} (the top
// eigenspace separated by the first gap).
func Gaussian(seed uint64, n, d int, eigenvalues []float64) (*Data, error) {
	if err := checkSizes("Gaussian", n, d); err != nil {
		return nil, err
	}
	if len(eigenvalues) > d {
		return nil, fmt.Errorf("synth.Gaussian: %d eigenvalues for d = %d; give at most d", len(eigenvalues), d)
	}
	if err := checkSpikes("Gaussian", eigenvalues, d); err != nil {
		return nil, err
	}
	eig := make([]float64, d)
	copy(eig, eigenvalues)
	for j := len(eigenvalues); j < d; j++ {
		eig[j] = eigenvalues[len(eigenvalues)-1]
	}
	k := 0
	for k = 1; k < d && eig[k] == eig[k-1]; k++ {
	}
	if k == d {
		return nil, fmt.Errorf("synth.Gaussian: all eigenvalues equal %v; no planted direction, give a decreasing spectrum such as {1, 0.5}", eig[0])
	}
	sd := make([]float64, d)
	for j, v := range eig {
		sd[j] = math.Sqrt(v)
	}
	x := mat.NewDense(n, d, nil)
	fillRows(seed, tagRows^3, x, func(r *rand.Rand, dst []float64) {
		for j := range dst {
			dst[j] = sd[j] * r.NormFloat64()
		}
	})
	return &Data{
		X: x, U: unitColumns(d, k), Values: append([]float64(nil), eig[:k]...), Next: eig[k],
		Scale: 1, cov: diagCov(eig, 1),
	}, nil
}

// Example41 draws dppca.md's Example 4.1: x = s + ν with s = ±v (each with
// probability ½) and ν ~ N(0, σ² I_d), so Σ = v vᵀ + σ² I, λ1 = 1 + σ² and
// λ2 = σ². CHOICE: v = e1 (the paper does not fix v; the mechanisms are
// rotation-equivariant, so the basis direction loses nothing). sigma ≥ 0;
// sigma = 0 gives the noise-free two-point data.
func Example41(seed uint64, n, d int, sigma float64) (*Data, error) {
	if err := checkSizes("Example41", n, d); err != nil {
		return nil, err
	}
	if !(sigma >= 0) || math.IsInf(sigma, 1) {
		return nil, fmt.Errorf("synth.Example41: sigma = %v; need a finite noise level ≥ 0", sigma)
	}
	x := mat.NewDense(n, d, nil)
	fillRows(seed, tagRows^4, x, func(r *rand.Rand, dst []float64) {
		for j := range dst {
			dst[j] = sigma * r.NormFloat64()
		}
		if r.Uint64()&1 == 0 {
			dst[0]++
		} else {
			dst[0]--
		}
	})
	s2 := sigma * sigma
	next := s2
	if d == 1 {
		next = 0
	}
	u := unitColumns(d, 1)
	return &Data{
		X: x, U: u, Values: []float64{1 + s2}, Next: next,
		Scale: 1, cov: lowRankCov(u, []float64{1}, s2, 1),
	}, nil
}

// SparseSpiked draws the DPS-PCA benchmark model of federated.md §1.6:
// Σ = Q* diag(spikes) Q*ᵀ + I_d, where Q* (d×k, k = len(spikes)) is the Q
// factor of a Gaussian s×k block placed in rows 1..s (row-sparse with
// support size s), x ~ N(0, Σ), then x ← x/B with the public B = 2√(tr Σ)
// and clipped to the unit ball. The spec's setting is spikes = (10, 5)[:k],
// s = 10. Values are (spikes+1)/B², Next is 1/B².
func SparseSpiked(seed uint64, n, d, s int, spikes []float64) (*Data, error) {
	if err := checkSizes("SparseSpiked", n, d); err != nil {
		return nil, err
	}
	if err := checkSpikes("SparseSpiked", spikes, d); err != nil {
		return nil, err
	}
	k := len(spikes)
	if s < k || s > d {
		return nil, fmt.Errorf("synth.SparseSpiked: support size s = %d; need k = %d ≤ s ≤ d = %d", s, k, d)
	}
	block := haar(newRand(seed, tagTruth, 5), s, k)
	u := mat.NewDense(d, k, nil)
	u.Slice(0, s, 0, k).(*mat.Dense).Copy(block)
	spikes = append([]float64(nil), spikes...)
	var tr float64
	for _, v := range spikes {
		tr += v
	}
	tr += float64(d)
	b := 2 * math.Sqrt(tr)
	row := lowRankRow(u, spikes, 1)
	x := mat.NewDense(n, d, nil)
	fillRows(seed, tagRows^5, x, func(r *rand.Rand, dst []float64) {
		row(r, dst)
		for j := range dst {
			dst[j] /= b
		}
	})
	clipped, _ := ClipRows(x, 1)
	vals := make([]float64, k)
	for i, v := range spikes {
		vals[i] = (v + 1) / (b * b)
	}
	next := 1 / (b * b)
	if k == d {
		next = 0
	}
	return &Data{X: x, U: u, Values: vals, Next: next, Scale: b, Clipped: clipped, cov: lowRankCov(u, spikes, 1, b)}, nil
}

// unitColumns returns e1..e_k as a d×k matrix.
func unitColumns(d, k int) *mat.Dense {
	u := mat.NewDense(d, k, nil)
	for j := range k {
		u.Set(j, j, 1)
	}
	return u
}

// diagCov returns diag(eig)/scale².
func diagCov(eig []float64, scale float64) func() *mat.SymDense {
	return func() *mat.SymDense {
		c := mat.NewSymDense(len(eig), nil)
		for j, v := range eig {
			c.SetSym(j, j, v/(scale*scale))
		}
		return c
	}
}
