package synthdp

// The tree model fitted to MST's noisy marginals, and sampling from it:
// post-processing of the releases (see mst.go).

import (
	"math"
	"math/rand/v2"
)

// Model is a tree-structured distribution over the plan's columns' cells:
// Parent[j] is column j's parent (−1 for the root, column 0), Tables[0]
// the root's marginal and Tables[j] for j > 0 the conditional P(j | parent)
// row-major, one row of Sizes[j] probabilities per cell of the parent.
type Model struct {
	Sizes  []int
	Parent []int
	Tables [][]float64
}

// Fit makes the measured marginals consistent and returns the tree model
// (post-processing: m and the plan's public fields only).
func (p *Plan) Fit(m *Measured) *Model {
	r := len(p.Cols)
	sizes := make([]int, r)
	for i, c := range p.Cols {
		sizes[i] = c.Size()
	}
	// Each column's marginal: the inverse-variance average of its own
	// noisy counts (variance σ₁² per cell) and its edges' margins
	// (variance k_other·σ₂² per cell), clipped and normalised.
	v1 := max(p.One.Sigma*p.One.Sigma, math.SmallestNonzeroFloat64)
	v2 := max(p.Two.Sigma*p.Two.Sigma, math.SmallestNonzeroFloat64)
	node := make([][]float64, r)
	for i := range r {
		acc := make([]float64, sizes[i])
		for c, x := range m.One[i] {
			acc[c] = x / v1
		}
		w := 1 / v1
		for e, edge := range m.Edges {
			if edge.A != i && edge.B != i {
				continue
			}
			other := edge.A + edge.B - i
			wv := 1 / (float64(sizes[other]) * v2)
			for c, x := range margin(m.Two[e], sizes[edge.A], sizes[edge.B], i == edge.A) {
				acc[c] += x * wv
			}
			w += wv
		}
		for c := range acc {
			acc[c] /= w
		}
		node[i] = normalised(acc)
	}
	// Each edge's joint, fitted to its columns' marginals.
	joint := make([][]float64, len(m.Edges))
	for e, edge := range m.Edges {
		joint[e] = fitEdge(m.Two[e], node[edge.A], node[edge.B])
	}
	// Orient the tree from column 0.
	md := &Model{Sizes: sizes, Parent: make([]int, r), Tables: make([][]float64, r)}
	for i := range md.Parent {
		md.Parent[i] = -2
	}
	md.Parent[0] = -1
	md.Tables[0] = node[0]
	queue := []int{0}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for e, edge := range m.Edges {
			var b int
			switch a {
			case edge.A:
				b = edge.B
			case edge.B:
				b = edge.A
			default:
				continue
			}
			if md.Parent[b] != -2 {
				continue
			}
			md.Parent[b] = a
			md.Tables[b] = conditional(joint[e], sizes[edge.A], sizes[edge.B], a == edge.A, node[b])
			queue = append(queue, b)
		}
	}
	for b := range md.Parent { // unreachable with r−1 edges joining components; kept total
		if md.Parent[b] == -2 {
			md.Parent[b] = -1
			md.Tables[b] = node[b]
		}
	}
	return md
}

// margin sums a row-major ka×kb table over B (rows=true, A's margin) or
// over A (B's margin).
func margin(t []float64, ka, kb int, rows bool) []float64 {
	var out []float64
	if rows {
		out = make([]float64, ka)
	} else {
		out = make([]float64, kb)
	}
	for a := range ka {
		for b := range kb {
			if rows {
				out[a] += t[a*kb+b]
			} else {
				out[b] += t[a*kb+b]
			}
		}
	}
	return out
}

// fitEdge clips the noisy table at 0, normalises it and fits it by
// iterative proportional fitting to the margins pa (rows) and pb
// (columns); a row or column with no mass left is spread evenly first,
// so that every positive margin can be met.
func fitEdge(t, pa, pb []float64) []float64 {
	ka, kb := len(pa), len(pb)
	j := normalised(t)
	floor := 1e-9 / float64(ka*kb)
	for i := range j {
		j[i] += floor
	}
	for range fitIters {
		for a := range ka {
			s := 0.0
			for b := range kb {
				s += j[a*kb+b]
			}
			for b := range kb {
				j[a*kb+b] *= pa[a] / s
			}
		}
		cols := margin(j, ka, kb, false)
		for a := range ka {
			for b := range kb {
				if cols[b] > 0 {
					j[a*kb+b] *= pb[b] / cols[b]
				}
			}
		}
	}
	return j
}

// conditional returns P(child | parent) from the joint (row-major ka×kb)
// with the parent being A (parentIsA) or B; a parent cell without mass
// gets the child's marginal.
func conditional(joint []float64, ka, kb int, parentIsA bool, child []float64) []float64 {
	kp, kc := ka, kb
	if !parentIsA {
		kp, kc = kb, ka
	}
	out := make([]float64, kp*kc)
	for x := range kp {
		s := 0.0
		for y := range kc {
			v := joint[x*kb+y]
			if !parentIsA {
				v = joint[y*kb+x]
			}
			out[x*kc+y] = v
			s += v
		}
		for y := range kc {
			if s > 0 {
				out[x*kc+y] /= s
			} else {
				out[x*kc+y] = child[y]
			}
		}
	}
	return out
}

// Sample draws n rows of cells from the model with the public generator
// seeded by seed: the root from its marginal, every other column from its
// conditional given its parent's cell. It reads no private value.
func (md *Model) Sample(n int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	order := md.order()
	out := make([][]int, n)
	for i := range out {
		row := make([]int, len(md.Sizes))
		for _, j := range order {
			t := md.Tables[j]
			if p := md.Parent[j]; p >= 0 {
				t = t[row[p]*md.Sizes[j] : (row[p]+1)*md.Sizes[j]]
			}
			row[j] = draw(t, rng.Float64())
		}
		out[i] = row
	}
	return out
}

// order lists the columns parents first.
func (md *Model) order() []int {
	var out []int
	done := make([]bool, len(md.Parent))
	for len(out) < len(md.Parent) {
		for j, p := range md.Parent {
			if !done[j] && (p < 0 || done[p]) {
				done[j] = true
				out = append(out, j)
			}
		}
	}
	return out
}

// draw returns the cell whose cumulative probability first exceeds u·total.
func draw(p []float64, u float64) int {
	t := 0.0
	for _, x := range p {
		t += x
	}
	u *= t
	for i, x := range p {
		if u < x {
			return i
		}
		u -= x
	}
	return len(p) - 1
}
