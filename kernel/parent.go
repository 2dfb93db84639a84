package kernel

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"
)

// parentPollInterval is how often the kernel checks that its front end is
// still there (ipykernel polls once a second too).
const parentPollInterval = time.Second

// parentPIDEnv is the variable jupyter_client sets to its own pid in the
// environment of every kernel it starts.
const parentPIDEnv = "JPY_PARENT_PID"

// parentWatch decides when the process that started the kernel is gone. A
// kernel whose front end was killed (kill -9 of jupyter console, a crashed
// notebook server) would otherwise run on as an orphan for good, with its
// worker and the state database open.
type parentWatch struct {
	pid   int // the watched process (JPY_PARENT_PID or Config.ParentPID)
	ppid0 int // os.Getppid() when the watch started
}

// newParentWatch returns the watch for Config.ParentPID, or nil when there
// is nothing to watch: a negative ParentPID, no (valid) JPY_PARENT_PID, or
// pid 1 (init, which never goes away; a kernel started by it is a daemon).
func newParentWatch(configured int) *parentWatch {
	pid := configured
	if pid == 0 {
		pid, _ = strconv.Atoi(strings.TrimSpace(os.Getenv(parentPIDEnv)))
	}
	if pid <= 1 {
		return nil
	}
	w := &parentWatch{pid: pid, ppid0: os.Getppid()}
	if w.pid != w.ppid0 && !processAlive(w.pid) {
		// A stale JPY_PARENT_PID inherited from an earlier Jupyter session
		// (a kernel started by hand from a Jupyter terminal): the process
		// was never our front end, so only the parent itself is watched.
		w.pid = w.ppid0
	}
	return w
}

// gone reports, with the reason, whether the front end has ended: the
// kernel was re-parented (to init or a subreaper), which is what happens
// when its parent dies, or the watched process no longer exists.
func (w *parentWatch) gone() (string, bool) {
	if w.ppid0 > 1 {
		if now := os.Getppid(); now != w.ppid0 {
			return "parent process " + strconv.Itoa(w.ppid0) + " exited (the kernel now belongs to process " + strconv.Itoa(now) + ")", true
		}
	}
	if w.pid != w.ppid0 && !processAlive(w.pid) {
		return "process " + strconv.Itoa(w.pid) + " (" + parentPIDEnv + ") exited", true
	}
	return "", false
}

// watchParent polls w until the front end is gone or ctx ends; it closes
// gone in the first case.
func (k *Kernel) watchParent(ctx context.Context, w *parentWatch, gone chan<- struct{}) {
	t := time.NewTicker(parentPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if why, ok := w.gone(); ok {
			k.log.Printf("%s: shutting down", why)
			close(gone)
			return
		}
	}
}
