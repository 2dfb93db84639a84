package interp

import (
	"sync"
	"unsafe"
)

// Which cell does a goroutine belong to? The runtime charges a private call
// to the cell running now, so a goroutine that an earlier cell started must
// not be taken for the running cell. Go gives every goroutine the pprof
// label set of the goroutine that created it, at creation, whatever the
// go statement looks like (`go func(){…}()`, `go f(x)`, a goroutine a
// compiled package starts) and however deep the nesting. runChunk runs
// each chunk under a label set of its own (a fresh allocation per chunk),
// so the identity of the label set a goroutine carries names the chunk, and
// hence the cell, whose goroutines started it. The engine records the label
// sets of the running cell's chunks; Cell.InCell compares the calling
// goroutine's set with them. Only pointer identity is used, never the
// layout behind the pointer, and a label set stays allocated while any
// goroutine carries it, so a later chunk cannot reuse its address.
//
// The label set is read with runtime/pprof's own accessor, which the Go
// runtime keeps stable for external users (go.dev/issue/67401: "Do not
// remove or change the type signature").

//go:linkname profLabel runtime/pprof.runtime_getProfLabel
func profLabel() unsafe.Pointer

// cellLabels is the set of label sets of the running cell's chunks.
type cellLabels struct {
	mu   sync.Mutex
	sets map[unsafe.Pointer]bool
}

// add records the calling goroutine's label set as one of the running
// cell's (called by runChunk under the chunk's labels).
func (c *cellLabels) add() {
	p := profLabel()
	if p == nil {
		return
	}
	c.mu.Lock()
	if c.sets == nil {
		c.sets = map[unsafe.Pointer]bool{}
	}
	c.sets[p] = true
	c.mu.Unlock()
}

// reset forgets the label sets: no goroutine belongs to a running cell.
func (c *cellLabels) reset() {
	c.mu.Lock()
	c.sets = nil
	c.mu.Unlock()
}

// has reports whether the calling goroutine carries a label set of the
// running cell's chunks.
func (c *cellLabels) has() bool {
	p := profLabel()
	if p == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sets[p]
}
