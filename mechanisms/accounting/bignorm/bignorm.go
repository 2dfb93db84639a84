// Package bignorm evaluates the normal distribution, exp and the exact
// privacy curves of the Gaussian and discrete Gaussian mechanisms in
// math/big, for tests: an independent, high-precision computation that the
// float64 accounting (mechanisms/accounting) and the noise calibration
// (mechanisms/noise) are checked against. It shares no code with them.
// Only tests import it (like net/http/httptest): it is slow by design.
package bignorm

import (
	"math"
	"math/big"
)

// Prec is the working precision in bits: every value a test asks for
// (|x| ≤ 12 in Phi, e^ε with ε ≤ 40) keeps well over 100 correct bits.
const Prec = 400

// piDigits is π to 100 decimal places.
const piDigits = "3.1415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679"

var sqrtPi, sqrt2 *big.Float

func init() {
	p, _, err := big.ParseFloat(piDigits, 10, Prec, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	sqrtPi = New(0).Sqrt(p)
	sqrt2 = New(0).Sqrt(New(2))
}

// New returns x at precision Prec.
func New(x float64) *big.Float { return new(big.Float).SetPrec(Prec).SetFloat64(x) }

// Exp returns e^x by argument halving and a Taylor series.
func Exp(x *big.Float) *big.Float {
	if x.Sign() == 0 {
		return New(1)
	}
	r := New(0).Set(x)
	k := 0
	for r.MantExp(nil) > -12 { // |r| < 2^-12
		r.Quo(r, New(2))
		k++
	}
	sum, term := New(1), New(1)
	for n := 1; n < 60; n++ {
		term.Mul(term, r)
		term.Quo(term, New(float64(n)))
		sum.Add(sum, term)
	}
	for ; k > 0; k-- {
		sum.Mul(sum, sum)
	}
	return sum
}

// Phi returns the standard normal distribution function Φ(x) for
// |x| ≤ 12, from the Taylor series of erf (whose terms stay below 2^110
// there, far inside the precision). It panics outside that range.
func Phi(x *big.Float) *big.Float {
	if f, _ := x.Float64(); math.Abs(f) > 12 {
		panic("bignorm: Phi needs |x| <= 12")
	}
	t := New(0).Quo(x, sqrt2)
	t2 := New(0).Mul(t, t)
	sum := New(0)
	pow := New(0).Set(t) // t^(2n+1)/n!
	for n := 0; n < 1000; n++ {
		term := New(0).Quo(pow, New(float64(2*n+1)))
		if n%2 == 1 {
			term.Neg(term)
		}
		sum.Add(sum, term)
		pow.Mul(pow, t2)
		pow.Quo(pow, New(float64(n+1)))
		if n > 4 && pow.Sign() != 0 && pow.MantExp(nil) < -Prec-16 {
			break
		}
	}
	sum.Mul(sum, New(2))
	sum.Quo(sum, sqrtPi) // erf(x/√2)
	sum.Add(sum, New(1))
	return sum.Quo(sum, New(2))
}

// GDPDelta returns δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2), the exact
// privacy profile of μ-GDP (Dong, Roth and Su 2022, Cor. 2.13), for
// arguments with |ε/μ| + μ/2 ≤ 12.
func GDPDelta(mu, eps float64) *big.Float {
	m, e := New(mu), New(eps)
	q := New(0).Quo(e, m)
	h := New(0).Quo(m, New(2))
	a := Phi(New(0).Sub(h, q))
	b := Phi(New(0).Neg(New(0).Add(q, h)))
	b.Mul(b, Exp(e))
	return a.Sub(a, b)
}

// DiscreteGaussian is N_Z(0, S²): P(z) ∝ exp(−z²/(2S²)) on the integers,
// with its support truncated at |z| ≤ 60·S (the mass beyond is below
// e^{-1800}, far under the precision).
type DiscreteGaussian struct {
	S    float64
	k    int
	tail []*big.Float // tail[i] = P[Y ≥ i − k]
}

// NewDiscreteGaussian tabulates the tails of N_Z(0, S²).
func NewDiscreteGaussian(S float64) *DiscreteGaussian {
	k := int(60 * S)
	w := make([]*big.Float, 2*k+1)
	total := New(0)
	for i := range w {
		z := float64(i - k)
		w[i] = Exp(New(-z * z / (2 * S * S)))
		total.Add(total, w[i])
	}
	d := &DiscreteGaussian{S: S, k: k, tail: make([]*big.Float, 2*k+2)}
	acc := New(0)
	d.tail[2*k+1] = New(0)
	for i := 2 * k; i >= 0; i-- {
		acc.Add(acc, w[i])
		d.tail[i] = New(0).Quo(acc, total)
	}
	return d
}

// TailGE returns P[Y ≥ j].
func (d *DiscreteGaussian) TailGE(j int) *big.Float {
	switch i := j + d.k; {
	case i <= 0:
		return New(1)
	case i >= len(d.tail):
		return New(0)
	default:
		return New(0).Set(d.tail[i])
	}
}

// Delta returns the exact δ(ε) of the discrete Gaussian mechanism with
// integer sensitivity v ≥ 1 (Canonne, Kamath and Steinke 2020, Thm 7):
// δ = P[Y > εS²/v − v/2] − e^ε·P[Y > εS²/v + v/2].
func (d *DiscreteGaussian) Delta(v int, eps float64) *big.Float {
	c := eps * d.S * d.S / float64(v)
	a := d.TailGE(int(math.Floor(c-float64(v)/2)) + 1)
	b := d.TailGE(int(math.Floor(c+float64(v)/2)) + 1)
	b.Mul(b, Exp(New(eps)))
	return a.Sub(a, b)
}
