package worker

import "syscall"

// sysProcAttr puts the worker in its own process group, so a Ctrl-C in the
// terminal (or jupyter_client's killpg in signal mode) reaches only the
// kernel, which turns it into an interrupt; and kills the worker if the
// kernel dies without closing its pipes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
