//go:build !unix

package benchrun

import "math"

// processCPU is unknown on this platform.
func processCPU() float64 { return math.NaN() }
