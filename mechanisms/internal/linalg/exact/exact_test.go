package exact

import "testing"

func TestWithin(t *testing.T) {
	e := New(2)
	e.Add(0, 1, 3)       // 3
	e.Add(0, -0.5, 2)    // −1
	e.Add(1, 0x1p-60, 1) // 2^-60
	if bad, _ := e.Within([]float64{2, 0x1p-60}, 0); bad != -1 {
		t.Errorf("exact values flagged at entry %d", bad)
	}
	// Entry 0: error 2^-50 against majorant 4; γ = 2^-53 allows 2^-51.
	if bad, worst := e.Within([]float64{2 + 0x1p-50, 0x1p-60}, 0x1p-53); bad != 0 || worst != 0x1p-52 {
		t.Errorf("Within = (%d, %v), want (0, 2^-52)", bad, worst)
	}
	if bad, _ := e.Within([]float64{2 + 0x1p-50, 0x1p-60}, 0x1p-52); bad != -1 {
		t.Errorf("error at the bound flagged at entry %d", bad)
	}
}

func TestQuo(t *testing.T) {
	e := New(1)
	e.Add(0, 1)
	e.Quo(3)
	// fl(1/3) is within half an ulp (2^-55 relative to 1/3's ulp scale).
	if bad, worst := e.Within([]float64{1.0 / 3}, 0x1p-53); bad != -1 || worst == 0 {
		t.Errorf("1/3: Within = (%d, %v), want a small non-zero error inside 2^-53", bad, worst)
	}
}
