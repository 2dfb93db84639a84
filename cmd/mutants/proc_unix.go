//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"time"
)

// ownGroup runs cmd in a process group of its own, so that cancelling it
// (an interrupt, a run past its deadline) ends the test binaries go test
// started as well as go itself, and nothing else.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
}
