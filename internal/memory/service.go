package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/textclip"
)

// MaxWorkingSetChars bounds a full rewrite of MEMORIES.txt. The prompt's own
// size limit (limits.memories_chars) asks the assistant to condense well
// before this; the bound only stops a runaway rewrite.
const MaxWorkingSetChars = 200_000

// ChangeFunc is told after MEMORIES.txt changed, with a one-line description
// and the data-dir-relative paths (the app commits them to the data dir's
// history).
type ChangeFunc func(ctx context.Context, message string, paths ...string)

// ServiceOptions configure NewService.
type ServiceOptions struct {
	Store   Store  // required
	DataDir string // holds MEMORIES.txt (required)
	Changed ChangeFunc
	Now     func() time.Time
	Logger  *slog.Logger
}

// Service is the memory subsystem as the tools, the CLI and the HTTP API
// use it: the long-term Store together with MEMORIES.txt, the readable
// working set that is always in the prompt. With the flat backend the two
// are the same file; with the vector backend MEMORIES.txt holds the top of
// the store (what the user or the assistant asked to keep in view, and what
// dreaming exports) while everything is recalled from the store.
//
// Writes to MEMORIES.txt are serialised and atomic (temp file, fsync,
// rename). Safe for concurrent use.
type Service struct {
	store   Store
	flat    bool
	dir     string
	path    string
	changed ChangeFunc
	now     func() time.Time
	log     *slog.Logger
	mu      sync.Mutex // guards MEMORIES.txt writes

	// The working set is read for every turn (prompt and recall); it is
	// kept while the file's size and modification time stay the same, so
	// hand edits are still seen at once.
	wsMu   sync.Mutex
	wsMod  time.Time
	wsSize int64
	wsText string
	wsOK   bool
}

// NewService returns the service over o.Store and <o.DataDir>/MEMORIES.txt.
func NewService(o ServiceOptions) (*Service, error) {
	if o.Store == nil || o.DataDir == "" {
		return nil, fmt.Errorf("memory service: %w: store and data dir are required", ErrInvalid)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Changed == nil {
		o.Changed = func(context.Context, string, ...string) {}
	}
	_, flat := o.Store.(*FlatStore)
	return &Service{store: o.Store, flat: flat, dir: o.DataDir, path: filepath.Join(o.DataDir, MemoriesFile),
		changed: o.Changed, now: o.Now, log: o.Logger}, nil
}

// Store is the long-term store.
func (s *Service) Store() Store { return s.store }

// Vectors returns the store's vector part when its backend keeps vectors
// (local_vector); ok is false for flat and mcp.
func (s *Service) Vectors() (Vectors, bool) { return VectorsOf(s.store) }

// LocalVectors returns the vector part of Reverie's own store: the store
// itself with local_vector, the store of the episodes with mcp (the facts
// are the external server's, which embeds them itself); ok is false for
// flat. Re-embedding after a model change and the embedding status use it.
func (s *Service) LocalVectors() (Vectors, bool) {
	if sp, ok := s.store.(*SplitStore); ok {
		return VectorsOf(sp.episodes)
	}
	return VectorsOf(s.store)
}

// Flat reports whether the backend is MEMORIES.txt itself.
func (s *Service) Flat() bool { return s.flat }

// Remembered is the outcome of Remember.
type Remembered struct {
	ID int64 `json:"id"`
	// Existing is true when an equal memory was already stored (nothing
	// was duplicated).
	Existing bool `json:"existing"`
	// InWorkingSet is true when the text is (now) a line of MEMORIES.txt.
	InWorkingSet bool `json:"in_working_set"`
}

// Remember stores m in the long-term store and, when keep is true (or the
// backend is flat), appends it to MEMORIES.txt unless an equal line is
// there already. An episode is never kept there (keep is ignored): the
// file holds the facts always in the prompt, an episode is found by
// recall, and the next start's Reconcile, which reads every line as a
// fact, would store the line a second time as one. Errors as Store.Add
// (ErrEmpty, ErrTooLong, ErrSecret, ErrInvalid); nothing is written when
// it fails.
func (s *Service) Remember(ctx context.Context, m Memory, keep bool) (Remembered, error) {
	text, err := clean(m.Text)
	if err != nil {
		return Remembered{}, err
	}
	m.Text = text
	if s.flat {
		s.mu.Lock()
		defer s.mu.Unlock()
		lines, err := s.readLines()
		if err != nil {
			return Remembered{}, err
		}
		existing := containsLine(lines, text)
		id, err := s.store.Add(ctx, m)
		if err != nil {
			return Remembered{}, err
		}
		if !existing {
			s.changed(ctx, "memory: remember "+summary(text), MemoriesFile)
		}
		return Remembered{ID: id, Existing: existing, InWorkingSet: true}, nil
	}
	before, berr := s.store.Count(ctx, false)
	id, err := s.store.Add(ctx, m)
	if err != nil {
		return Remembered{}, err
	}
	after, aerr := s.store.Count(ctx, false)
	// A backend that cannot count (mcp) never reports a duplicate.
	r := Remembered{ID: id, Existing: berr == nil && aerr == nil && after == before}
	if !keep || m.Kind == KindEpisode {
		return r, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lines, err := s.readLines()
	if err != nil {
		return r, err
	}
	if containsLine(lines, text) {
		r.InWorkingSet = true
		return r, nil
	}
	if err := s.writeLines(append(lines, textclip.OneLine(text))); err != nil {
		return r, err
	}
	r.InWorkingSet = true
	s.changed(ctx, "memory: remember "+summary(text), MemoriesFile)
	return r, nil
}

// WorkingSet returns MEMORIES.txt ("" when absent). Invalid UTF-8 is
// replaced, never fatal.
func (s *Service) WorkingSet(ctx context.Context) (string, error) {
	st, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", MemoriesFile, err)
	}
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.wsOK && st.ModTime().Equal(s.wsMod) && st.Size() == s.wsSize {
		return s.wsText, nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", MemoriesFile, err)
	}
	s.wsText = strings.ToValidUTF8(string(b), "\uFFFD")
	s.wsMod, s.wsSize, s.wsOK = st.ModTime(), st.Size(), int64(len(b)) == st.Size()
	return s.wsText, nil
}

// Rewrite is the outcome of RewriteWorkingSet.
type Rewrite struct {
	Lines   int `json:"lines"`
	Added   int `json:"added"`   // lines that were not there before
	Removed int `json:"removed"` // lines that are gone from MEMORIES.txt
}

// RewriteWorkingSet replaces MEMORIES.txt with content. Every line is
// checked first (a line that looks like a secret, or is longer than
// MaxTextLen, refuses the whole rewrite; nothing is written). With the
// vector backend, new lines are also added to the long-term store (source
// src) and removed lines stay there: they leave the working set, not the
// memory.
func (s *Service) RewriteWorkingSet(ctx context.Context, content string, src Source) (Rewrite, error) {
	if !utf8.ValidString(content) {
		return Rewrite{}, fmt.Errorf("rewrite %s: %w: text is not valid UTF-8", MemoriesFile, ErrInvalid)
	}
	if n := utf8.RuneCountInString(content); n > MaxWorkingSetChars {
		return Rewrite{}, fmt.Errorf("rewrite %s: %w: %d characters (at most %d)", MemoriesFile, ErrTooLong, n, MaxWorkingSetChars)
	}
	var lines []string
	for i, l := range strings.Split(content, "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if l == "" {
			continue
		}
		if _, err := clean(l); err != nil {
			return Rewrite{}, fmt.Errorf("rewrite %s: line %d: %w", MemoriesFile, i+1, err)
		}
		lines = append(lines, l)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.readLines()
	if err != nil {
		return Rewrite{}, err
	}
	oldSet := normSet(old)
	newSet := normSet(lines)
	var rw Rewrite
	rw.Lines = len(lines)
	var fresh []Memory
	for _, l := range lines {
		if !oldSet[normalise(l)] {
			rw.Added++
			fresh = append(fresh, Memory{Text: l, Kind: KindFact, Source: src})
		}
	}
	for _, l := range old {
		if !newSet[normalise(l)] {
			rw.Removed++
		}
	}
	if !s.flat && len(fresh) > 0 {
		if _, err := s.store.AddBatch(ctx, fresh); err != nil {
			return Rewrite{}, fmt.Errorf("rewrite %s: store new lines: %w", MemoriesFile, err)
		}
	}
	if err := s.writeLines(lines); err != nil {
		return Rewrite{}, err
	}
	if rw.Added > 0 || rw.Removed > 0 {
		s.changed(ctx, fmt.Sprintf("memory: rewrite working set (+%d −%d)", rw.Added, rw.Removed), MemoriesFile)
	}
	return rw, nil
}

// Search recalls memories for q (hybrid recall; access statistics updated
// unless q.Peek).
func (s *Service) Search(ctx context.Context, q Query) ([]Scored, error) {
	return s.store.Recall(ctx, q)
}

// Get returns one memory.
func (s *Service) Get(ctx context.Context, id int64) (Memory, error) { return s.store.Get(ctx, id) }

// List lists memories.
func (s *Service) List(ctx context.Context, f Filter) ([]Memory, error) { return s.store.List(ctx, f) }

// Update is a person's edit of a memory (the web page's PUT, `reverie
// memory edit`) and returns the id of the memory's current version. A
// change of text supersedes the memory (see Store.Update): the old version
// is closed and kept as history, the new one is current, and the matching
// MEMORIES.txt line is replaced by the new text. An empty m.Source makes
// the new version SourceUserExplicit (a person wrote that text) and keeps
// the source of a metadata-only change (kind, event time, thread), which
// stays in place. An empty m.Kind keeps the kind. A memory that becomes an
// episode leaves MEMORIES.txt (episodes stay out of it, see Remember), and
// an episode's edit leaves the file alone. Errors as Store.Update.
func (s *Service) Update(ctx context.Context, m Memory) (int64, error) {
	text, err := clean(m.Text)
	if err != nil {
		return 0, err // "memory text is empty": the caller names the memory
	}
	m.Text = text
	// The store and MEMORIES.txt change together: a Reconcile in between
	// would see the old line without its memory and reopen it.
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.store.Get(ctx, m.ID)
	if err != nil {
		return 0, err
	}
	if m.Source == "" && text != old.Text {
		m.Source = SourceUserExplicit
	}
	id, err := s.store.Update(ctx, m)
	if err != nil {
		return id, err
	}
	if !s.flat && (m.Kind == KindEpisode || (m.Kind == "" && old.Kind == KindEpisode)) {
		if old.Kind == KindEpisode {
			return id, nil
		}
		return id, s.replaceLine(ctx, old.Text, "", "memory: edit "+summary(text)+" (now an episode)")
	}
	if text == old.Text {
		return id, nil
	}
	if s.flat {
		s.changed(ctx, "memory: edit "+summary(text), MemoriesFile)
		return id, nil
	}
	return id, s.replaceLine(ctx, old.Text, text, "memory: edit "+summary(text))
}

// Reconciled is the outcome of Reconcile.
type Reconciled struct {
	Lines    int `json:"lines"`    // distinct memory lines in MEMORIES.txt
	Present  int `json:"present"`  // already current in the store
	Reopened int `json:"reopened"` // closed memories with the same text made current again
	Imported int `json:"imported"` // added to the store with source import
	Skipped  int `json:"skipped"`  // refused (secret, too long): left in the file, not stored
}

// Changed reports whether Reconcile wrote to the store.
func (r Reconciled) Changed() bool { return r.Reopened+r.Imported > 0 }

// ensurer is the part of a backend that Reconcile needs (VectorStore).
type ensurer interface {
	EnsureCurrent(ctx context.Context, ms []Memory) ([]Ensured, error)
}

// Reconcile brings the long-term store in line with MEMORIES.txt after the
// file changed behind the service's back: restored from the data dir's
// history, or edited by hand while the agent was stopped. Every line must
// be a current memory afterwards: a line no current memory holds (after
// normalisation) reopens the most recently closed memory with exactly its
// text, else it is added as a KindFact with SourceImport. Lines gone from
// the file are left alone (the file is only the top of the store). A line
// that would be refused as a memory (looks like a secret, too long) is
// skipped and logged by line number, not stored, and stays in the file.
// Idempotent: a second call changes nothing. With the flat backend the
// file is the store and there is nothing to do. The MEMORIES.txt lock is
// held throughout, so Remember and rewrites wait. Backends other than
// VectorStore only get the missing lines added.
func (s *Service) Reconcile(ctx context.Context) (Reconciled, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Read the file itself: a restore can rewrite it with the same size
	// within the file system's time resolution.
	s.wsMu.Lock()
	s.wsOK = false
	s.wsMu.Unlock()
	lines, err := s.readLines()
	if err != nil {
		return Reconciled{}, fmt.Errorf("reconcile memory store with %s: %w", MemoriesFile, err)
	}
	var r Reconciled
	var ms []Memory
	seen := make(map[string]bool, len(lines))
	for i, l := range lines {
		n := normalise(l)
		if seen[n] {
			continue
		}
		seen[n] = true
		r.Lines++
		if s.flat {
			r.Present++
			continue
		}
		text, err := clean(l)
		if err != nil {
			r.Skipped++
			s.log.Warn("MEMORIES.txt line not stored in the memory store", "line", i+1, "err", err)
			continue
		}
		ms = append(ms, Memory{Text: text, Kind: KindFact, Source: SourceImport})
	}
	if s.flat || len(ms) == 0 {
		return r, nil
	}
	es, ok := s.store.(ensurer)
	if !ok {
		// A backend without EnsureCurrent: Add keeps what is current and
		// adds the rest (nothing is reopened).
		before, err := s.store.Count(ctx, false)
		if err == nil {
			_, err = s.store.AddBatch(ctx, ms)
		}
		after, cerr := s.store.Count(ctx, false)
		if err = errors.Join(err, cerr); err != nil {
			return Reconciled{}, fmt.Errorf("reconcile memory store with %s: %w", MemoriesFile, err)
		}
		r.Imported = after - before
		r.Present = len(ms) - r.Imported
		return r, nil
	}
	out, err := es.EnsureCurrent(ctx, ms)
	if err != nil {
		return Reconciled{}, fmt.Errorf("reconcile memory store with %s: %w", MemoriesFile, err)
	}
	for _, e := range out {
		switch e.Outcome {
		case EnsurePresent:
			r.Present++
		case EnsureReopened:
			r.Reopened++
		case EnsureAdded:
			r.Imported++
		}
	}
	if r.Changed() {
		s.log.Info("memory store re-synced with MEMORIES.txt", "lines", r.Lines, "reopened", r.Reopened, "imported", r.Imported)
	}
	return r, nil
}

// Forget deletes a memory permanently and removes its line from
// MEMORIES.txt. It returns the forgotten memory; ErrNotFound when absent.
// An id that a newer version replaced (an edit, a dream's merge) is the
// memory the user was told of, not the old text alone: Forget refuses it
// with a *ReplacedError naming the current version, and deletes nothing.
// Once no current version descends from it (that one was forgotten, or a
// dream closed it), the old version is forgotten like any other.
func (s *Service) Forget(ctx context.Context, id int64) (Memory, error) {
	s.mu.Lock() // with MEMORIES.txt, as in Update
	defer s.mu.Unlock()
	m, err := s.store.Get(ctx, id)
	if err != nil {
		return Memory{}, err
	}
	if cur, err := s.currentVersion(ctx, m); err != nil {
		return Memory{}, fmt.Errorf("forget memory %d: %w", id, err)
	} else if cur != 0 {
		return Memory{}, &ReplacedError{ID: id, Current: cur}
	}
	if err := s.store.Delete(ctx, id); err != nil {
		return Memory{}, err
	}
	if s.flat {
		s.changed(ctx, "memory: forget "+summary(m.Text), MemoriesFile)
		return m, nil
	}
	return m, s.replaceLine(ctx, m.Text, "", "memory: forget "+summary(m.Text))
}

// maxVersions bounds the walk from a memory to its current version.
const maxVersions = 1000

// currentVersion is the id of the current memory that replaced m, through
// however many versions; 0 when m is current or nothing current descends
// from it.
func (s *Service) currentVersion(ctx context.Context, m Memory) (int64, error) {
	for range maxVersions {
		if m.ValidTo == nil || m.SupersededBy == 0 {
			return 0, nil
		}
		next, err := s.store.Get(ctx, m.SupersededBy)
		if errors.Is(err, ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if next.ValidTo == nil {
			return next.ID, nil
		}
		m = next
	}
	return 0, nil
}

// FindExact returns the current memories whose text equals text after
// normalisation (case, white space and trailing punctuation ignored).
func (s *Service) FindExact(ctx context.Context, text string) ([]Memory, error) {
	want := normalise(text)
	if want == "" {
		return nil, ErrEmpty
	}
	res, err := s.store.Recall(ctx, Query{Text: text, Limit: 20, Peek: true})
	if err != nil {
		return nil, err
	}
	var out []Memory
	for _, r := range res {
		if normalise(r.Memory.Text) == want {
			out = append(out, r.Memory)
		}
	}
	return out, nil
}

// replaceLine replaces (or, with repl "", removes) the MEMORIES.txt lines
// equal to old after normalisation. The caller holds s.mu.
func (s *Service) replaceLine(ctx context.Context, old, repl, message string) error {
	lines, err := s.readLines()
	if err != nil {
		return err
	}
	want := normalise(old)
	changed := false
	out := lines[:0:0]
	for _, l := range lines {
		if normalise(l) == want {
			changed = true
			if repl != "" {
				out = append(out, textclip.OneLine(repl))
			}
			continue
		}
		out = append(out, l)
	}
	if !changed {
		return nil
	}
	if err := s.writeLines(out); err != nil {
		return err
	}
	s.changed(ctx, message, MemoriesFile)
	return nil
}

func (s *Service) readLines() ([]string, error) {
	text, err := s.WorkingSet(context.Background())
	if err != nil {
		return nil, err
	}
	text = strings.TrimPrefix(text, "\uFEFF")
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(strings.TrimSuffix(l, "\r")); l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

func (s *Service) writeLines(lines []string) error {
	body := strings.Join(lines, "\n")
	if body != "" {
		body += "\n"
	}
	err := writeAtomic(s.path, body)
	// Forget the cached text even if the new file kept size and time (a
	// write within the clock's resolution).
	s.wsMu.Lock()
	s.wsOK = false
	s.wsMu.Unlock()
	return err
}

// writeAtomic writes body to path through a temp file, fsync and rename.
func writeAtomic(path, body string) error {
	if err := datadir.WriteFile(path, []byte(body), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

func containsLine(lines []string, text string) bool {
	want := normalise(text)
	for _, l := range lines {
		if normalise(l) == want {
			return true
		}
	}
	return false
}

func normSet(lines []string) map[string]bool {
	m := make(map[string]bool, len(lines))
	for _, l := range lines {
		m[normalise(l)] = true
	}
	return m
}

// summary shortens text for a change message.
func summary(text string) string {
	t := textclip.OneLine(text)
	if utf8.RuneCountInString(t) <= 60 {
		return t
	}
	r := []rune(t)
	return string(r[:57]) + "…"
}
