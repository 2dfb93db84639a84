// Package kernelspec installs the privnotes kernel spec (kernel.json and
// logos) where Jupyter looks for kernels, without needing the jupyter
// command.
package kernelspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Spec is the content of kernel.json.
type Spec struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env,omitempty"`
	Metadata      map[string]any    `json:"metadata,omitempty"`
}

// Options says what to install where. At most one of User, Prefix and
// SysPrefix may be set; none means User.
type Options struct {
	Binary      string // absolute path of the privnotes binary
	Name        string // directory name under kernels/ (default "privnotes")
	DisplayName string // default "Go (privnotes)"
	StateDir    string // when set, kernel.json sets PRIVNOTES_STATE to it
	// Env is more environment for kernel.json (PRIVNOTES_SERVERS and
	// PRIVNOTES_TLS_DIR: the data servers the kernel reaches).
	Env       map[string]string
	User      bool
	Prefix    string
	SysPrefix bool
	// Python answers sys.prefix for SysPrefix (default /usr/bin/python3).
	Python string
}

var validName = regexp.MustCompile(`^[a-z0-9._-]+$`)

// DataDir returns the user's Jupyter data directory: $JUPYTER_DATA_DIR,
// else $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter (Linux), the
// same rule as jupyter_core.
func DataDir() (string, error) {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "jupyter"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the Jupyter data dir (set JUPYTER_DATA_DIR): %w", err)
	}
	return filepath.Join(home, ".local", "share", "jupyter"), nil
}

// Install writes kernels/<name>/kernel.json and the logos, replacing an
// existing spec of the same name, and returns the directory.
func Install(o Options) (string, error) {
	if o.Name == "" {
		o.Name = "privnotes"
	}
	if !validName.MatchString(o.Name) {
		return "", fmt.Errorf("kernel name %q: use lowercase letters, digits, '.', '_' and '-' only (Jupyter's rule)", o.Name)
	}
	if o.DisplayName == "" {
		o.DisplayName = "Go (privnotes)"
	}
	if !filepath.IsAbs(o.Binary) {
		return "", fmt.Errorf("binary path %q is not absolute", o.Binary)
	}
	n := 0
	for _, set := range []bool{o.User, o.Prefix != "", o.SysPrefix} {
		if set {
			n++
		}
	}
	if n > 1 {
		return "", errors.New("use only one of --user, --prefix and --sys-prefix")
	}
	var root string
	switch {
	case o.Prefix != "":
		root = filepath.Join(o.Prefix, "share", "jupyter")
	case o.SysPrefix:
		py := o.Python
		if py == "" {
			py = "/usr/bin/python3"
		}
		out, err := exec.Command(py, "-c", "import sys; print(sys.prefix)").Output()
		if err != nil {
			return "", fmt.Errorf("--sys-prefix: asking %s for sys.prefix: %w", py, err)
		}
		root = filepath.Join(strings.TrimSpace(string(out)), "share", "jupyter")
	default:
		d, err := DataDir()
		if err != nil {
			return "", err
		}
		root = d
	}
	dir := filepath.Join(root, "kernels", o.Name)
	spec := Spec{
		Argv:          []string{o.Binary, "kernel", "{connection_file}"},
		DisplayName:   o.DisplayName,
		Language:      "go",
		InterruptMode: "message",
		Metadata:      map[string]any{"debugger": false},
	}
	if o.StateDir != "" {
		abs, err := filepath.Abs(o.StateDir)
		if err != nil {
			return "", fmt.Errorf("state dir: %w", err)
		}
		spec.Env = map[string]string{"PRIVNOTES_STATE": abs}
	}
	for k, v := range o.Env {
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	js, _ := json.MarshalIndent(spec, "", "  ")
	files := map[string][]byte{"kernel.json": append(js, '\n')}
	for _, size := range []int{32, 64} {
		var buf bytes.Buffer
		if err := png.Encode(&buf, Logo(size)); err != nil {
			return "", err
		}
		files[fmt.Sprintf("logo-%dx%d.png", size, size)] = buf.Bytes()
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	return dir, nil
}

// Logo draws the privnotes logo at size×size: a padlock in Go's cyan on a
// transparent background, anti-aliased by 4×4 supersampling.
func Logo(size int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	cyan := color.NRGBA{0x00, 0xAD, 0xD8, 0xFF}
	const ss = 4
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			hits := 0
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					u := (float64(x) + (float64(sx)+0.5)/ss) / float64(size)
					v := (float64(y) + (float64(sy)+0.5)/ss) / float64(size)
					if inPadlock(u, v) {
						hits++
					}
				}
			}
			if hits > 0 {
				c := cyan
				c.A = uint8(255 * hits / (ss * ss))
				img.SetNRGBA(x, y, c)
			}
		}
	}
	return img
}

// inPadlock reports whether the point (u, v) of the unit square is inked:
// a rounded body with a keyhole, and a shackle (half ring) above it.
func inPadlock(u, v float64) bool {
	// Body: rounded rectangle [0.16,0.84]×[0.44,0.94], corner radius 0.08.
	if u >= 0.16 && u <= 0.84 && v >= 0.44 && v <= 0.94 {
		cx := math.Max(0.24-u, math.Max(0, u-0.76))
		cy := math.Max(0.52-v, math.Max(0, v-0.86))
		if math.Hypot(cx, cy) > 0.08 {
			return false
		}
		// Keyhole: a circle and a slot, left blank.
		if math.Hypot(u-0.5, v-0.64) < 0.07 || (math.Abs(u-0.5) < 0.03 && v > 0.64 && v < 0.8) {
			return false
		}
		return true
	}
	// Shackle: ring of radii 0.17..0.26 centred at (0.5, 0.44), top half,
	// plus its legs down to the body.
	d := math.Hypot(u-0.5, v-0.34)
	if v <= 0.34 && d >= 0.17 && d <= 0.26 {
		return true
	}
	if v > 0.34 && v < 0.44 && (math.Abs(u-0.285) <= 0.045 || math.Abs(u-0.715) <= 0.045) {
		return true
	}
	return false
}
