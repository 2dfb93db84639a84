//go:build !unix

package main

import (
	"os/exec"
	"time"
)

// ownGroup: without process groups, cancelling kills go itself only.
func ownGroup(cmd *exec.Cmd) { cmd.WaitDelay = 10 * time.Second }
