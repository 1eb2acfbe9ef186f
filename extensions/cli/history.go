package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// HistoryFile is the input history's file name in the data dir.
const HistoryFile = "cli_history"

// DefaultHistorySize is how many entries History keeps.
const DefaultHistorySize = 1000

// History is the chat's input history, persisted one JSON string per line
// (so entries may span several lines) in a file with mode 0600. It is used
// by one goroutine.
type History struct {
	path    string
	max     int
	entries []string
}

// OpenHistory loads the history at path (a missing file is an empty
// history; unreadable lines are skipped). max ≤ 0 means
// DefaultHistorySize. An empty path keeps the history in memory only.
func OpenHistory(path string, max int) (*History, error) {
	if max <= 0 {
		max = DefaultHistorySize
	}
	h := &History{path: path, max: max}
	if path == "" {
		return h, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read chat history: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && strings.TrimSpace(s) != "" {
			h.entries = append(h.entries, s)
		}
	}
	if len(h.entries) > h.max {
		h.entries = h.entries[len(h.entries)-h.max:]
	}
	return h, nil
}

// Entries returns the entries, oldest first.
func (h *History) Entries() []string { return h.entries }

// Len is the number of entries.
func (h *History) Len() int { return len(h.entries) }

// At returns entry i (0 = oldest).
func (h *History) At(i int) string { return h.entries[i] }

// Add appends an entry (not a blank one, nor a repeat of the last) and
// persists it. When the file has grown to twice the size kept, it is
// rewritten with the last entries only.
func (h *History) Add(entry string) error {
	if strings.TrimSpace(entry) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == entry) {
		return nil
	}
	h.entries = append(h.entries, entry)
	if h.path == "" {
		if len(h.entries) > h.max {
			h.entries = h.entries[len(h.entries)-h.max:]
		}
		return nil
	}
	if len(h.entries) > 2*h.max {
		h.entries = h.entries[len(h.entries)-h.max:]
		return h.rewrite()
	}
	return h.append(entry)
}

func (h *History) append(entry string) error {
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("save chat history: %w", err)
	}
	// The file may predate this version with wider permissions.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("save chat history: %w", err)
	}
	line, _ := json.Marshal(entry)
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("save chat history: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save chat history: %w", err)
	}
	return nil
}

// rewrite replaces the file atomically with the kept entries.
func (h *History) rewrite() error {
	var b bytes.Buffer
	for _, e := range h.entries {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.path), "."+filepath.Base(h.path)+".*")
	if err != nil {
		return fmt.Errorf("save chat history: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save chat history: %w", err)
	}
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("save chat history: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save chat history: %w", err)
	}
	if err := os.Rename(tmp.Name(), h.path); err != nil {
		return fmt.Errorf("save chat history: %w", err)
	}
	return nil
}
