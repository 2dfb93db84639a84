//go:build unix

package browsertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privnotes/privnotes/internal/testtier"
)

// What the test runs. Debian's python3 is the one with the notebook module
// (the python3 first on PATH may be another).
const (
	chromium = "/usr/bin/chromium"
	notebook = "/usr/bin/jupyter-notebook"
	python   = "/usr/bin/python3"
	// installHint is what makes the test runnable on Debian bookworm.
	installHint = "as root: apt-get install -y -o DPkg::Lock::Timeout=300 jupyter-notebook chromium; " +
		"then PUPPETEER_SKIP_DOWNLOAD=1 npm ci --prefix kernel/browsertest (or run `make test` as root, which does both)"
)

// Time limits: the whole test takes well under a minute on 2 cores; these
// only stop a hung server or browser sooner than go test's own timeout.
const (
	serverStart = 60 * time.Second
	scriptLimit = 4 * time.Minute
)

// TestNotebookInChromium runs notebook.js against a fresh Notebook server
// and reports each check it failed.
func TestNotebookInChromium(t *testing.T) {
	testtier.Integration(t)
	requireTools(t)
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildPrivnotes(t, repo, dir)
	jupyterPath := filepath.Join(dir, "prefix", "share", "jupyter")
	run(t, bin, "install", "--prefix", filepath.Join(dir, "prefix"), "--name", "privnotes")
	state := filepath.Join(dir, "state")
	run(t, "sh", filepath.Join(repo, "notebooks", "scripts", "register_datasets.sh"), bin, state)

	nbDir := filepath.Join(dir, "notebooks")
	copyFile(t, filepath.Join(repo, "notebooks", "quickstart.ipynb"), filepath.Join(nbDir, "quickstart.ipynb"))
	copyTree(t, filepath.Join(repo, "notebooks", "data"), filepath.Join(nbDir, "data"))

	url, token := startNotebook(t, dir, nbDir, jupyterPath, state)

	shots := filepath.Join(repo, "build", "browser")
	if err := os.RemoveAll(shots); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "notebook.js",
		"--url", url, "--token", token, "--notebook", "quickstart.ipynb",
		"--shots", shots, "--profile", filepath.Join(dir, "chromium-profile"), "--chromium", chromium)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	report := out.String()
	t.Logf("notebook.js ran %.1f s (screenshots in %s):\n%s", time.Since(start).Seconds(), shots, report)
	if ctx.Err() != nil {
		t.Fatalf("notebook.js did not finish within %v", scriptLimit)
	}
	failed := false
	for _, l := range strings.Split(report, "\n") {
		if check, ok := strings.CutPrefix(l, "FAIL "); ok {
			t.Error(check)
			failed = true
		}
	}
	if runErr != nil && !failed {
		t.Fatalf("notebook.js failed without naming a check: %v", runErr)
	}
	if runErr == nil && (failed || !strings.HasSuffix(strings.TrimSpace(report), "OK")) {
		t.Fatalf("notebook.js exited 0 but did not end with OK")
	}
}

// requireTools fails, never skips, when something the test drives is
// missing: a browser test that silently does not run proves nothing.
func requireTools(t *testing.T) {
	t.Helper()
	var missing []string
	for _, p := range []string{chromium, notebook} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		// Debian bookworm's jupyter-notebook is classic Notebook 6; the
		// script's selectors are that version's.
		out, err := exec.Command(python, "-c", "import notebook; print(notebook.__version__)").CombinedOutput()
		if v := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(v, "6.") {
			t.Fatalf("the browser test drives classic Notebook 6.x; %s has notebook %q (%v)", python, v, err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node (Node.js on PATH)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "puppeteer-core", "package.json")); err != nil {
		missing = append(missing, "kernel/browsertest/node_modules/puppeteer-core")
	}
	if len(missing) == 0 {
		return
	}
	where := "outside CI"
	if os.Getenv("CI") != "" {
		where = "CI is set"
	}
	t.Fatalf("the real-browser test cannot run (%s): missing %s; install them %s", where, strings.Join(missing, ", "), installHint)
}

// buildPrivnotes builds the binary with the go command running this test
// (go test puts its GOROOT/bin first on PATH) and the caller's GOFLAGS.
func buildPrivnotes(t *testing.T, repo, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "privnotes")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/privnotes")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/privnotes: %v\n%s", err, out)
	}
	return bin
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// startNotebook starts the Notebook server on a free loopback port with a
// random token and its own Jupyter directories, waits until it answers,
// and stops it (with its kernels) when the test ends.
func startNotebook(t *testing.T, dir, nbDir, jupyterPath, state string) (url, token string) {
	t.Helper()
	port := freePort(t)
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		t.Fatal(err)
	}
	token = hex.EncodeToString(tok)
	args := []string{"--no-browser", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--NotebookApp.port_retries=0", "--NotebookApp.token=" + token, "--notebook-dir=" + nbDir}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-root")
	}
	cmd := exec.Command(notebook, args...)
	cmd.Env = append(os.Environ(),
		"JUPYTER_PATH="+jupyterPath,
		"JUPYTER_CONFIG_DIR="+filepath.Join(dir, "jupyter-config"),
		"JUPYTER_DATA_DIR="+filepath.Join(dir, "jupyter-data"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "jupyter-runtime"),
		"PRIVNOTES_STATE="+state,
		"PYTHONDONTWRITEBYTECODE=1")
	logPath := filepath.Join(dir, "notebook.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that stopping it also stops the kernels
	// it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", notebook, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stopGroup(cmd.Process.Pid, exited)
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("notebook server and kernel log (end):\n%s", tail(string(b), 6000))
			}
		}
	})
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(serverStart)
	for {
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited before answering (%v):\n%s", notebook, err, tail(string(b), 4000))
		default:
		}
		resp, err := http.Get(url + "/api/status?token=" + token)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, token
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s within %v", notebook, url, serverStart)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopGroup asks the server to shut down (SIGTERM: it stops its kernels),
// then kills what is left of its process group.
func stopGroup(pid int, exited chan error) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
