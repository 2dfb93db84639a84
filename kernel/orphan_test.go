package kernel_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/kernel"
)

// hang bounds the waits for events (see kernel_test.go's hang): it only
// catches a hang.
const hang = 60 * time.Second

// TestKernelExitsWithItsFrontEnd starts the real kernel binary the way
// jupyter_client does (JPY_PARENT_PID set to its parent) from a shell
// standing for jupyter console, kills that shell with SIGKILL, and checks
// that the kernel and its worker end because of it instead of running on
// as orphans that hold the state database.
//
// Nothing here is a wall-clock requirement. The kernel must stay up while
// the shell lives: it is watched over two and a half of its poll intervals
// from the moment its worker runs, failing at once if it exits (a loaded
// machine can only make it poll less often in that window, never fail the
// test). After the kill, the end of both processes is the event waited
// for, bounded only by hang; the kernel's log must give the parent's death
// as the reason. A kernel that does not watch its parent never ends, and
// fails.
func TestKernelExitsWithItsFrontEnd(t *testing.T) {
	testtier.Integration(t)
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	conn := map[string]any{"transport": "tcp", "ip": "127.0.0.1", "key": "k", "signature_scheme": "hmac-sha256"}
	// The listeners stay open until all five ports are chosen, so that no
	// port is handed out twice.
	var listeners []net.Listener
	for _, ch := range []string{"shell", "control", "stdin", "iopub", "hb"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		conn[ch+"_port"] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range listeners {
		l.Close()
	}
	connFile := filepath.Join(dir, "kernel.json")
	b, _ := json.Marshal(conn)
	if err := os.WriteFile(connFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The shell starts the kernel in the background, prints its pid and
	// waits, like a front end that owns the kernel process.
	front := exec.Command("sh", "-c", `JPY_PARENT_PID=$$ "$0" kernel --state "$1" "$2" 2>"$3" & echo $!; wait`,
		bin, filepath.Join(dir, "state"), connFile, filepath.Join(dir, "kernel.log"))
	front.Env = append(os.Environ(), "PRIVNOTES_STATE=")
	stdout, err := front.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := front.Start(); err != nil {
		t.Fatal(err)
	}
	frontDone := false
	t.Cleanup(func() {
		if !frontDone {
			front.Process.Kill()
			front.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	kpid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("no kernel pid from the shell: %q %v %v", line, err, perr)
	}
	t.Cleanup(func() { syscall9(kpid) })

	// Wait for the worker: then the kernel is fully up.
	var wpid int
	deadline := time.Now().Add(hang)
	for wpid == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the kernel started no worker within %v; its log:\n%s", hang, readLog(dir))
		}
		if !running(kpid) {
			t.Fatalf("the kernel exited before it started its worker; its log:\n%s", readLog(dir))
		}
		if kids := children(kpid); len(kids) == 1 {
			wpid = kids[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { syscall9(wpid) })
	// Up and watching: it must not leave while the front end lives.
	for up := time.Now(); time.Since(up) < kernel.ParentPollInterval*5/2; time.Sleep(20 * time.Millisecond) {
		if !running(kpid) {
			t.Fatalf("the kernel exited while its front end was alive; its log:\n%s", readLog(dir))
		}
	}

	front.Process.Kill()
	front.Wait()
	frontDone = true
	killed := time.Now()
	for running(kpid) || running(wpid) {
		if time.Since(killed) > hang {
			t.Fatalf("%v after its front end was killed: kernel running %v, worker running %v; kernel log:\n%s",
				hang, running(kpid), running(wpid), readLog(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("kernel and worker gone %v after the front end was killed", time.Since(killed).Round(time.Millisecond))
	// The shell is both the kernel's parent and its JPY_PARENT_PID: the
	// watch notices the re-parenting.
	want := "parent process " + strconv.Itoa(front.Process.Pid) + " exited (the kernel now belongs to process "
	if log := readLog(dir); !strings.Contains(log, want) || !strings.Contains(log, "shutting down") {
		t.Errorf("the kernel's log does not say it stopped because %q:\n%s", want, log)
	}
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "kernel.log"))
	return string(b)
}

// children lists the child processes of pid (Linux /proc).
func children(pid int) []int {
	var kids []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids
}

// running reports whether pid is a live process; a zombie (which nobody
// may reap once it is orphaned in a container) has ended.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// syscall9 kills a process the test started, if it is still there.
func syscall9(pid int) {
	if p, err := os.FindProcess(pid); err == nil && running(pid) {
		p.Kill()
	}
}
