package skills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/textcheck"
)

// Saved reports what Save did.
type Saved struct {
	Skill Skill
	// Replaced: a skill of that name existed and was overwritten.
	Replaced bool
	// Unchanged: the skill already had exactly this text; nothing was
	// written.
	Unchanged bool
}

// CleanBody normalises body (UTF-8, "\n" line endings, trimmed) and checks
// it against limit characters (0: DefaultMaxBodyChars): ErrEmpty,
// ErrTooLong (also for a first line over MaxSummaryChars) or ErrSecret.
func CleanBody(body string, limit int) (string, error) {
	if limit <= 0 {
		limit = DefaultMaxBodyChars
	}
	b := normalizeBody(body)
	if b == "" {
		return "", fmt.Errorf("skill %w", ErrEmpty)
	}
	if n := utf8.RuneCountInString(b); n > limit {
		return "", fmt.Errorf("skill %w: %d characters, at most %d; condense it or split it into several skills", ErrTooLong, n, limit)
	}
	first, _, _ := strings.Cut(b, "\n")
	if n := utf8.RuneCountInString(first); n > MaxSummaryChars {
		return "", fmt.Errorf("skill %w: the first line is the summary shown in the table of contents and is %d characters; keep it to one short line (at most %d) and put the details below it", ErrTooLong, n, MaxSummaryChars)
	}
	if what := textcheck.LooksSecret(b); what != "" {
		return "", fmt.Errorf("skill %w (%s); refer to where the secret is kept instead of writing it", ErrSecret, what)
	}
	return b, nil
}

// Compose builds a skill body from a one-line summary and the content below
// it. A content that already starts with the summary is not repeated.
func Compose(summary, content string) (string, error) {
	sum := strings.Join(strings.Fields(summary), " ")
	if sum == "" {
		return "", fmt.Errorf("skill %w: the summary is empty", ErrEmpty)
	}
	if strings.ContainsAny(strings.TrimSpace(summary), "\r\n") {
		return "", errors.New("the summary must be one line")
	}
	content = normalizeBody(content)
	if content == "" {
		return "", fmt.Errorf("skill %w: the content (the steps below the summary) is empty", ErrEmpty)
	}
	if Summarize(content) == Summarize(sum) {
		return content, nil
	}
	return sum + "\n\n" + content, nil
}

// Save creates or replaces skill name with body (see CleanName and
// CleanBody; on error nothing is written). The file is replaced atomically.
// Options.Changed is called when the file changed.
func (s *Store) Save(ctx context.Context, name, body string) (Saved, error) {
	// Refusals of the input say what is wrong on their own ("skill text is
	// empty: …"); the operation's words go only on file errors.
	n, err := CleanName(name)
	if err != nil {
		return Saved{}, err
	}
	if sk, ok := s.folderSkill(ctx, n); ok {
		return Saved{}, errFolder(sk)
	}
	b, err := CleanBody(body, s.maxBody)
	if err != nil {
		return Saved{}, err
	}
	saved, err := s.saveLocked(ctx, n, b)
	if err != nil {
		return Saved{}, fmt.Errorf("save skill %s: %w", n, err)
	}
	switch {
	case saved.Unchanged:
	case saved.Replaced:
		s.notify(ctx, "skills: update "+n, RelPath(n))
	default:
		s.notify(ctx, "skills: add "+n, RelPath(n))
	}
	return saved, nil
}

// saveLocked writes the cleaned body b of skill n under writeMu.
func (s *Store) saveLocked(ctx context.Context, n, b string) (Saved, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	path := filepath.Join(s.dir, n+Ext)
	old, err := os.ReadFile(path)
	replaced := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Saved{}, err
	}
	if replaced && normalizeBody(string(old)) == b {
		sk, err := s.Get(ctx, n)
		return Saved{Skill: sk, Replaced: true, Unchanged: true}, err
	}
	err = s.writeFile(path, []byte(b+"\n"))
	s.invalidate()
	if err != nil {
		return Saved{}, err
	}
	sk, err := s.Get(ctx, n)
	if err != nil {
		return Saved{}, fmt.Errorf("read back: %w", err)
	}
	return Saved{Skill: sk, Replaced: replaced}, nil
}

// Delete removes skill name: a file listed under exactly that name (so a
// hand-made "Git Tips.md" can be removed too), else the cleaned name. An
// unknown skill is ErrNotFound.
func (s *Store) Delete(ctx context.Context, name string) error {
	n := name
	if sk, err := s.Get(ctx, name); err == nil {
		if sk.Folder {
			return fmt.Errorf("delete skill: %w", errFolder(sk))
		}
		n = sk.Name
	} else if n, err = CleanName(name); err != nil {
		return fmt.Errorf("delete skill: %w", err)
	}
	if strings.ContainsAny(n, `/\`) || strings.HasPrefix(n, ".") {
		return fmt.Errorf("delete skill: %w %q", ErrInvalidName, n)
	}
	s.writeMu.Lock()
	err := os.Remove(filepath.Join(s.dir, n+Ext))
	if err == nil {
		err = syncDir(s.dir)
	}
	s.invalidate()
	s.writeMu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("skill %q %w", n, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete skill %s: %w", n, err)
	}
	s.notify(ctx, "skills: delete "+n, RelPath(n))
	return nil
}

func (s *Store) notify(ctx context.Context, message string, paths ...string) {
	if s.changed != nil {
		s.changed(ctx, message, paths...)
	}
}

// writeFile replaces path with data atomically (datadir.WriteFile).
func (s *Store) writeFile(path string, data []byte) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	return datadir.WriteFile(path, data, 0o644)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
