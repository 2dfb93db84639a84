package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// gitFiles lists the files of the working tree that go test would see:
// tracked files as they are now (modified or not) and untracked files
// that are not ignored (new tests of a change in progress count: they may
// be what kills a mutant). Deleted tracked files are dropped by the copy.
func gitFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v: %s", root, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	seen := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" && !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files, nil
}

// gitRoot returns the top directory of the repository holding dir.
func gitRoot(dir string) (string, error) {
	cmd := exec.Command("git", "rev-parse", "--show-toplevel")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s is not inside a git repository (git rev-parse: %v)", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Scratch is a copy of the repository that mutants are applied to, one at
// a time; the working tree itself is never written.
type Scratch struct {
	Dir string
}

// NewScratch copies files (slash-separated, relative to root) from root
// into a new temporary directory. Files listed but missing (deleted in
// the working tree) are skipped; symbolic links are copied as links.
func NewScratch(root string, files []string) (*Scratch, error) {
	dir, err := os.MkdirTemp("", "privnotes-mutants-")
	if err != nil {
		return nil, err
	}
	s := &Scratch{Dir: dir}
	for _, f := range files {
		if err := copyFile(filepath.Join(root, filepath.FromSlash(f)), filepath.Join(dir, filepath.FromSlash(f))); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			s.Remove()
			return nil, err
		}
	}
	return s, nil
}

// Remove deletes the copy.
func (s *Scratch) Remove() error { return os.RemoveAll(s.Dir) }

func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case !fi.Mode().IsRegular():
		return nil // a submodule or a socket: nothing go test reads
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// RottenError says that a mutant's original snippet does not occur exactly
// once in its file: the code moved on and the entry must be updated (or
// the entry never matched). It fails the run like a survivor, so that the
// list cannot rot silently.
type RottenError struct {
	ID, File string
	Count    int
}

func (e *RottenError) Error() string {
	if e.Count == 0 {
		return fmt.Sprintf("mutant %s is rotten: its original snippet no longer occurs in %s; update the entry to the current code", e.ID, e.File)
	}
	return fmt.Sprintf("mutant %s is ambiguous: its original snippet occurs %d times in %s; extend it until it is unique", e.ID, e.Count, e.File)
}

// Mutate returns content with m's snippet replaced and the 1-based line
// where the snippet starts, or a *RottenError unless the snippet occurs
// exactly once.
func Mutate(content []byte, m *Mutant) ([]byte, int, error) {
	orig := []byte(m.Original)
	if n := bytes.Count(content, orig); n != 1 {
		return nil, 0, &RottenError{ID: m.ID, File: m.File, Count: n}
	}
	at := bytes.Index(content, orig)
	line := 1 + bytes.Count(content[:at], []byte("\n"))
	out := make([]byte, 0, len(content)-len(orig)+len(m.Mutated))
	out = append(out, content[:at]...)
	out = append(out, m.Mutated...)
	out = append(out, content[at+len(orig):]...)
	return out, line, nil
}

// Apply writes m into the scratch copy and returns the line it changed and
// a restore function that puts the file back byte for byte (callers defer
// it: the next mutant must start from the unmutated tree).
func (s *Scratch) Apply(m *Mutant) (line int, restore func() error, err error) {
	p := filepath.Join(s.Dir, filepath.FromSlash(m.File))
	fi, err := os.Stat(p)
	if err != nil {
		return 0, nil, fmt.Errorf("mutant %s: %v", m.ID, err)
	}
	content, err := os.ReadFile(p)
	if err != nil {
		return 0, nil, err
	}
	mutated, line, err := Mutate(content, m)
	if err != nil {
		return 0, nil, err
	}
	if err := os.WriteFile(p, mutated, fi.Mode().Perm()); err != nil {
		return 0, nil, err
	}
	restore = func() error {
		if err := os.WriteFile(p, content, fi.Mode().Perm()); err != nil {
			return fmt.Errorf("restoring %s after mutant %s: %v", m.File, m.ID, err)
		}
		return nil
	}
	return line, restore, nil
}

// Check reports, without changing anything, whether m applies to the
// scratch copy (its snippet occurs exactly once).
func (s *Scratch) Check(m *Mutant) error {
	content, err := os.ReadFile(filepath.Join(s.Dir, filepath.FromSlash(m.File)))
	if err != nil {
		return fmt.Errorf("mutant %s: %v", m.ID, err)
	}
	_, _, err = Mutate(content, m)
	return err
}
