package worker

import (
	"os"
	"syscall"
)

// A process that runs cells must not outlive the process that started it.
// A script whose "privnotes run" was killed would otherwise go on charging
// the budget with nobody left to read what it released, and a kernel's
// worker would do the same for a cell that was running when the kernel
// died. Two mechanisms stop such an orphan, either one enough alone:
//
//   - On Linux the child asks to be sent SIGKILL when its parent dies
//     (PR_SET_PDEATHSIG through SysProcAttr.Pdeathsig). Go's fork sets it
//     before exec and then compares the parent's pid with the one it had,
//     so a parent that died during the fork is caught too. The signal
//     follows the thread that forked, not the process; Go ends a thread
//     only when a goroutine locked to it (runtime.LockOSThread) exits, and
//     nothing in the parents locks threads.
//   - Everywhere, a lifeline: a pipe whose write end only the parent holds
//     and never writes to. The child reads its end in a goroutine of its
//     own and exits when the read returns, which happens when the last
//     copy of the write end closes: when the parent dies, however it dies.
//     The kernel's worker needs no extra pipe: the kernel's request pipe
//     (fd 3) is one, and Serve returns at its EOF without waiting for the
//     cells that still run.

// ExitOrphaned is the exit status of a child that noticed its parent died.
// Nobody waits for it; it tells it apart from a crash in a process table.
const ExitOrphaned = 5

// DieWithParent makes a child started with attr get SIGKILL when its
// parent dies, where the operating system can (Linux); elsewhere it
// returns attr unchanged, and the lifeline alone serves.
func DieWithParent(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	setPdeathsig(attr)
	return attr
}

// NewLifeline returns a pipe for a child: pass child to it (for example as
// one of exec.Cmd's ExtraFiles) and close it after the start; keep parent
// open for as long as the child may run. The descriptors are close-on-exec,
// so no other child inherits the write end.
func NewLifeline() (child, parent *os.File, err error) {
	return os.Pipe()
}

// WatchLifeline reads f, the child's end of a lifeline, in a goroutine of
// its own and calls orphaned once the parent's end is closed (EOF) or the
// read fails. The parent never writes, so any data read is ignored.
func WatchLifeline(f *os.File, orphaned func()) {
	go func() {
		var b [1]byte
		for {
			// A read error is as good as an EOF: the pipe can no
			// longer tell that the parent lives.
			if _, err := f.Read(b[:]); err != nil {
				orphaned()
				return
			}
		}
	}()
}
