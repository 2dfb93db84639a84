package release

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/regression"
)

// TestRegressionFitEncoding: a linear fit's map back (centres and
// half-widths) survives the stored encoding, so a named call's replay
// gives the same intervals; a fit stored before the rows were unit-scaled
// (eight fit numbers, no fit_scales) decodes with every scale 1, which is
// the map it was fitted with.
func TestRegressionFitEncoding(t *testing.T) {
	v := &Regression{Model: "linear", Coef: []float64{0.5, -2}, Intercept: 3, Ridge: 7,
		Fit: &regression.LinearFit{R2: 0.25, ResidualStd: 1.5, N: 100, YY: 40, Ridge: 7, SigmaXX: 2, SigmaXY: 3,
			XX: []float64{100, 1, 2, 30, 4, 30}, XY: []float64{5, 6, 7}, Theta: []float64{0.1, 0.2, 0.3},
			Centres: []float64{35, 0.5}, Scales: []float64{35, 0.5}, CentreY: 25, ScaleY: 25}}
	enc, _, err := Encode(v, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Errorf("round trip: %+v, want %+v", got.(*Regression).Fit, v.Fit)
	}
	// The legacy form: drop ScaleY from "fit" and leave out fit_scales.
	legacy := *v.Fit
	legacy.Scales, legacy.ScaleY = nil, 0
	old := &Regression{Model: "linear", Coef: v.Coef, Intercept: v.Intercept, Ridge: v.Ridge, Fit: &legacy}
	enc, _, err = Encode(old, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	// Scales nil is left out of the encoding; ScaleY is fit's last number.
	if bytes.Contains(enc, []byte("fit_scales")) {
		t.Fatalf("nil scales encoded: %s", enc)
	}
	enc = bytes.Replace(enc, []byte(`,25,0],"fit_centres"`), []byte(`,25],"fit_centres"`), 1)
	got, _, err = Decode(enc)
	if err != nil {
		t.Fatalf("legacy %s: %v", enc, err)
	}
	f := got.(*Regression).Fit
	if f == nil || f.ScaleY != 1 || !reflect.DeepEqual(f.Scales, []float64{1, 1}) || f.CentreY != 25 {
		t.Errorf("legacy fit decodes as %+v (from %s), want scales 1", f, enc)
	}
}
