package syntax_test

import (
	"fmt"

	"github.com/privnotes/privnotes/dsl/syntax"
)

func ExampleTranslate() {
	cell := `ds := dataset("census")
budget eps=1.0, delta=1e-6 {
	pca := private_pca(ds, k=3, eps=0.7, delta=1e-6)
}
show(pca)`
	p, err := syntax.Translate("cell[1]", cell)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Go)
	for _, b := range p.Blocks {
		fmt.Printf("block at %d:%d caps ε=%g δ=%g\n", b.Line, b.Col, b.Eps, b.Delta)
		for _, c := range b.Calls {
			fmt.Printf("  %s on %q costs ε=%g δ=%g (static %v)\n", c.Func, c.Dataset, c.Eps, c.Delta, c.Static)
		}
	}
	_, err = syntax.Translate("cell[2]", `private_pca(ds, epsilon=1)`)
	fmt.Println(err)
	// Output:
	// ds := dataset("census")
	// __pn_budget_begin(1.0, 1e-06, "cell[1]:2:1");
	// 	pca := private_pca(ds, __pn_kw("k", 3), __pn_kw("eps", 0.7), __pn_kw("delta", 1e-6), __pn_block("cell[1]:2:1"))
	// __pn_budget_end()
	// show(pca)
	// block at 2:1 caps ε=1 δ=1e-06
	//   private_pca on "census" costs ε=0.7 δ=1e-06 (static true)
	// line 1:17: unknown keyword "epsilon" for private_pca; valid keywords: k, eps, delta, method, iters, calibration, neighbour, clip, providers, sparsity, pad, gap, center, center_share, dry_run, name
}
