//go:build fakeengine

package main

import (
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/kernel/enginetest"
)

// Built with -tags fakeengine, the worker serves the scripted test engine
// of kernel/enginetest instead of the interpreter; only the kernel's tests
// do this.
func init() {
	newWorkerEngine = func(string) (engine.Engine, error) { return enginetest.New(), nil }
}
