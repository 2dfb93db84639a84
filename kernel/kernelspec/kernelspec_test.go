package kernelspec

import (
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestInstallPrefix(t *testing.T) {
	prefix := t.TempDir()
	dir, err := Install(Options{Binary: "/opt/bin/privnotes", Prefix: prefix, Name: "pn-test", StateDir: "/var/lib/pn"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(prefix, "share", "jupyter", "kernels", "pn-test"); dir != want {
		t.Fatalf("installed in %s, want %s", dir, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal(spec["argv"])
	if string(argv) != `["/opt/bin/privnotes","kernel","{connection_file}"]` {
		t.Errorf("argv %s", argv)
	}
	if spec["language"] != "go" || spec["interrupt_mode"] != "message" || spec["display_name"] != "Go (privnotes)" {
		t.Errorf("spec %v", spec)
	}
	if env, _ := spec["env"].(map[string]any); env["PRIVNOTES_STATE"] != "/var/lib/pn" {
		t.Errorf("env %v", spec["env"])
	}
	for _, size := range []int{32, 64} {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("logo-%dx%d.png", size, size)))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != size || b.Dy() != size {
			t.Errorf("logo %d is %v", size, b)
		}
		// The centre of the body is inked, the top corners are not.
		if _, _, _, a := img.At(size/4, size*3/4).RGBA(); a == 0 {
			t.Errorf("logo %d: body is transparent", size)
		}
		if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
			t.Errorf("logo %d: corner is inked", size)
		}
	}
}

func TestInstallUserUsesJupyterDataDir(t *testing.T) {
	d := t.TempDir()
	t.Setenv("JUPYTER_DATA_DIR", d)
	dir, err := Install(Options{Binary: "/x/privnotes"})
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(d, "kernels", "privnotes") {
		t.Errorf("installed in %s", dir)
	}
}

func TestInstallRejects(t *testing.T) {
	cases := map[string]Options{
		"relative binary": {Binary: "privnotes", Prefix: t.TempDir()},
		"bad name":        {Binary: "/x", Prefix: t.TempDir(), Name: "Has Space"},
		"two locations":   {Binary: "/x", Prefix: t.TempDir(), User: true},
	}
	for name, o := range cases {
		if _, err := Install(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
