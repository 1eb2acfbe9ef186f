package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// FlatStore is the flat backend: MEMORIES.txt, one memory per non-empty
// line, read on every operation (so hand edits are seen) and rewritten
// atomically (temp file, fsync, rename) on every change. A memory's id is a
// hash of its normalised text, stable across edits of other lines. Every
// memory is a current fact; there are no vectors, access statistics or
// validity history: Close returns ErrUnsupported, RecordAccess does nothing
// and the store does not implement Vectors. Recall is BM25 over lines.
// Safe for concurrent use within one process.
type FlatStore struct {
	path string
	now  func() time.Time
	log  *slog.Logger
	mu   sync.Mutex
}

var _ Store = (*FlatStore)(nil)

// NewFlat returns the flat store over the file at path (created on first
// write).
func NewFlat(path string, now func() time.Time, log *slog.Logger) *FlatStore {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FlatStore{path: path, now: now, log: log}
}

func flatID(text string) int64 {
	h := fnv.New64a()
	h.Write([]byte(normalise(text)))
	return int64(h.Sum64() >> 11) // positive, fits a JSON number exactly
}

// read returns the lines of the file. Invalid UTF-8 is replaced (and
// logged), never fatal, so a corrupt file still yields its readable lines.
func (f *FlatStore) read() ([]string, time.Time, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read %s: %w", f.path, err)
	}
	var mod time.Time
	if st, err := os.Stat(f.path); err == nil {
		mod = st.ModTime()
	}
	s := string(b)
	if !utf8.ValidString(s) {
		f.log.Warn("memories file has invalid UTF-8; bad bytes replaced", "path", f.path)
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.TrimPrefix(s, "\uFEFF")
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if l != "" {
			out = append(out, l)
		}
	}
	return out, mod, nil
}

func (f *FlatStore) write(lines []string) error {
	body := strings.Join(lines, "\n")
	if body != "" {
		body += "\n"
	}
	return writeAtomic(f.path, body)
}

func (f *FlatStore) memoryOf(line string, mod time.Time) Memory {
	return Memory{ID: flatID(line), Text: line, Kind: KindFact, Source: SourceImport, CreatedAt: mod, UpdatedAt: mod, ValidFrom: mod}
}

// Add appends a line; see Store.Add. A duplicate returns the existing id.
func (f *FlatStore) Add(ctx context.Context, m Memory) (int64, error) {
	ids, err := f.AddBatch(ctx, []Memory{m})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AddBatch appends lines, skipping duplicates, in one rewrite.
func (f *FlatStore) AddBatch(ctx context.Context, ms []Memory) ([]int64, error) {
	texts := make([]string, len(ms))
	for i, m := range ms {
		t, err := clean(m.Text)
		if err != nil {
			return nil, fmt.Errorf("add memory %d: %w", i, err)
		}
		// one memory per line
		texts[i] = strings.Join(strings.Fields(t), " ")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, _, err := f.read()
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range lines {
		have[normalise(l)] = true
	}
	ids := make([]int64, len(texts))
	changed := false
	for i, t := range texts {
		ids[i] = flatID(t)
		if n := normalise(t); !have[n] {
			have[n] = true
			lines = append(lines, t)
			changed = true
		}
	}
	if !changed {
		return ids, nil
	}
	if err := f.write(lines); err != nil {
		return nil, fmt.Errorf("add memories: %w", err)
	}
	return ids, nil
}

// Get returns the line with that id.
func (f *FlatStore) Get(ctx context.Context, id int64) (Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, mod, err := f.read()
	if err != nil {
		return Memory{}, err
	}
	for _, l := range lines {
		if flatID(l) == id {
			return f.memoryOf(l, mod), nil
		}
	}
	return Memory{}, notFound(id)
}

// Update replaces the line with m.ID by m.Text (a flat file keeps no
// history) and returns the line's new id, which changes with the text.
func (f *FlatStore) Update(ctx context.Context, m Memory) (int64, error) {
	t, err := clean(m.Text)
	if err != nil {
		return 0, fmt.Errorf("update memory %d: %w", m.ID, err)
	}
	t = strings.Join(strings.Fields(t), " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, _, err := f.read()
	if err != nil {
		return 0, err
	}
	at := -1
	for i, l := range lines {
		if flatID(l) == m.ID {
			at = i
		} else if normalise(l) == normalise(t) {
			return 0, fmt.Errorf("update memory %d: %w", m.ID, ErrDuplicate)
		}
	}
	if at < 0 {
		return 0, notFound(m.ID)
	}
	lines[at] = t
	if err := f.write(lines); err != nil {
		return 0, err
	}
	return flatID(t), nil
}

// Close is not supported: a flat file has no validity history.
func (f *FlatStore) Close(ctx context.Context, id int64, at time.Time) error {
	return fmt.Errorf("close memory %d: %w", id, ErrUnsupported)
}

// Delete removes the line with that id.
func (f *FlatStore) Delete(ctx context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, _, err := f.read()
	if err != nil {
		return err
	}
	out := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return flatID(l) == id })
	if len(out) == len(lines) {
		return notFound(id)
	}
	return f.write(out)
}

// List returns the lines in file order, filtered by f's kind (only fact
// matches) and paged by Limit/Offset.
func (f *FlatStore) List(ctx context.Context, flt Filter) ([]Memory, error) {
	f.mu.Lock()
	lines, mod, err := f.read()
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(flt.Kinds) > 0 && !slices.Contains(flt.Kinds, KindFact) {
		return nil, nil
	}
	var out []Memory
	for _, l := range lines {
		out = append(out, f.memoryOf(l, mod))
	}
	if flt.Offset >= len(out) {
		return nil, nil
	}
	out = out[flt.Offset:]
	if flt.Limit > 0 && len(out) > flt.Limit {
		out = out[:flt.Limit]
	}
	return out, nil
}

// Recall ranks lines by BM25 (k1 = 1.2, b = 0.75) over stemmed content
// words, with the SQLite store's text index.
func (f *FlatStore) Recall(ctx context.Context, q Query) ([]Scored, error) {
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, fmt.Errorf("recall: %w", ErrEmpty)
	}
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, KindFact) {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	f.mu.Lock()
	lines, mod, err := f.read()
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return bm25Lines(lines, text, limit, func(l string) Memory { return f.memoryOf(l, mod) }), nil
}

// bm25Lines ranks lines for query with the store's full-text index (the
// same BM25, stemming, kinds of nouns and derived words as the SQLite
// store's recall), built for the call.
func bm25Lines(lines []string, query string, limit int, mk func(string) Memory) []Scored {
	ix := newTextIndex()
	for i, l := range lines {
		ix.put(int64(i+1), l) // ids from 1: 0 marks a removed document
	}
	kinds, _ := ix.kindTerms(query, nil, ix.queryTerms(query, nil), DefaultTuning.relWeights())
	hits := ix.search(query, nil, defaultBM25, limit, func(int64) bool { return true }, kinds)
	if len(hits) == 0 {
		return nil
	}
	out := make([]Scored, len(hits))
	for i, h := range hits {
		out[i] = Scored{Memory: mk(lines[h.id-1]), Score: float64(h.score), Fused: float64(h.score), TextRank: i + 1}
	}
	return out
}

// RecordAccess does nothing: the flat file keeps no statistics.
func (f *FlatStore) RecordAccess(ctx context.Context, ids []int64, at time.Time) error { return nil }

// Count returns the number of lines.
func (f *FlatStore) Count(ctx context.Context, includeClosed bool) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, _, err := f.read()
	return len(lines), err
}

// Shutdown does nothing; every change is already on disk.
func (f *FlatStore) Shutdown(ctx context.Context) error { return nil }
