package kernel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
)

// History keeps the cells executed with store_history, for
// history_request. With a path it also appends them to a JSON-lines file
// (one object per cell) and reads earlier sessions back at start, so tail
// and search reach across kernel restarts, as IPython's history does.
// The file holds code and the text/plain of results only: what the analyst
// typed and what the DP mechanisms released.
type History struct {
	mu      sync.Mutex
	path    string
	session int
	entries []HistoryEntry
}

// HistoryEntry is one executed cell.
type HistoryEntry struct {
	Session int     `json:"session"`
	Line    int     `json:"line"`
	Input   string  `json:"input"`
	Output  *string `json:"output,omitempty"`
}

// OpenHistory loads the history file at path (created if missing) and
// starts a new session after the last one in it. An empty path keeps
// history in memory only.
func OpenHistory(path string) (*History, error) {
	h := &History{path: path, session: 1}
	if path == "" {
		return h, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e HistoryEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Session <= 0 {
			continue // a torn last line after a crash; skip it
		}
		h.entries = append(h.entries, e)
		h.session = max(h.session, e.Session+1)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	return h, nil
}

// Session is the number of the current session (1 for the first).
func (h *History) Session() int { return h.session }

// Add records a cell of the current session.
func (h *History) Add(line int, input string, output *string) error {
	e := HistoryEntry{Session: h.session, Line: line, Input: input, Output: output}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, e)
	if h.path == "" {
		return nil
	}
	b, _ := json.Marshal(e)
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Tail returns the last n entries in order.
func (h *History) Tail(n int) []HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n <= 0 || n > len(h.entries) {
		n = len(h.entries)
	}
	return append([]HistoryEntry(nil), h.entries[len(h.entries)-n:]...)
}

// Range returns the entries of session (0 = current, negative = relative
// to the current one) with start <= line < stop; stop <= 0 means no bound.
func (h *History) Range(session, start, stop int) []HistoryEntry {
	if session <= 0 {
		session += h.session
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []HistoryEntry
	for _, e := range h.entries {
		if e.Session == session && e.Line >= start && (stop <= 0 || e.Line < stop) {
			out = append(out, e)
		}
	}
	return out
}

// Search returns the entries whose input matches the glob pattern (* and
// ?, as IPython's sqlite GLOB), the last n of them if n > 0, without
// repeated inputs if unique.
func (h *History) Search(pattern string, n int, unique bool) []HistoryEntry {
	re := globRegexp(pattern)
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []HistoryEntry
	seen := map[string]bool{}
	for i := len(h.entries) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		e := h.entries[i]
		if !re.MatchString(e.Input) || (unique && seen[e.Input]) {
			continue
		}
		seen[e.Input] = true
		out = append(out, e)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func globRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}
