package dreaming

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Component is the migration component name.
const Component = "dreaming"

// Errors.
var (
	// ErrBusy: a dream is already running.
	ErrBusy = errors.New("a dream is already running")
	// ErrNotFound: no dream has that id.
	ErrNotFound = errors.New("dream not found")
	// ErrReverted: the dream was already reverted.
	ErrReverted = errors.New("dream already reverted")
)

// refusal is Revert's ErrNotFound or ErrReverted for dream id, read as a
// sentence that names it: "dream 9 not found", "dream 9 was already
// reverted".
type refusal struct {
	id  int64
	err error
}

func (r refusal) Error() string {
	if r.err == ErrReverted {
		return fmt.Sprintf("dream %d was already reverted", r.id)
	}
	return fmt.Sprintf("dream %d not found", r.id)
}

func (r refusal) Unwrap() error { return r.err }

// Model is the dreaming role's model: direct calls, no tools.
type Model interface {
	Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
}

// Pulse is what dreaming needs of the pulse store.
type Pulse interface {
	Active(ctx context.Context) ([]pulse.Item, error)
	Get(ctx context.Context, id int64) (pulse.Item, error)
	Update(ctx context.Context, id int64, p pulse.Patch) (pulse.Item, error)
	PurgeCompleted(ctx context.Context, olderThan time.Duration) (int, error)
}

// CommitFunc records the files a dream changed as one change of the data
// dir's history and returns its short revision ("" when nothing changed or
// history is off).
type CommitFunc func(ctx context.Context, message string, paths ...string) (string, error)

// Settings are the tunables of seed 001 and the safety guard.
type Settings struct {
	// DedupThreshold: memories at cosine ≥ this, every two of them, may be
	// one cluster (0.85), which the model merges or calls distinct.
	DedupThreshold float64
	// ContradictionFloor: pairs in [floor, threshold) are checked (0.5).
	ContradictionFloor float64
	// MaxContradictions caps the pairs sent to the model (20).
	MaxContradictions int
	// StaleDays and StaleMinAccess: a memory not accessed for StaleDays
	// with fewer than StaleMinAccess accesses is pruned (90, 3), unless the
	// user asked for it explicitly.
	StaleDays      int
	StaleMinAccess int
	// ExportTop memories (by access) form MEMORIES.txt (50).
	ExportTop int
	// EpisodeDays: the episodes of a thread's session whose newest is older
	// than this are condensed into facts and closed (7); at most
	// MaxEpisodeSessions sessions per dream (20), oldest first.
	EpisodeDays        int
	MaxEpisodeSessions int
	// MaxDropShare refuses a consolidation that would remove more than this
	// share of the entries (0.25).
	MaxDropShare float64
	// PulsePurgeAge: completed pulse items older than this are purged (30 days).
	PulsePurgeAge time.Duration
	// SkillCondenseTokens: skills longer than about this many tokens are
	// condensed (200; the prompt asks for about 150).
	SkillCondenseTokens int
	// SkillMergeThreshold: skills whose texts are at cosine ≥ this are merged (0.8).
	SkillMergeThreshold float64
	// SkillMaxChars caps a merged or condensed skill, in characters, like
	// the skill store's limit (0: skills.DefaultMaxBodyChars).
	SkillMaxChars int
	// CallTimeout bounds one model call (2 minutes).
	CallTimeout time.Duration
}

// DefaultSettings are the seeds' numbers.
func DefaultSettings() Settings {
	return Settings{DedupThreshold: 0.85, ContradictionFloor: 0.5, MaxContradictions: 20, StaleDays: 90,
		StaleMinAccess: 3, ExportTop: 50, EpisodeDays: 7, MaxEpisodeSessions: 20, MaxDropShare: 0.25, PulsePurgeAge: 30 * 24 * time.Hour,
		SkillCondenseTokens: 200, SkillMergeThreshold: 0.8, CallTimeout: 2 * time.Minute}
}

// Options configure New.
type Options struct {
	DB      *sql.DB
	DataDir string
	Memory  *memory.Service // required
	Pulse   Pulse           // nil: the pulse phase is skipped
	Model   Model           // the dreaming role (required)
	// Embedder compares skills (nil: the offline hashing embedder; see
	// skillsPass.vectors).
	Embedder interface {
		Embed(ctx context.Context, texts []string) ([][]float32, error)
	}
	Commit   CommitFunc // nil: no history commit
	Settings Settings   // zero: DefaultSettings
	Count    func(string) int
	Now      func() time.Time
	Logger   *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Dreamer runs consolidations. It is safe for concurrent use; one dream
// runs at a time.
type Dreamer struct {
	o   Options
	set Settings
	log *slog.Logger
	mu  sync.Mutex // held while a dream or a revert runs
}

// New migrates the dreaming tables and returns the Dreamer.
func New(ctx context.Context, o Options) (*Dreamer, error) {
	if o.DB == nil || o.Memory == nil || o.Model == nil || o.DataDir == "" {
		return nil, errors.New("dreaming: DB, DataDir, Memory and Model are required")
	}
	if err := o.Migrations.Migrate(ctx, o.DB, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	if o.Settings == (Settings{}) {
		o.Settings = DefaultSettings()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Count == nil {
		o.Count = func(s string) int { return (len(s) + 3) / 4 }
	}
	return &Dreamer{o: o, set: o.Settings, log: o.Logger}, nil
}

// Status of a component's consolidation.
type Status string

// Statuses.
const (
	StatusOK      Status = "ok"      // consolidated (possibly with nothing to change)
	StatusSkipped Status = "skipped" // nothing to do, or not configured
	StatusRefused Status = "refused" // the safety guard refused the result; nothing changed
	StatusFailed  Status = "failed"  // an error; nothing of this component changed
)

// ComponentReport is what one component's consolidation did.
type ComponentReport struct {
	Name   string   `json:"name"`
	Status Status   `json:"status"`
	Detail string   `json:"detail,omitempty"`
	Lines  []string `json:"lines,omitempty"` // one per change, for people
}

// Report is the outcome of one dream.
type Report struct {
	ID         int64             `json:"id"`
	Trigger    string            `json:"trigger"`
	Started    time.Time         `json:"started"`
	Finished   time.Time         `json:"finished"`
	Components []ComponentReport `json:"components"`
	ModelCalls int               `json:"model_calls"`
	Usage      llm.Usage         `json:"usage"`
	// Revision is the data dir history's revision holding the dream's file
	// changes ("" when none).
	Revision string `json:"revision,omitempty"`
	// Changes is the number of changes journalled, which Revert puts
	// back (0: the dream changed nothing).
	Changes  int  `json:"changes"`
	Reverted bool `json:"reverted,omitempty"`
}

// Format renders the report for a chat reply or the terminal.
func (r Report) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Dream #%d (%s) — %s, %d model call(s)", r.ID, r.Trigger,
		r.Finished.Sub(r.Started).Round(time.Millisecond), r.ModelCalls)
	if r.Revision != "" {
		fmt.Fprintf(&b, ", files at revision %s", r.Revision)
	}
	if r.Reverted {
		b.WriteString(" [reverted]")
	}
	b.WriteString("\n")
	for _, c := range r.Components {
		fmt.Fprintf(&b, "- %s: %s", c.Name, c.Status)
		if c.Detail != "" {
			b.WriteString(" — " + c.Detail)
		}
		b.WriteString("\n")
		for _, l := range c.Lines {
			b.WriteString("    " + l + "\n")
		}
	}
	switch {
	case r.Reverted:
	case r.Changes == 0:
		b.WriteString("Nothing was changed, so there is nothing to undo.")
	default:
		fmt.Fprintf(&b, "Undo with: reverie dream revert %d", r.ID)
	}
	return strings.TrimRight(b.String(), "\n")
}

// run is one dream in progress: its journal and counters.
type run struct {
	d       *Dreamer
	id      int64
	seq     int
	touched map[string]bool
	rep     *Report
}

// Dream consolidates every component once and returns the report. A
// component that fails or is refused changes nothing and does not stop the
// others. ErrBusy when a dream is running.
func (d *Dreamer) Dream(ctx context.Context, trigger string) (Report, error) {
	if !d.mu.TryLock() {
		return Report{}, ErrBusy
	}
	defer d.mu.Unlock()
	start := d.o.Now()
	res, err := d.o.DB.ExecContext(ctx, `INSERT INTO dream_runs (started_at, trigger) VALUES (?, ?)`, start.UnixNano(), trigger)
	if err != nil {
		return Report{}, fmt.Errorf("start dream: %w", err)
	}
	id, _ := res.LastInsertId()
	rep := &Report{ID: id, Trigger: trigger, Started: start}
	r := &run{d: d, id: id, touched: map[string]bool{}, rep: rep}
	d.log.Info("dreaming started", "dream", id, "trigger", trigger)

	phases := []struct {
		name string
		fn   func(*run, context.Context) ComponentReport
	}{
		{"memories", (*run).memories},
		{"pulse", (*run).pulse},
		{"skills", (*run).skills},
	}
	for _, p := range phases {
		c := func() (c ComponentReport) {
			defer func() {
				if v := recover(); v != nil {
					c = ComponentReport{Status: StatusFailed, Detail: fmt.Sprintf("panic: %v", v)}
				}
			}()
			return p.fn(r, ctx)
		}()
		c.Name = p.name
		if c.Status == StatusFailed || c.Status == StatusRefused {
			d.log.Warn("dreaming component not consolidated", "dream", id, "component", p.name, "status", c.Status, "detail", c.Detail)
		}
		rep.Components = append(rep.Components, c)
	}
	if d.o.Commit != nil && len(r.touched) > 0 {
		paths := make([]string, 0, len(r.touched))
		for p := range r.touched {
			paths = append(paths, p)
		}
		rev, err := d.o.Commit(ctx, fmt.Sprintf("dream #%d (%s)", id, trigger), paths...)
		if err != nil {
			d.log.Warn("could not record the dream in the data dir history", "err", err)
		}
		rep.Revision = rev
	}
	rep.Finished = d.o.Now()
	rep.Changes = r.seq
	body, _ := json.Marshal(rep)
	if _, err := d.o.DB.ExecContext(context.WithoutCancel(ctx), `UPDATE dream_runs SET finished_at = ?, report = ? WHERE id = ?`,
		rep.Finished.UnixNano(), string(body), id); err != nil {
		return *rep, fmt.Errorf("save dream report: %w", err)
	}
	d.log.Info("dreaming finished", "dream", id, "model_calls", rep.ModelCalls,
		"tokens", rep.Usage.InputTokens+rep.Usage.OutputTokens, "took", rep.Finished.Sub(start).Round(time.Millisecond).String())
	return *rep, nil
}

// unchanged reports whether the content at rel is what the last dream
// left there.
func (r *run) unchanged(ctx context.Context, rel, content string) bool {
	var h string
	err := r.d.o.DB.QueryRowContext(ctx, `SELECT hash FROM dream_seen WHERE key = ?`, rel).Scan(&h)
	return err == nil && h == fingerprint(content)
}

// seen records content at rel as consolidated.
func (r *run) seen(ctx context.Context, rel, content string) {
	if _, err := r.d.o.DB.ExecContext(ctx, `INSERT INTO dream_seen (key, hash) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET hash = excluded.hash`,
		rel, fingerprint(content)); err != nil {
		r.d.log.Warn("dreaming: could not record a fingerprint", "path", rel, "err", err)
	}
}

func fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// journal records one change of the run.
func (r *run) journal(ctx context.Context, target, action, ref string, before *string) error {
	r.seq++
	var b any
	if before != nil {
		b = *before
	}
	_, err := r.d.o.DB.ExecContext(ctx, `INSERT INTO dream_changes (run_id, seq, target, action, ref, before) VALUES (?, ?, ?, ?, ?, ?)`,
		r.id, r.seq, target, action, ref, b)
	if err != nil {
		return fmt.Errorf("journal dream change: %w", err)
	}
	return nil
}

// writeFile replaces a data-dir file, journalling its previous content.
func (r *run) writeFile(ctx context.Context, rel, content string) error {
	path := filepath.Join(r.d.o.DataDir, rel)
	var before *string
	if b, err := os.ReadFile(path); err == nil {
		s := string(b)
		if s == content {
			return nil
		}
		before = &s
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if err := r.journal(ctx, "file", "written", rel, before); err != nil {
		return err
	}
	r.touched[rel] = true
	return writeAtomic(path, content)
}

// removeFile deletes a data-dir file, journalling its content.
func (r *run) removeFile(ctx context.Context, rel string) error {
	path := filepath.Join(r.d.o.DataDir, rel)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	s := string(b)
	if err := r.journal(ctx, "file", "removed", rel, &s); err != nil {
		return err
	}
	r.touched[rel] = true
	return os.Remove(path)
}

// ask renders a prompt template with content and calls the model once.
func (r *run) ask(ctx context.Context, templateFile, content string, format *llm.ResponseFormat) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.d.o.DataDir, templateFile))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", templateFile, err)
	}
	text := prompt.Render(string(b), map[string]string{"content": content})
	cctx, cancel := context.WithTimeout(ctx, r.d.set.CallTimeout)
	defer cancel()
	temp := 0.2
	r.rep.ModelCalls++
	resp, err := r.d.o.Model.Generate(cctx, llm.Request{Messages: []llm.Message{llm.UserText(text)}, Temperature: &temp,
		ResponseFormat: format}, nil)
	if err != nil {
		return "", fmt.Errorf("model call for %s: %w", filepath.Base(templateFile), err)
	}
	r.rep.Usage = r.rep.Usage.Add(resp.Usage)
	return strings.TrimSpace(resp.Message.Text()), nil
}

// Reports returns the most recent dreams, newest first.
func (d *Dreamer) Reports(ctx context.Context, limit int) ([]Report, error) {
	if limit <= 0 {
		limit = 20
	}
	out, err := sqlite.Rows(ctx, d.o.DB, func(row sqlite.Scanner) (Report, error) {
		var body string
		var reverted bool
		var changes int
		if err := row.Scan(&body, &reverted, &changes); err != nil {
			return Report{}, err
		}
		var rep Report
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			return Report{}, fmt.Errorf("decode report: %w", err)
		}
		// Counted from the journal: reports saved before they carried
		// the count have it too.
		rep.Reverted, rep.Changes = reverted, changes
		return rep, nil
	}, `SELECT report, reverted_at IS NOT NULL, (SELECT count(*) FROM dream_changes c WHERE c.run_id = dream_runs.id)
		FROM dream_runs WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list dreams: %w", err)
	}
	return out, nil
}

// Revert undoes every change a dream made, newest first: closed memories
// are reopened, created ones deleted, pulse items set back, files put back
// as they were. Pulse items purged by the dream (completed more than 30 days
// before) are not brought back. ErrNotFound, ErrReverted, ErrBusy.
func (d *Dreamer) Revert(ctx context.Context, id int64) (int, error) {
	if !d.mu.TryLock() {
		return 0, ErrBusy
	}
	defer d.mu.Unlock()
	var reverted sql.NullInt64
	if err := d.o.DB.QueryRowContext(ctx, `SELECT reverted_at FROM dream_runs WHERE id = ?`, id).Scan(&reverted); errors.Is(err, sql.ErrNoRows) {
		return 0, refusal{id: id, err: ErrNotFound}
	} else if err != nil {
		return 0, fmt.Errorf("revert dream %d: %w", id, err)
	}
	if reverted.Valid {
		return 0, refusal{id: id, err: ErrReverted}
	}
	type change struct {
		target, action, ref string
		before              sql.NullString
	}
	changes, err := sqlite.Rows(ctx, d.o.DB, func(row sqlite.Scanner) (change, error) {
		var c change
		err := row.Scan(&c.target, &c.action, &c.ref, &c.before)
		return c, err
	}, `SELECT target, action, ref, before FROM dream_changes WHERE run_id = ? ORDER BY seq DESC`, id)
	if err != nil {
		return 0, fmt.Errorf("revert dream %d: %w", id, err)
	}
	vs, _ := d.o.Memory.LocalVectors() // the dream changed only Reverie's own store
	touched := map[string]bool{}
	var errs []error
	for _, c := range changes {
		var err error
		switch c.target {
		case "memory":
			var mid int64
			fmt.Sscan(c.ref, &mid)
			switch {
			case vs == nil:
				err = errors.New("memory backend changed since the dream")
			case c.action == "closed":
				err = vs.Reopen(ctx, mid)
			case c.action == "created":
				if err = vs.Delete(ctx, mid); errors.Is(err, memory.ErrNotFound) {
					err = nil
				}
			}
		case "pulse":
			var it pulse.Item
			if err = json.Unmarshal([]byte(c.before.String), &it); err == nil && d.o.Pulse != nil {
				_, err = d.o.Pulse.Update(ctx, it.ID, pulse.Patch{Text: &it.Text, Priority: &it.Priority, Status: &it.Status})
			}
		case "file":
			path := filepath.Join(d.o.DataDir, c.ref)
			touched[c.ref] = true
			if c.before.Valid {
				err = writeAtomic(path, c.before.String)
			} else if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s %s: %w", c.target, c.action, c.ref, err))
		}
	}
	if _, err := d.o.DB.ExecContext(ctx, `UPDATE dream_runs SET reverted_at = ? WHERE id = ?`, d.o.Now().UnixNano(), id); err != nil {
		errs = append(errs, err)
	}
	if d.o.Commit != nil && len(touched) > 0 {
		paths := make([]string, 0, len(touched))
		for p := range touched {
			paths = append(paths, p)
		}
		if _, err := d.o.Commit(ctx, fmt.Sprintf("revert dream #%d", id), paths...); err != nil {
			d.log.Warn("could not record the revert in the data dir history", "err", err)
		}
	}
	d.log.Info("dream reverted", "dream", id, "changes", len(changes), "errors", len(errs))
	return len(changes), errors.Join(errs...)
}

// writeAtomic writes body to path through a temp file, fsync and rename.
func writeAtomic(path, body string) error { return datadir.WriteFile(path, []byte(body), 0o600) }

// Owner and Job name the nightly dream's scheduled job ("dreaming/nightly").
const (
	Owner = "dreaming"
	Job   = "nightly"
	// JobTimeout bounds one scheduled dream: longer than the scheduler's
	// run timeout, a dream with many skills on a slow local model takes a
	// while.
	JobTimeout = 3 * time.Hour
)

// Nightly is the nightly dream at Hour:Minute (in the scheduler's time
// zone) as a scheduled job, offered like an extension's job
// (extension.SchedulerProvider): the scheduler runs it, catches up a night
// missed while Reverie was stopped, and leaves a receipt with the dream's
// tokens for every run.
type Nightly struct {
	Dreamer      *Dreamer
	Hour, Minute int
}

// ScheduledJobs is the one job, "nightly", daily at Hour:Minute.
func (n Nightly) ScheduledJobs() []extension.Job {
	return []extension.Job{{Name: Job, Schedule: fmt.Sprintf("%d %d * * *", n.Minute, n.Hour), Timeout: JobTimeout, Report: n.dream}}
}

func (n Nightly) dream(ctx context.Context) (extension.JobReport, error) {
	rep, err := n.Dreamer.Dream(ctx, "schedule")
	switch {
	case errors.Is(err, ErrBusy):
		return extension.JobReport{Skipped: true, Note: "a dream was already running"}, nil
	case err != nil:
		return extension.JobReport{Usage: rep.Usage}, err
	}
	return extension.JobReport{Usage: rep.Usage, Note: fmt.Sprintf("dream #%d, %d model call(s)", rep.ID, rep.ModelCalls)}, nil
}

var _ extension.SchedulerProvider = Nightly{}
