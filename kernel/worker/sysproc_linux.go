package worker

import "syscall"

// sysProcAttr puts the worker in its own process group, so a Ctrl-C in the
// terminal (or jupyter_client's killpg in signal mode) reaches only the
// kernel, which turns it into an interrupt; and kills the worker if the
// kernel dies, even in the middle of a cell (see lifeline.go).
func sysProcAttr() *syscall.SysProcAttr {
	return DieWithParent(&syscall.SysProcAttr{Setpgid: true})
}

func setPdeathsig(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
