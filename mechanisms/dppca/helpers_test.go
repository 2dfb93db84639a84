package dppca

import (
	"math"
	"os"
	"slices"
)

// long reports whether the larger statistical runs are requested.
func long() bool { return os.Getenv("PRIVNOTES_LONG") == "1" }

func sqrt(x float64) float64 { return math.Sqrt(math.Max(x, 0)) }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
