package dreaming

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/llm"
)

// maxClustersPerDream bounds the dedup model calls of one dream; the rest
// waits for the next night.
const maxClustersPerDream = 100

func (r *run) memories(ctx context.Context) ComponentReport {
	if r.d.o.Memory.Flat() {
		return r.flatMemories(ctx)
	}
	return r.vectorMemories(ctx)
}

// flatMemories is the flat-file path: the model rewrites MEMORIES.txt.
func (r *run) flatMemories(ctx context.Context) ComponentReport {
	old, err := r.d.o.Memory.WorkingSet(ctx)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	oldLines := lines(old)
	if len(oldLines) == 0 {
		return ComponentReport{Status: StatusSkipped, Detail: "MEMORIES.txt is empty"}
	}
	if r.unchanged(ctx, datadir.MemoriesFile, old) {
		return ComponentReport{Status: StatusSkipped, Detail: "MEMORIES.txt unchanged since the last dream"}
	}
	out, err := r.ask(ctx, datadir.DreamMemoriesPrompt, strings.Join(oldLines, "\n"), nil)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	var newLines, dropped []string
	for _, l := range lines(stripFences(out)) {
		l = strings.TrimSpace(strings.TrimLeft(l, "-*• "))
		if l == "" {
			continue
		}
		if what := memory.LooksSecret(l); what != "" {
			dropped = append(dropped, "left out a line that looks like a "+what)
			continue
		}
		if utf8.RuneCountInString(l) > memory.MaxTextLen {
			return ComponentReport{Status: StatusRefused, Detail: "the rewrite has a line longer than a memory may be; MEMORIES.txt unchanged"}
		}
		newLines = append(newLines, l)
	}
	if len(newLines) == 0 {
		return ComponentReport{Status: StatusRefused, Detail: "the model returned no memories; MEMORIES.txt unchanged"}
	}
	// The guard counts what leaves, as the vector path does: lines fewer,
	// or old lines whose content the rewrite no longer holds (a rewrite
	// that replaces every fact keeps the line count but drops them all).
	removed := max(len(oldLines)-len(newLines), len(oldLines)-heldLines(oldLines, newLines))
	if refuse, why := r.tooMuchDropped(len(oldLines), removed); refuse {
		return ComponentReport{Status: StatusRefused, Detail: why + "; MEMORIES.txt unchanged"}
	}
	body := strings.Join(newLines, "\n") + "\n"
	if err := r.writeFile(ctx, datadir.MemoriesFile, body); err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	r.seen(ctx, datadir.MemoriesFile, body)
	rep := ComponentReport{Status: StatusOK, Detail: fmt.Sprintf("MEMORIES.txt rewritten: %d → %d lines", len(oldLines), len(newLines))}
	rep.Lines = dropped
	return rep
}

// heldLines counts the old lines whose content the new lines still hold:
// at least half of a line's content words (a word's plural or other
// longer form counts) appear somewhere in the rewrite, so a line merged
// into another or reworded is held, and a line replaced by a different fact
// is not. A line with no content words is held when it is still there.
func heldLines(old, repl []string) int {
	var have []string
	seen := map[string]bool{}
	for _, l := range repl {
		for _, w := range words(l) {
			if !seen[w] {
				seen[w] = true
				have = append(have, w)
			}
		}
	}
	held := 0
	for _, l := range old {
		want := contentWords(l)
		if len(want) == 0 {
			if slices.Contains(repl, l) {
				held++
			}
			continue
		}
		n := 0
		for _, w := range want {
			if seen[w] || slices.ContainsFunc(have, func(h string) bool { return sameWord(w, h) }) {
				n++
			}
		}
		if 2*n >= len(want) {
			held++
		}
	}
	return held
}

// tooMuchDropped applies the safety guard: removing more than MaxDropShare
// of total entries is refused. The reason follows the component's status
// ("refused — it would remove …"), so it does not say "refused" again.
func (r *run) tooMuchDropped(total, removed int) (bool, string) {
	if total == 0 || removed <= 0 {
		return false, ""
	}
	share := float64(removed) / float64(total)
	if share > r.d.set.MaxDropShare {
		return true, fmt.Sprintf("it would remove %d of %d entries (%.0f%%, more than the allowed %.0f%%; raise dreaming.max_drop_share to allow it)",
			removed, total, share*100, r.d.set.MaxDropShare*100)
	}
	return false, ""
}

type mergeOp struct {
	members []memory.Memory
	text    string
}

type resolveOp struct {
	first, second memory.Memory
	decision      string
	merged        string
	reason        string
}

// vectorMemories is the four-phase vector pipeline of seed 001: dedup
// clusters, contradictions, stale pruning, working-set export. All model
// calls happen first (planning); the guard then checks the whole plan, and
// only then is anything changed, each change journalled for Revert.
func (r *run) vectorMemories(ctx context.Context) ComponentReport {
	svc := r.d.o.Memory
	vs, ok := svc.Vectors()
	if !ok {
		if lv, ok := svc.LocalVectors(); ok {
			return r.localEpisodes(ctx, svc, lv)
		}
		return ComponentReport{Status: StatusSkipped, Detail: "the memory backend has no vectors"}
	}
	var rep ComponentReport
	// Lines written into MEMORIES.txt by hand must exist in the store before
	// the export rewrites the file, or they would be lost.
	ws, err := svc.WorkingSet(ctx)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	imported := 0
	for _, l := range lines(ws) {
		found, err := svc.FindExact(ctx, l)
		if err == nil && len(found) == 0 {
			if _, err := svc.Remember(ctx, memory.Memory{Text: l, Kind: memory.KindFact, Source: memory.SourceImport}, false); err == nil {
				imported++
			}
		}
	}
	if imported > 0 {
		rep.Lines = append(rep.Lines, fmt.Sprintf("imported %d hand-written line(s) of MEMORIES.txt into the store", imported))
	}

	current, err := svc.List(ctx, memory.Filter{})
	if errors.Is(err, memory.ErrUnsupported) {
		// An external store (memory.backend: mcp) consolidates itself.
		return ComponentReport{Status: StatusSkipped, Detail: err.Error()}
	}
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	current, episodes := splitEpisodes(current)
	if len(current) == 0 && len(episodes) == 0 {
		return ComponentReport{Status: StatusSkipped, Detail: "no memories"}
	}
	byID := make(map[int64]memory.Memory, len(current))
	for _, m := range current {
		byID[m.ID] = m
	}
	var items []item
	for v, err := range vs.AllVectors(ctx) {
		if err != nil {
			return ComponentReport{Status: StatusFailed, Detail: err.Error()}
		}
		if _, ok := byID[v.ID]; ok && len(v.Vector) > 0 {
			items = append(items, item{id: v.ID, vec: v.Vector})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.id, b.id) })
	verdicts, err := r.verdicts(ctx, byID)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	sim := findSimilar(items, float32(r.d.set.ContradictionFloor), float32(r.d.set.DedupThreshold), r.d.set.MaxContradictions,
		func(i, j int) verdict { return verdicts.of(byID[items[i].id], byID[items[j].id]) })
	r.d.log.Info("dreaming: similarity pass", "memories", len(items), "compared_pairs", sim.compared,
		"clusters", len(sim.clusters), "suspicious_pairs", len(sim.pairs))

	// Phase 1: dedup clusters.
	involved := map[int64]bool{}
	var merges []mergeOp
	keptApart := 0 // clusters answered distinct, pairs answered keep_both
	for i, cl := range sim.clusters {
		if i >= maxClustersPerDream {
			rep.Lines = append(rep.Lines, fmt.Sprintf("%d more cluster(s) left for the next dream", len(sim.clusters)-i))
			break
		}
		var members []memory.Memory
		var b strings.Builder
		for _, idx := range cl {
			m := byID[items[idx].id]
			members = append(members, m)
			b.WriteString("- " + describe(m) + "\n")
		}
		out, err := r.ask(ctx, datadir.DreamDedupPrompt, strings.TrimRight(b.String(), "\n"), dedupFormat)
		if err != nil {
			return ComponentReport{Status: StatusFailed, Detail: err.Error()}
		}
		dec, err := dedupDecision(out)
		if err != nil {
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept a cluster of %d as it was (%s): the decision did not parse (%v)", len(members), ids(members), err))
			continue
		}
		if dec.Decision == "distinct" {
			// Not one fact: each pair may still be checked on its own
			// (the contradiction step), but not clustered again.
			for x := range members {
				for y := x + 1; y < len(members); y++ {
					r.judge(ctx, members[x], members[y], notSame)
				}
			}
			keptApart++
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s apart: not the same fact (%s)", quoted(members), cmp.Or(dec.Reason, "no reason given")))
			continue
		}
		text := textclip.OneLine(dec.Merged)
		if bad := badMemoryText(text); bad != "" {
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept a cluster of %d as it was (%s): the merge %s", len(members), ids(members), bad))
			continue
		}
		merges = append(merges, mergeOp{members: members, text: text})
		for _, m := range members {
			involved[m.ID] = true
		}
	}

	// Phase 2: contradictions among the rest.
	var resolutions []resolveOp
	for _, p := range sim.pairs {
		a, b := byID[items[p.a].id], byID[items[p.b].id]
		if involved[a.ID] || involved[b.ID] {
			continue
		}
		content := "First: " + describe(a) + "\nSecond: " + describe(b)
		out, err := r.ask(ctx, datadir.DreamContradictionPrompt, content, contradictionFormat)
		if err != nil {
			return ComponentReport{Status: StatusFailed, Detail: err.Error()}
		}
		var dec decision
		if err := decodeJSON(out, &dec); err != nil {
			rep.Lines = append(rep.Lines, fmt.Sprintf("left #%d and #%d alone: the decision did not parse (%v)", a.ID, b.ID, err))
			continue
		}
		switch dec.Decision {
		case "keep_both":
			r.judge(ctx, a, b, apart)
			keptApart++
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept both %q and %q (%s)", a.Text, b.Text, cmp.Or(dec.Reason, "no reason given")))
			continue
		case "keep_first", "keep_second":
		case "merge":
			dec.Merged = textclip.OneLine(dec.Merged)
			if bad := badMemoryText(dec.Merged); bad != "" {
				rep.Lines = append(rep.Lines, fmt.Sprintf("left #%d and #%d alone: the merged entry %s", a.ID, b.ID, bad))
				continue
			}
		default:
			rep.Lines = append(rep.Lines, fmt.Sprintf("left #%d and #%d alone: unknown decision %q", a.ID, b.ID, dec.Decision))
			continue
		}
		resolutions = append(resolutions, resolveOp{first: a, second: b, decision: dec.Decision, merged: dec.Merged, reason: dec.Reason})
		involved[a.ID], involved[b.ID] = true, true
	}

	// Phase 3: stale entries.
	now := r.d.o.Now()
	cutoff := now.Add(-time.Duration(r.d.set.StaleDays) * 24 * time.Hour)
	var stale []memory.Memory
	for _, m := range current {
		if involved[m.ID] || m.Source == memory.SourceUserExplicit || m.AccessCount >= r.d.set.StaleMinAccess {
			continue
		}
		last := m.CreatedAt
		if m.LastAccess != nil {
			last = *m.LastAccess
		}
		if last.Before(cutoff) {
			stale = append(stale, m)
		}
	}

	// The guard over the whole plan.
	removed := len(stale)
	for _, mg := range merges {
		removed += len(mg.members) - 1
	}
	removed += len(resolutions) // one closed, or two closed and one created

	if refuse, why := r.tooMuchDropped(len(current), removed); refuse {
		rep.Status, rep.Detail = StatusRefused, why+"; no memory changed"
		return rep
	}

	// Apply.
	for _, mg := range merges {
		kind, event := dominantKind(mg.members), latestEvent(mg.members)
		if err := r.replace(ctx, vs, mg.members, memory.Memory{Text: mg.text, Kind: kind, EventTime: event, Source: memory.SourceDream}); err != nil {
			return r.partial(rep, err)
		}
		rep.Lines = append(rep.Lines, fmt.Sprintf("merged %d → %q", len(mg.members), mg.text))
	}
	for _, rs := range resolutions {
		var err error
		switch rs.decision {
		case "keep_first":
			err = r.closeMemory(ctx, vs, rs.second.ID, now)
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %q over %q (%s)", rs.first.Text, rs.second.Text, rs.reason))
		case "keep_second":
			err = r.closeMemory(ctx, vs, rs.first.ID, now)
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %q over %q (%s)", rs.second.Text, rs.first.Text, rs.reason))
		case "merge":
			err = r.replace(ctx, vs, []memory.Memory{rs.first, rs.second},
				memory.Memory{Text: rs.merged, Kind: dominantKind([]memory.Memory{rs.first, rs.second}),
					EventTime: latestEvent([]memory.Memory{rs.first, rs.second}), Source: memory.SourceDream})
			rep.Lines = append(rep.Lines, fmt.Sprintf("resolved %q / %q → %q", rs.first.Text, rs.second.Text, rs.merged))
		}
		if err != nil {
			return r.partial(rep, err)
		}
	}
	for _, m := range stale {
		if err := r.closeMemory(ctx, vs, m.ID, now); err != nil {
			return r.partial(rep, err)
		}
	}
	if len(stale) > 0 {
		rep.Lines = append(rep.Lines, fmt.Sprintf("pruned %d stale memor(ies) (not recalled for %d days, fewer than %d recalls)",
			len(stale), r.d.set.StaleDays, r.d.set.StaleMinAccess))
	}

	// Episodes: old sessions condensed into facts.
	condensed, facts, err := r.condenseEpisodes(ctx, vs, episodes, now, &rep)
	if err != nil {
		return r.partial(rep, err)
	}

	// Phase 4: the working set.
	n, left, err := r.export(ctx, svc)
	if err != nil {
		return r.partial(rep, err)
	}
	rep.Lines = append(rep.Lines, fmt.Sprintf("exported the top %d memories to MEMORIES.txt (%d line(s) left the working set, still recallable)", n, left))
	rep.Status = StatusOK
	rep.Detail = fmt.Sprintf("%d merged cluster(s), %d contradiction(s) resolved, %d pruned", len(merges), len(resolutions), len(stale))
	if keptApart > 0 {
		rep.Detail += fmt.Sprintf(", %d kept apart as different facts", keptApart)
	}
	if condensed > 0 {
		rep.Detail += fmt.Sprintf(", %d episode(s) condensed into %d fact(s)", condensed, facts)
	}
	return rep
}

// localEpisodes is the pipeline of memory.backend: mcp, where the external
// server holds the facts and consolidates them itself: only the episodes,
// which stay in Reverie's own store (lv), are condensed, into dream facts
// kept in that store with them (what the transcript says does not leave the
// machine), journalled like every change so Revert restores them.
func (r *run) localEpisodes(ctx context.Context, svc *memory.Service, lv memory.Vectors) ComponentReport {
	eps, err := svc.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	if len(eps) == 0 {
		return ComponentReport{Status: StatusSkipped, Detail: "no episodes (the external memory server consolidates the facts)"}
	}
	var rep ComponentReport
	condensed, facts, err := r.condenseEpisodes(ctx, lv, eps, r.d.o.Now(), &rep)
	if err != nil {
		return r.partial(rep, err)
	}
	rep.Status = StatusOK
	rep.Detail = fmt.Sprintf("%d episode(s) condensed into %d fact(s); the external memory server consolidates its facts", condensed, facts)
	return rep
}

// partial reports a failure after some changes were applied (they are
// journalled, so Revert undoes them).
func (r *run) partial(rep ComponentReport, err error) ComponentReport {
	rep.Status = StatusFailed
	rep.Detail = err.Error() + " (changes made before the error are part of this dream and can be reverted)"
	return rep
}

// replace adds the consolidated memory and closes the originals. When the
// consolidated text equals one of them, that one stays.
func (r *run) replace(ctx context.Context, vs memory.Vectors, originals []memory.Memory, m memory.Memory) error {
	id, err := r.add(ctx, vs, m)
	if err != nil {
		return err
	}
	for _, o := range originals {
		if o.ID == id {
			continue
		}
		if err := r.closeMemory(ctx, vs, o.ID, r.d.o.Now()); err != nil {
			return err
		}
	}
	return nil
}

// add stores a consolidated memory, journalling it when it is new (an
// equal current memory is reused and stays on revert).
func (r *run) add(ctx context.Context, vs memory.Vectors, m memory.Memory) (int64, error) {
	before, _ := vs.Count(ctx, true)
	id, err := vs.Add(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("store consolidated memory: %w", err)
	}
	after, _ := vs.Count(ctx, true)
	if after > before {
		if err := r.journal(ctx, "memory", "created", strconv.FormatInt(id, 10), nil); err != nil {
			return 0, err
		}
	}
	return id, nil
}

func (r *run) closeMemory(ctx context.Context, vs memory.Vectors, id int64, at time.Time) error {
	if err := r.journal(ctx, "memory", "closed", strconv.FormatInt(id, 10), nil); err != nil {
		return err
	}
	if err := vs.Close(ctx, id, at); err != nil {
		return fmt.Errorf("close memory %d: %w", id, err)
	}
	return nil
}

// export writes the top ExportTop current memories (most recalled first;
// among equals the ones the user asked for, then the newest) to
// MEMORIES.txt. It returns how many were written and how many previous lines
// are no longer in the file.
func (r *run) export(ctx context.Context, svc *memory.Service) (int, int, error) {
	all, err := svc.List(ctx, memory.Filter{})
	if err != nil {
		return 0, 0, err
	}
	all, _ = splitEpisodes(all) // a transcript line is not a working-set entry
	slices.SortStableFunc(all, func(a, b memory.Memory) int {
		if c := cmp.Compare(b.AccessCount, a.AccessCount); c != 0 {
			return c
		}
		ea, eb := a.Source == memory.SourceUserExplicit, b.Source == memory.SourceUserExplicit
		if ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		return b.UpdatedAt.Compare(a.UpdatedAt)
	})
	all = all[:min(len(all), r.d.set.ExportTop)]
	out := make([]string, len(all))
	keep := map[string]bool{}
	for i, m := range all {
		out[i] = textclip.OneLine(m.Text)
		keep[strings.ToLower(out[i])] = true
	}
	old, err := svc.WorkingSet(ctx)
	if err != nil {
		return 0, 0, err
	}
	left := 0
	for _, l := range lines(old) {
		if !keep[strings.ToLower(textclip.OneLine(l))] {
			left++
		}
	}
	body := strings.Join(out, "\n")
	if body != "" {
		body += "\n"
	}
	return len(out), left, r.writeFile(ctx, datadir.MemoriesFile, body)
}

var contradictionFormat = &llm.ResponseFormat{Name: "contradiction_decision", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "decision": {"type": "string", "enum": ["keep_first", "keep_second", "merge", "keep_both"]},
    "merged": {"type": "string"},
    "reason": {"type": "string"}
  },
  "required": ["decision", "merged", "reason"],
  "additionalProperties": false
}`)}

var dedupFormat = &llm.ResponseFormat{Name: "dedup_decision", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "decision": {"type": "string", "enum": ["merge", "distinct"]},
    "merged": {"type": "string"},
    "reason": {"type": "string"}
  },
  "required": ["decision", "merged", "reason"],
  "additionalProperties": false
}`)}

type decision struct {
	Decision string `json:"decision"`
	Merged   string `json:"merged"`
	Reason   string `json:"reason"`
}

// dedupDecision reads the dedup answer: a JSON decision merge | distinct.
// An answer with no JSON object at all is the merged text itself, as a
// DREAM_DEDUP_PROMPT.txt written before stop 47 asks for (a data dir keeps
// its prompt files), unless it is the word DISTINCT.
func dedupDecision(out string) (decision, error) {
	var dec decision
	plain := stripFences(out)
	if !strings.Contains(plain, "{") {
		if strings.EqualFold(strings.Trim(plain, " .\"'"), "distinct") {
			return decision{Decision: "distinct"}, nil
		}
		return decision{Decision: "merge", Merged: plain}, nil
	}
	if err := decodeJSON(out, &dec); err != nil {
		return dec, err
	}
	switch dec.Decision {
	case "merge", "distinct":
		return dec, nil
	}
	return dec, fmt.Errorf("unknown decision %q", dec.Decision)
}

// verdicts are what earlier dreams' model said of memory pairs, by the
// pair's ids (smaller first), each with the fingerprint of the two texts it
// was said of.
type verdicts map[[2]int64]judgement

type judgement struct {
	v  verdict
	fp string
}

// of is the verdict on a and b, unjudged unless it was said of these texts.
func (vs verdicts) of(a, b memory.Memory) verdict {
	got, ok := vs[pairKey(a.ID, b.ID)]
	if !ok || got.fp != pairFingerprint(a, b) {
		return unjudged
	}
	return got.v
}

func pairKey(a, b int64) [2]int64 { return [2]int64{min(a, b), max(a, b)} }

// pairFingerprint identifies the two texts, smaller id first.
func pairFingerprint(a, b memory.Memory) string {
	if a.ID > b.ID {
		a, b = b, a
	}
	return fingerprint(a.Text + "\x00" + b.Text)
}

// verdicts reads the verdicts of earlier dreams (rows "pair:A:B" of
// dream_seen, valued "distinct FP" or "apart FP") on pairs of current
// memories; the rows of pairs with a memory no longer current are deleted.
func (r *run) verdicts(ctx context.Context, current map[int64]memory.Memory) (verdicts, error) {
	out := verdicts{}
	var gone []string
	err := sqlite.Each(ctx, r.d.o.DB, func(rows *sql.Rows) error {
		var key, val string
		if err := rows.Scan(&key, &val); err != nil {
			return err
		}
		var a, b int64
		if _, err := fmt.Sscanf(key, "pair:%d:%d", &a, &b); err != nil {
			return nil // not a pair's row
		}
		if _, ok := current[a]; !ok {
			gone = append(gone, key)
			return nil
		}
		if _, ok := current[b]; !ok {
			gone = append(gone, key)
			return nil
		}
		word, fp, _ := strings.Cut(val, " ")
		switch word {
		case "distinct":
			out[pairKey(a, b)] = judgement{notSame, fp}
		case "apart":
			out[pairKey(a, b)] = judgement{apart, fp}
		}
		return nil
	}, `SELECT key, hash FROM dream_seen WHERE key LIKE 'pair:%'`)
	if err != nil {
		return nil, fmt.Errorf("read earlier dreams' verdicts: %w", err)
	}
	for _, k := range gone {
		if _, err := r.d.o.DB.ExecContext(ctx, `DELETE FROM dream_seen WHERE key = ?`, k); err != nil {
			return nil, fmt.Errorf("forget a verdict: %w", err)
		}
	}
	return out, nil
}

// judge records the model's verdict on a pair, so later dreams do not ask
// again while the two texts are the same. A verdict is not a change of the
// user's data: Revert leaves it.
func (r *run) judge(ctx context.Context, a, b memory.Memory, v verdict) {
	val := "distinct "
	if v == apart {
		val = "apart "
	}
	k := pairKey(a.ID, b.ID)
	key := fmt.Sprintf("pair:%d:%d", k[0], k[1])
	if _, err := r.d.o.DB.ExecContext(ctx, `INSERT INTO dream_seen (key, hash) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET hash = excluded.hash`,
		key, val+pairFingerprint(a, b)); err != nil {
		r.d.log.Warn("dreaming: could not record a verdict", "pair", key, "err", err)
	}
}

// ids renders the memories' ids for a report line ("#3, #7").
func ids(ms []memory.Memory) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = "#" + strconv.FormatInt(m.ID, 10)
	}
	return strings.Join(out, ", ")
}

// quoted renders the memories' texts for a report line.
func quoted(ms []memory.Memory) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = strconv.Quote(textclip.OneLine(m.Text))
	}
	return strings.Join(out, ", ")
}

// describe renders a memory for a prompt: text with its date and kind.
func describe(m memory.Memory) string {
	var b strings.Builder
	b.WriteString(textclip.OneLine(m.Text))
	var meta []string
	if m.EventTime != nil {
		meta = append(meta, "happened "+m.EventTime.Format(time.DateOnly))
	}
	meta = append(meta, "recorded "+m.CreatedAt.Format(time.DateOnly))
	if m.Kind != memory.KindFact && m.Kind != "" {
		meta = append(meta, string(m.Kind))
	}
	b.WriteString(" (" + strings.Join(meta, ", ") + ")")
	return b.String()
}

func dominantKind(ms []memory.Memory) memory.Kind {
	count := map[memory.Kind]int{}
	best := memory.KindFact
	for _, m := range ms {
		count[m.Kind]++
		if count[m.Kind] > count[best] {
			best = m.Kind
		}
	}
	return best
}

func latestEvent(ms []memory.Memory) *time.Time {
	var t *time.Time
	for _, m := range ms {
		if m.EventTime != nil && (t == nil || m.EventTime.After(*t)) {
			t = m.EventTime
		}
	}
	return t
}

// badMemoryText says why a model-written memory cannot be stored, or "".
func badMemoryText(t string) string {
	switch {
	case t == "":
		return "was empty"
	case utf8.RuneCountInString(t) > memory.MaxTextLen:
		return "was too long"
	case memory.LooksSecret(t) != "":
		return "looked like it held a secret"
	}
	return ""
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimSuffix(l, "\r")); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// stripFences removes a Markdown code fence around a whole answer.
func stripFences(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}

// decodeJSON decodes the first JSON object in s (models wrap answers in
// prose or fences).
func decodeJSON(s string, v any) error {
	s = stripFences(s)
	start := strings.IndexByte(s, '{')
	end := strings.LastIndexByte(s, '}')
	if start < 0 || end < start {
		return errors.New("no JSON object in the answer")
	}
	return json.Unmarshal([]byte(s[start:end+1]), v)
}

// splitEpisodes separates the episodes from the other memories: the four
// phases (dedup, contradictions, stale pruning, export) work on the others;
// episodes are condensed instead.
func splitEpisodes(ms []memory.Memory) (others, episodes []memory.Memory) {
	for _, m := range ms {
		if m.Kind == memory.KindEpisode {
			episodes = append(episodes, m)
		} else {
			others = append(others, m)
		}
	}
	return others, episodes
}

// maxEpisodeTranscript bounds the conversation text of one condensation
// call, in characters (the most recent messages are kept).
const maxEpisodeTranscript = 20_000

// condenseEpisodes condenses the old sessions' episodes: for each thread's
// session whose newest episode is older than EpisodeDays (oldest first, at
// most MaxEpisodeSessions), the model writes the durable facts of the
// conversation (DREAM_EPISODES_PROMPT.txt), which are stored as dream facts,
// and the episodes are closed — all journalled, so Revert restores them.
// It returns how many episodes were condensed and facts stored.
func (r *run) condenseEpisodes(ctx context.Context, vs memory.Vectors, eps []memory.Memory, now time.Time, rep *ComponentReport) (int, int, error) {
	cutoff := now.Add(-time.Duration(r.d.set.EpisodeDays) * 24 * time.Hour)
	type session struct {
		ms     []memory.Memory
		newest time.Time
	}
	byKey := map[string]*session{}
	var keys []string
	for _, m := range eps {
		k := m.Thread + "\x00" + m.Session
		s, ok := byKey[k]
		if !ok {
			s = &session{}
			byKey[k] = s
			keys = append(keys, k)
		}
		s.ms = append(s.ms, m)
		s.newest = maxTime(s.newest, episodeTime(m))
	}
	var old []*session
	for _, k := range keys {
		if s := byKey[k]; s.newest.Before(cutoff) {
			slices.SortFunc(s.ms, func(a, b memory.Memory) int { return cmp.Compare(a.ID, b.ID) })
			old = append(old, s)
		}
	}
	slices.SortFunc(old, func(a, b *session) int { return a.newest.Compare(b.newest) })
	if n := r.d.set.MaxEpisodeSessions; len(old) > n {
		rep.Lines = append(rep.Lines, fmt.Sprintf("%d more old conversation session(s) left for the next dream", len(old)-n))
		old = old[:n]
	}
	condensed, stored := 0, 0
	for _, s := range old {
		out, err := r.ask(ctx, datadir.DreamEpisodesPrompt, episodeTranscript(s.ms), nil)
		if err != nil {
			return condensed, stored, err
		}
		var facts []string
		if t := strings.TrimSpace(stripFences(out)); t != "NONE" {
			for _, l := range lines(t) {
				l = textclip.OneLine(strings.TrimLeft(strings.TrimSpace(l), "-*•0123456789.) "))
				if l == "" || l == "NONE" {
					continue
				}
				if bad := badMemoryText(l); bad != "" {
					rep.Lines = append(rep.Lines, "left out a fact from old episodes: it "+bad)
					continue
				}
				facts = append(facts, l)
			}
		}
		first := s.ms[0]
		when := s.newest
		for _, f := range facts {
			if _, err := r.add(ctx, vs, memory.Memory{Text: f, Kind: memory.KindFact, Source: memory.SourceDream, Thread: first.Thread, EventTime: &when}); err != nil {
				return condensed, stored, err
			}
			stored++
		}
		for _, m := range s.ms {
			if err := r.closeMemory(ctx, vs, m.ID, now); err != nil {
				return condensed, stored, err
			}
			condensed++
		}
		rep.Lines = append(rep.Lines, fmt.Sprintf("condensed %d episode(s) of %s (session %s) into %d fact(s)", len(s.ms), first.Thread, first.Session, len(facts)))
	}
	return condensed, stored, nil
}

// episodeTime is when an episode was said (its event time, else creation).
func episodeTime(m memory.Memory) time.Time {
	if m.EventTime != nil {
		return *m.EventTime
	}
	return m.CreatedAt
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// episodeTranscript renders a session's episodes, one line each, headed by
// who said it (the stored speaker with the role, else the role) and the day, keeping the
// most recent ones within maxEpisodeTranscript characters.
func episodeTranscript(ms []memory.Memory) string {
	var out []string
	total := 0
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		who := m.Speaker
		switch {
		case who == "":
			who = cmp.Or(string(m.Role), "someone")
		case m.Role != "":
			who += " (" + string(m.Role) + ")" // "Sam (user)", "Reverie (assistant)"
		}
		line := "[" + episodeTime(m).Format(time.DateOnly) + "] " + who + ": " + textclip.OneLine(m.Text)
		if total+len(line)+1 > maxEpisodeTranscript {
			break
		}
		total += len(line) + 1
		out = append(out, line)
	}
	slices.Reverse(out)
	return strings.Join(out, "\n")
}
