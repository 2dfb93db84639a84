package synth_test

import (
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/synth"
)

// The APM Gaussian recipe: n rows in R^20, scaled by s_L and clipped to the
// unit ball; the truth is e1 with eigengap ratio λ1/λ2 = 4.
func ExampleAPMGaussian() {
	data, err := synth.APMGaussian(1, 10000, 20, 0.05)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, d := data.X.Dims()
	fmt.Printf("%d×%d rows, s_L = %.3f, λ1/λ2 = %.0f, v1 = e1: %v\n",
		n, d, data.Scale, data.Values[0]/data.Next, data.U.At(0, 0) == 1)
	// Output:
	// 10000×20 rows, s_L = 6.214, λ1/λ2 = 4, v1 = e1: true
}
