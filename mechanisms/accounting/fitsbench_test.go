package accounting

import "testing"

// BenchmarkFitsNow is the search every receipt runs after its charge. Each
// iteration spends a little first, as a run of calls does, so that the
// totals (and the searches' midpoints, which RhoForTarget memoizes) differ
// from one search to the next.
func BenchmarkFitsNow(b *testing.B) {
	for _, mode := range []Mode{ModeZCDP, ModeGDP, ModeRDP, ModeBasic} {
		b.Run(mode.String(), func(b *testing.B) {
			a, err := NewAccountant(mode, Budget{Eps: 1000, Delta: 1e-5})
			if err != nil {
				b.Fatal(err)
			}
			spend := Pure(0.1)
			if mode == ModeGDP {
				spend = GdpFor(0.1, 1e-9)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := a.Spend(spend); err != nil {
					b.Fatal(err)
				}
				a.FitsNow()
			}
		})
	}
}
