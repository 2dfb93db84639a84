package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
)

// guardedParentEnv makes the test binary run its command line as the
// privnotes binary would, crash guard included (TestMain).
const guardedParentEnv = "PRIVNOTES_TEST_GUARDED_PARENT"

// chargingScript charges the budget in a loop that would outlast any test,
// printing a line after each charge.
const chargingScript = `ds := dataset("tab")
for i := 0; i < 1000000; i++ {
	private_count(ds, eps=0.001)
	fmt.Println("charged", i)
}
`

// ledgerCharges counts the ledger's charges of the dataset tab.
func ledgerCharges(t *testing.T, state string) int {
	t.Helper()
	code, out, errs := runCLI("ledger", "show", "--state", state)
	if code != 0 {
		t.Fatalf("ledger show: %s", errs)
	}
	return strings.Count(out, "count/laplace")
}

// TestRunDiesWithItsParent kills "privnotes run" with SIGKILL while its
// script charges the budget in a loop: the child process that runs the
// script must end too (before, it went on charging until the script
// ended), and the ledger must stop growing.
func TestRunDiesWithItsParent(t *testing.T) {
	testtier.Integration(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if code, _, errs := runCLI("dataset", "add", "tab", "--csv", tabCSV(t, dir), "--eps", "1e6", "--delta", "1e-5",
		"--clip", "10", "--accountant", "basic", "--state", state); code != 0 {
		t.Fatalf("dataset add: %s", errs)
	}
	script := filepath.Join(dir, "loop.pn")
	if err := os.WriteFile(script, []byte(chargingScript), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(os.Args[0], "run", "--state", state, script)
	parent.Env = append(os.Environ(), guardedParentEnv+"=1")
	// A pipe of the test's own, not StdoutPipe: Wait closes that one's
	// read end once the parent exits, and the child's next write would
	// then kill it with SIGPIPE, hiding whether it outlives its parent.
	out, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	parent.Stdout = outW
	// A file, not a buffer: Wait would wait for a copy from a pipe that
	// an orphan still holds open.
	errb := stderrFile(t, dir)
	parent.Stderr = errb.File
	err = parent.Start()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { parent.Process.Kill(); parent.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Wait for a few charges, so the child is in the middle of its loop.
	for n := 0; n < 3; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the script ended before charging: %s", errb.String())
			}
			if strings.HasPrefix(l, "charged ") {
				n++
			}
		case <-time.After(hang):
			t.Fatalf("no charge within %v: %s", hang, errb.String())
		}
	}
	children := childrenOf(t, parent.Process.Pid)
	t.Cleanup(func() { killAll(children) })
	if len(children) != 1 {
		t.Fatalf("privnotes run has children %v, want one", children)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	parent.Wait()

	// The child held the other copy of the stdout pipe: its end is EOF.
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-lines:
		case <-deadline:
			t.Fatalf("the script's process %d still runs (and charges) 10 s after its parent was killed", children[0])
		}
	}
	waitGone(t, children[0])
	before := ledgerCharges(t, state)
	if before < 3 {
		t.Fatalf("the ledger holds %d charges, want at least the 3 printed", before)
	}
	time.Sleep(500 * time.Millisecond)
	if after := ledgerCharges(t, state); after != before {
		t.Errorf("the ledger grew from %d to %d charges after the run was killed", before, after)
	}
}

// TestKernelWorkerDiesWithKernel kills "privnotes kernel" with SIGKILL
// while a cell charges the budget in a loop: its worker must end too.
func TestKernelWorkerDiesWithKernel(t *testing.T) {
	testtier.Integration(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if code, _, errs := runCLI("dataset", "add", "tab", "--csv", tabCSV(t, dir), "--eps", "1e6", "--delta", "1e-5",
		"--clip", "10", "--accountant", "basic", "--state", state); code != 0 {
		t.Fatalf("dataset add: %s", errs)
	}
	connFile, conn := connectionFile(t, dir)
	kernel := exec.Command(os.Args[0], "kernel", "--state", state, connFile)
	kernel.Env = append(os.Environ(), cellChildEnv+"=1") // its workers are this binary too
	errb := stderrFile(t, dir)
	kernel.Stderr = errb.File
	if err := kernel.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kernel.Process.Kill(); kernel.Wait() })
	c := dialKernel(t, conn)
	id := c.send(c.shell, "execute_request", map[string]any{"code": chargingScript, "silent": false})
	for n := 0; n < 3; {
		m := c.wait(c.iopubIn, id, "stream")
		n += strings.Count(fmt.Sprint(m["text"]), "charged ")
	}
	workers := childrenOf(t, kernel.Process.Pid)
	t.Cleanup(func() { killAll(workers) })
	if len(workers) != 1 {
		t.Fatalf("the kernel has children %v, want its worker; its log:\n%s", workers, errb.String())
	}
	if err := kernel.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kernel.Wait()
	waitGone(t, workers[0])
	before := ledgerCharges(t, state)
	if before < 3 {
		t.Fatalf("the ledger holds %d charges, want at least the 3 printed", before)
	}
	time.Sleep(500 * time.Millisecond)
	if after := ledgerCharges(t, state); after != before {
		t.Errorf("the ledger grew from %d to %d charges after the kernel was killed", before, after)
	}
}

// stderrFile is a file for a process's standard error; its String method
// reads what was written so far.
func stderrFile(t *testing.T, dir string) *readableFile {
	f, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &readableFile{f}
}

type readableFile struct{ *os.File }

func (f *readableFile) String() string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

// killAll ends processes a failed test left behind.
func killAll(pids []int) {
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// childrenOf lists the children of pid from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no /proc entries for process %d: %v", pid, err)
	}
	var kids []int
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// waitGone waits until pid has exited: gone from /proc, or a zombie that
// its new parent has not reaped yet.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs 10 s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
