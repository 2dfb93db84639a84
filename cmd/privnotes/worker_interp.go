//go:build !fakeengine

package main

import (
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
)

func init() {
	newWorkerEngine = func(stateDir string) (engine.Engine, error) {
		return interp.New(interp.Config{StateDir: stateDir})
	}
}
