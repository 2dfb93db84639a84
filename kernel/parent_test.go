package kernel

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/kernel/enginetest"
)

// startSleeper starts a process that stands for a front end.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestNewParentWatch(t *testing.T) {
	front := startSleeper(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ppid := os.Getppid()
	tests := []struct {
		name       string
		configured int
		env        string
		want       int // watched pid, 0: no watch
	}{
		{"off", -1, strconv.Itoa(front.Process.Pid), 0},
		{"no JPY_PARENT_PID", 0, "", 0},
		{"not a number", 0, "abc", 0},
		{"init is never watched", 0, "1", 0},
		{"from the environment", 0, strconv.Itoa(front.Process.Pid), front.Process.Pid},
		{"configured wins", front.Process.Pid, "abc", front.Process.Pid},
		{"the parent itself", 0, strconv.Itoa(ppid), ppid},
		{"stale pid: watch the parent", 0, strconv.Itoa(dead.Process.Pid), ppid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(parentPIDEnv, tt.env)
			w := newParentWatch(tt.configured)
			switch {
			case tt.want == 0 && w != nil:
				t.Fatalf("watch of %d, want none", w.pid)
			case tt.want != 0 && w == nil:
				t.Fatalf("no watch, want one of %d", tt.want)
			case w != nil && w.pid != tt.want:
				t.Fatalf("watches %d, want %d", w.pid, tt.want)
			}
			if w != nil {
				if why, gone := w.gone(); gone {
					t.Fatalf("a live front end counts as gone: %s", why)
				}
			}
		})
	}
}

// TestKernelExitsWhenParentDies runs the kernel in process with a watched
// front end and kills that front end. The kernel must not stop while the
// front end lives (it is watched over two and a half poll intervals, in
// which a watch that took a live front end for gone would have stopped
// it; a loaded machine can only make it poll less often there, never fail
// the test), and must stop after the kill because of the watch, as its log
// says. The wait for the stop is bounded only by hang: a kernel that
// does not watch never stops, and fails.
func TestKernelExitsWhenParentDies(t *testing.T) {
	front := startSleeper(t)
	c := startKernelWith(t, Config{Engine: enginetest.New(), ParentPID: front.Process.Pid})
	select {
	case <-c.kernelDone:
		t.Fatalf("the kernel stopped while its front end was alive; log:\n%s", c.log.String())
	case <-time.After(parentPollInterval*2 + parentPollInterval/2):
	}
	if r := c.reply(c.ctlIn, c.send(c.control, c.signer, "kernel_info_request", map[string]any{}), hang); r["status"] != "ok" {
		t.Fatalf("kernel_info while the front end lives: %v", r)
	}
	front.Process.Kill()
	killed := time.Now()
	select {
	case <-c.kernelDone:
		t.Logf("kernel stopped %v after its front end was killed", time.Since(killed).Round(time.Millisecond))
	case <-time.After(hang):
		t.Fatalf("the kernel did not stop within %v of its front end's death", hang)
	}
	want := "process " + strconv.Itoa(front.Process.Pid) + " (JPY_PARENT_PID) exited: shutting down"
	if !strings.Contains(c.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, c.log.String())
	}
}
