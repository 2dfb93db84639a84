package kernel_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
)

// python is Debian's interpreter, which has jupyter_client, jsonschema,
// nbclient, nbformat and nbconvert from apt (the pyenv python3 on PATH
// does not).
const python = "/usr/bin/python3"

// buildBinary builds ../cmd/privnotes with tags into dir and returns its
// path. "go test" puts its own GOROOT/bin first in PATH, so "go" is the
// toolchain running the tests.
func buildBinary(t *testing.T, dir string, tags ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the kernel binary: %v", err)
	}
	bin := filepath.Join(dir, "privnotes")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "../cmd/privnotes")
	if out, err := exec.Command(gobin, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	return bin
}

// buildAndInstall builds privnotes into a temporary directory and installs
// its kernel spec there; it returns the environment that makes
// jupyter_client find that spec and nothing of the user's.
func buildAndInstall(t *testing.T, tags ...string) (env []string, dir string) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import jupyter_client, jsonschema, nbclient, nbformat, nbconvert").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import the Jupyter packages the integration tests need: %v\n%s\nrun: make deps (apt-get install python3-jupyter-client python3-nbclient python3-nbformat jupyter-nbconvert python3-jsonschema)", python, err, out)
	}
	dir = t.TempDir()
	bin := buildBinary(t, dir, tags...)
	prefix := filepath.Join(dir, "prefix")
	if out, err := exec.Command(bin, "install", "--prefix", prefix, "--name", "privnotes-test").CombinedOutput(); err != nil {
		t.Fatalf("privnotes install: %v\n%s", err, out)
	}
	env = append(os.Environ(),
		"JUPYTER_PATH="+filepath.Join(prefix, "share", "jupyter"),
		"JUPYTER_DATA_DIR="+filepath.Join(dir, "data"),
		"JUPYTER_CONFIG_DIR="+filepath.Join(dir, "config"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"JUPYTER_PLATFORM_DIRS=1",
		"PRIVNOTES_STATE="+filepath.Join(dir, "state"),
		"PYTHONDONTWRITEBYTECODE=1",
	)
	return env, dir
}

// runPython runs a script of testdata with a hard timeout and fails with
// its output if it fails.
func runPython(t *testing.T, env []string, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = "testdata"
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %v (a kernel that does not reply?)\n%s", args, timeout, out.String())
	}
	if err != nil {
		t.Fatalf("%v failed: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// TestJupyterClient drives the real kernel (and its interpreter worker)
// with jupyter_client: every request type with schema validation, message
// order, interrupts, crashes, stop_on_error, restart and shutdown, and
// forged messages. See testdata/kernel_tests.py.
func TestJupyterClient(t *testing.T) {
	testtier.Integration(t)
	env, dir := buildAndInstall(t)
	out := runPython(t, env, 4*time.Minute, "kernel_tests.py", "privnotes-test")
	if !strings.Contains(out, "\nOK") {
		t.Fatalf("the suite did not report OK:\n%s", out)
	}
	if strings.Contains(out, "skipped=") || strings.Contains(out, "expected failures=") {
		t.Fatalf("the suite skipped tests or expected failures (none may be):\n%s", out)
	}
	t.Run("nbconvert", func(t *testing.T) {
		out := runPython(t, env, 4*time.Minute, "check_notebook.py", "privnotes-test", filepath.Join(dir, "nb"))
		if !strings.Contains(out, "notebook OK") {
			t.Fatalf("notebook check did not report OK:\n%s", out)
		}
	})
}
