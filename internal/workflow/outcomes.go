package workflow

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textclip"
)

// recordOutcomeLocked adds n's run to sub_session_outcomes (sessions that
// never started have no outcome).
func (m *Manager) recordOutcomeLocked(n *node, b *batch) {
	var dur time.Duration
	if !n.startedAt.IsZero() {
		dur = n.finishedAt.Sub(n.startedAt)
	}
	b.add(`INSERT INTO sub_session_outcomes (session_id, workflow_id, task_id, objective, mode, profile, status,
		started_at, finished_at, duration_ms, tool_calls, continuation_depth, skills_loaded, supervisor_verdict,
		input_tokens, output_tokens, result_chars, error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		n.id, n.workflow, n.taskID, n.objective, string(n.mode), n.profile, string(cmp.Or(n.outcome, n.state)),
		unixNano(n.startedAt), unixNano(n.finishedAt), dur.Milliseconds(), n.toolCalls, n.hop, encodeList(n.skills),
		n.verdict, n.usage.InputTokens, n.usage.OutputTokens, len([]rune(n.result)), n.errText)
}

// OutcomeFilter selects outcomes. Zero fields do not filter.
type OutcomeFilter struct {
	TaskID  string
	Session string
	Status  State
	// Limit caps the result (default 100, at most 1000), newest first.
	Limit int
}

// Outcomes lists sub_session_outcomes rows, newest first.
func (m *Manager) Outcomes(ctx context.Context, f OutcomeFilter) ([]Outcome, error) {
	var where []string
	var args []any
	if f.TaskID != "" {
		where, args = append(where, "task_id = ?"), append(args, f.TaskID)
	}
	if f.Session != "" {
		where, args = append(where, "session_id = ?"), append(args, f.Session)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	q := `SELECT id, session_id, workflow_id, task_id, objective, mode, profile, status, started_at, finished_at,
		duration_ms, tool_calls, continuation_depth, skills_loaded, supervisor_verdict, input_tokens, output_tokens,
		result_chars, error FROM sub_session_outcomes`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	out, err := sqlite.Rows(ctx, m.o.DB, scanOutcome, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list outcomes: %w", err)
	}
	return out, nil
}

func scanOutcome(row sqlite.Scanner) (Outcome, error) {
	var o Outcome
	var st, skills string
	var started, finished, durMS int64
	if err := row.Scan(&o.ID, &o.SessionID, &o.Workflow, &o.TaskID, &o.Objective, &o.Mode, &o.Profile, &st,
		&started, &finished, &durMS, &o.ToolCalls, &o.ContinuationDepth, &skills, &o.SupervisorVerdict,
		&o.Usage.InputTokens, &o.Usage.OutputTokens, &o.ResultChars, &o.Error); err != nil {
		return Outcome{}, err
	}
	o.Status, o.StartedAt, o.FinishedAt = State(st), fromNano(started), fromNano(finished)
	o.Duration = time.Duration(durMS) * time.Millisecond
	o.SkillsLoaded = decodeList(skills)
	if o.SkillsLoaded == nil {
		o.SkillsLoaded = []string{}
	}
	return o, nil
}

// Historical feedback: before a spawn, past outcomes of similar
// objectives (the 50 most recent full-text matches, ranked by the share of
// the new objective's words they contain, at least 40%) become a short note in the worker's task.
const (
	feedbackCandidates = 50
	feedbackLines      = 3
	feedbackMinShare   = 0.4
)

// feedbackQuery selects the most recent outcomes matching a full-text query.
const feedbackQuery = `SELECT o.objective, o.status, o.duration_ms, o.tool_calls, o.continuation_depth, o.error
		FROM sub_session_outcomes o WHERE o.id IN (SELECT rowid FROM sub_session_outcomes_fts
			WHERE sub_session_outcomes_fts MATCH ? ORDER BY rowid DESC LIMIT ?) ORDER BY o.id DESC`

// feedback returns the historical-feedback note for objective ("" when
// nothing similar ran before).
func (m *Manager) feedback(ctx context.Context, objective string) string {
	terms := keywords(objective)
	if len(terms) == 0 {
		return ""
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"`
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	// The most recent matches (cheap: FTS5 walks rowids backwards and
	// stops), ranked here by word overlap.
	rows, err := m.feedbackStmt.QueryContext(ctx,
		strings.Join(quoted, " OR "), feedbackCandidates)
	if err != nil {
		m.log.Warn("historical feedback unavailable", "err", err)
		return ""
	}
	defer rows.Close()
	type past struct {
		line   string
		status State
		score  float64
	}
	var found []past
	for rows.Next() {
		var obj, st, errText string
		var durMS int64
		var calls, hops int
		if err := rows.Scan(&obj, &st, &durMS, &calls, &hops, &errText); err != nil {
			m.log.Warn("historical feedback unavailable", "err", err)
			return ""
		}
		score := share(terms, keywords(obj))
		if score < feedbackMinShare {
			continue
		}
		dur := (time.Duration(durMS) * time.Millisecond).Round(time.Second)
		line := fmt.Sprintf("- %q → %s after %s, %d tool calls", textclip.Line(obj, 120), st, dur, calls)
		if hops > 0 {
			line += fmt.Sprintf(", continuation %d", hops)
		}
		if State(st) == StateFailed && errText != "" {
			line += ": " + textclip.Line(errText, 160)
		}
		found = append(found, past{line, State(st), score})
	}
	if err := rows.Err(); err != nil {
		m.log.Warn("historical feedback unavailable", "err", err)
		return ""
	}
	slices.SortStableFunc(found, func(a, b past) int { return cmp.Compare(b.score, a.score) })
	var lines []string
	var timeouts, failures int
	for _, p := range found[:min(len(found), feedbackLines)] {
		lines = append(lines, p.line)
		switch p.status {
		case StateTimeout:
			timeouts++
		case StateFailed:
			failures++
		}
	}
	if len(lines) == 0 {
		return ""
	}
	note := "Similar tasks ran before:\n" + strings.Join(lines, "\n")
	if timeouts > 0 {
		note += "\nSimilar work timed out before: pace yourself, work in small steps and report what you have before the time limit."
	}
	if failures > 0 {
		note += "\nSimilar work failed before: avoid repeating the approach that failed."
	}
	return note
}

var stopwords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "from": true, "that": true, "this": true, "into": true,
	"about": true, "then": true, "than": true, "them": true, "their": true, "there": true, "what": true,
	"when": true, "which": true, "will": true, "your": true, "all": true, "any": true, "are": true, "was": true,
	"were": true, "has": true, "have": true, "had": true, "not": true, "but": true, "its": true, "our": true,
	"you": true, "can": true, "out": true, "over": true, "some": true, "each": true, "per": true, "via": true,
}

// keywords are the distinct lower-case words (3+ letters, no stopwords)
// of s, at most 16.
func keywords(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(w)) < 3 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == 16 {
			break
		}
	}
	return out
}

// share is the fraction of want found in have.
func share(want, have []string) float64 {
	if len(want) == 0 {
		return 0
	}
	set := make(map[string]bool, len(have))
	for _, h := range have {
		set[h] = true
	}
	n := 0
	for _, w := range want {
		if set[w] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// skillsLoaded names the skills a run read, sorted: read_skill (and other
// read/load/get skill tools) with a "name" argument, and read_file on
// skills/*.md.
func skillsLoaded(calls []callInfo) []string {
	var out []string
	for _, c := range calls {
		var name string
		switch {
		case strings.Contains(c.name, "skill") && c.args.Name != "" &&
			(strings.HasPrefix(c.name, "read") || strings.HasPrefix(c.name, "load") || strings.HasPrefix(c.name, "get")):
			name = c.args.Name
		case c.name == "read_file" && strings.Contains(c.args.Path, "skills/") && strings.HasSuffix(c.args.Path, ".md"):
			p := c.args.Path[strings.LastIndex(c.args.Path, "skills/")+len("skills/"):]
			name = strings.TrimSuffix(p, ".md")
		}
		if name != "" && !strings.Contains(name, "/") {
			out = appendUnique(out, name)
		}
	}
	slices.Sort(out) // calls of a round finish in any order
	return out
}

// mergeSkills returns the sorted union of two lists of skill names.
func mergeSkills(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		out = appendUnique(out, s)
	}
	slices.Sort(out)
	return out
}

// callInfo is what skillsLoaded needs of a tool call.
type callInfo struct {
	name string
	args struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
}
