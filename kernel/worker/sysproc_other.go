//go:build !linux

package worker

import "syscall"

func sysProcAttr() *syscall.SysProcAttr {
	return DieWithParent(&syscall.SysProcAttr{Setpgid: true})
}

// setPdeathsig does nothing: only Linux has a parent-death signal, and
// the lifeline serves alone (see lifeline.go).
func setPdeathsig(*syscall.SysProcAttr) {}
