package kernel

import (
	"context"
	"os"
	"os/exec"
	"strconv"
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
// front end and kills that front end: Run must return within about two
// poll intervals, and not before the kill.
func TestKernelExitsWhenParentDies(t *testing.T) {
	front := startSleeper(t)
	conn := testConn(t)
	eng := enginetest.New()
	k, err := New(Config{Conn: conn, Engine: eng, ParentPID: front.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := k.Run(ctx); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("the kernel stopped while its front end was alive (err %v)", err)
	case <-time.After(2500 * time.Millisecond):
	}
	front.Process.Kill()
	killed := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("kernel stopped %v after its front end was killed", time.Since(killed).Round(time.Millisecond))
	case <-time.After(4 * time.Second):
		t.Fatal("the kernel did not stop within 4 s of its front end's death")
	}
}
