package runtime

import (
	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// costFor is the event a private call should charge, from the function,
// its method and calibration keywords and its (ε, δ), written out per
// mechanism from the papers' accounting: the tests' oracle for the plans'
// costs (the pre-check takes a call's cost from its plan, so only an
// independent statement catches a plan that charges the wrong event). ok
// is false when the call is refused (for example a private_mean without
// δ, which the call itself refuses).
//
// calibration is "" when the call gives none; for DP-PCA and private Oja
// the calibration then follows the dataset's accountant (mode, "" when
// unknown; see dppcaCalibration). Under basic and advanced composition an
// event counts as its (ε, δ) target whatever its kind, so an unknown mode
// taken as zcdp gives the same check.
func costFor(fn, method, calibration, mode string, eps, delta float64) (accounting.Event, bool) {
	if !(eps > 0) || !(delta >= 0 && delta < 1) {
		return accounting.Event{}, false
	}
	gaussian := delta > 0
	// The dataset's Gaussian calls are calibrated to exact GDP under the
	// gdp accountant (release.gaussianCalibration), to zCDP otherwise.
	gaussianFor := accounting.GaussianZcdpFor
	if mode == accounting.ModeGDP.String() {
		gaussianFor = accounting.GdpFor
	}
	var ev accounting.Event
	switch fn {
	case catalog.PrivateCount.Name: // with or without by=: δ chooses the noise
		if gaussian {
			ev = gaussianFor(eps, delta)
		} else {
			ev = accounting.Pure(eps)
		}
	case catalog.PrivateSum.Name, catalog.PrivateHistogram.Name: // δ chooses the noise, as for private_count
		if gaussian {
			ev = gaussianFor(eps, delta)
		} else {
			ev = accounting.Pure(eps)
		}
	case catalog.PrivateQuantile.Name: // the exponential mechanism: ε-bounded range (pure ε), δ must be 0
		if gaussian {
			return ev, false
		}
		ev = accounting.BoundedRange(eps)
	case catalog.PrivateMean.Name: // with δ every form (columns=, col=, by=) is one zCDP event at RhoForTarget(ε, δ); without, col= (method "col") is pure ε and columns= is refused
		switch {
		case gaussian:
			ev = gaussianFor(eps, delta)
		case method == "col":
			ev = accounting.Pure(eps)
		default:
			return ev, false
		}
	case catalog.PrivateClassifyJL.Name: // variant pool: the exponential mechanism, ε-bounded range (δ must be 0); fedrep-jl: FedRep's zCDP (δ > 0); the plan refuses the other pairs
		if gaussian {
			ev = accounting.ZcdpFor(eps, delta)
		} else {
			ev = accounting.BoundedRange(eps)
		}
	case catalog.PrivateLowRank.Name: // δ > 0: the Gaussian run (as ppm-entry); δ = 0: the Laplace variant, pure ε
		switch {
		case !gaussian:
			ev = accounting.Pure(eps)
		case calibration == "paper":
			ev = accounting.Approx(eps, delta)
		default:
			ev = accounting.GaussianZcdpFor(eps, delta)
		}
	case catalog.PrivateFedRep.Name:
		if !gaussian {
			return ev, false
		}
		if calibration == "paper" {
			ev = accounting.GdpFor(eps, delta)
		} else {
			ev = accounting.ZcdpFor(eps, delta)
		}
	case catalog.PrivateSynthesize.Name: // Gaussian releases and r−1 selections, one zCDP event at ρ*(ε, δ) (exact GDP on gdp datasets); rows and bins never change it
		if !gaussian {
			return ev, false
		}
		ev = gaussianFor(eps, delta)
	case catalog.PrivateLinearRegression.Name, catalog.PrivateLogisticRegression.Name: // Gaussian releases only (δ > 0), one zCDP event at ρ*(ε, δ), exact GDP on gdp datasets; iters splits it, never adds
		if !gaussian {
			return ev, false
		}
		ev = gaussianFor(eps, delta)
	case catalog.PrivatePCA.Name: // center=true (gauss, npm, adaptive, auto) charges the uncentred event: the private mean takes its share of the same ρ (μ*²/2)
		if !gaussian {
			return ev, false
		}
		switch method {
		case "dppca", "oja-shuffle": // oja-shuffle: always (ε, δ), the shuffling bound
			ev = accounting.Approx(eps, delta)
		case "oja":
			paper := calibration == "paper"
			if calibration == "" && mode != "" && mode != accounting.ModeZCDP.String() && mode != accounting.ModeGDP.String() {
				paper = release.PaperEpsOK("oja", eps)
			}
			if paper {
				ev = accounting.Approx(eps, delta)
			} else {
				ev = accounting.GdpFor(eps, delta)
			}
		case "npm", "gauss", "auto", "ppm-entry": // auto is gauss or npm (on a matrix dataset ppm-entry, which the caller names); all are Gaussian compositions
			switch {
			case calibration == "paper":
				ev = accounting.Approx(eps, delta)
			case method != "ppm-entry":
				ev = gaussianFor(eps, delta) // exact GDP on gdp datasets (release.pcaGaussianCalibration)
			default:
				ev = accounting.GaussianZcdpFor(eps, delta)
			}
		default: // adaptive (a sparse-vector step, also with gap="auto"; exact GDP on gdp datasets, release.pcaGaussianCalibration), federated
			switch {
			case calibration == "paper":
				ev = accounting.Approx(eps, delta)
			case method == "adaptive" && mode == accounting.ModeGDP.String():
				ev = accounting.GdpFor(eps, delta)
			default:
				ev = accounting.ZcdpFor(eps, delta)
			}
		}
	default:
		return ev, false
	}
	ev.Mechanism = fn
	return ev, ev.Validate() == nil
}

// staticPCAMethod is the method a private_pca call with the method
// keyword method runs on a dataset of schema sc, as costFor names it: auto runs
// ppm-entry on a matrix dataset (calibrated in zCDP under every
// accountant), gauss or npm otherwise.
func staticPCAMethod(method string, sc ledger.Schema) string {
	if method == "auto" && sc.IsMatrix() {
		return "ppm-entry"
	}
	return method
}
