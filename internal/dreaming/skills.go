package dreaming

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/prompt"
)

type skillFile struct {
	name, body string
}

// skillMerge is a planned merge: the skills (the first keeps its name) and
// the checked merged text.
type skillMerge struct {
	members []skillFile
	body    string
}

func (m skillMerge) names() []string {
	out := make([]string, len(m.members))
	for i, s := range m.members {
		out[i] = s.name
	}
	return out
}

func skillRel(name string) string {
	return filepath.ToSlash(filepath.Join(datadir.SkillsDir, name+".md"))
}

// skills merges overlapping skills and condenses long ones, keeping each
// skill's first line (its summary in the table of contents). Every model
// answer is checked (skillCheck) before it replaces anything; the merges are
// planned first and the whole plan is refused when it would remove more than
// MaxDropShare of the skills.
func (r *run) skills(ctx context.Context) ComponentReport {
	all, rep, ok := r.readSkills()
	if !ok {
		return rep
	}
	tmpl, err := os.ReadFile(filepath.Join(r.d.o.DataDir, datadir.DreamSkillsPrompt))
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: fmt.Sprintf("read %s: %v", datadir.DreamSkillsPrompt, err)}
	}
	p := &skillsPass{r: r, all: all,
		check: newSkillCheck(prompt.Render(string(tmpl), map[string]string{"content": ""}), r.d.set.SkillMaxChars)}
	vecs, err := p.vectors(ctx)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: "compare skills: " + err.Error()}
	}
	plans, err := p.planMerges(ctx, vecs)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error() + "; no skill changed", Lines: p.rep.Lines}
	}
	if p.guard(plans) {
		return p.rep
	}
	result, merged, err := p.applyMerges(ctx, plans)
	if err != nil {
		return r.partial(p.rep, err)
	}
	condensed, err := p.condense(ctx, result)
	if err != nil {
		return r.partial(p.rep, err)
	}
	p.markSeen(ctx, result)
	p.rep.Status = StatusOK
	p.rep.Detail = fmt.Sprintf("%d merge(s), %d condensed, %d skill(s) now", merged, condensed, len(result))
	if p.refused > 0 {
		p.rep.Detail += fmt.Sprintf("; %d model answer(s) refused, those skills kept as they were", p.refused)
	}
	return p.rep
}

// readSkills reads the non-empty skills/*.md; false with the report to
// return when there are none or they cannot be read.
func (r *run) readSkills() ([]skillFile, ComponentReport, bool) {
	dir := filepath.Join(r.d.o.DataDir, datadir.SkillsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ComponentReport{Status: StatusSkipped, Detail: "no skills"}, false
	}
	if err != nil {
		return nil, ComponentReport{Status: StatusFailed, Detail: err.Error()}, false
	}
	var all []skillFile
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || name == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, ComponentReport{Status: StatusFailed, Detail: err.Error()}, false
		}
		if body := strings.TrimSpace(string(b)); body != "" {
			all = append(all, skillFile{name, body})
		}
	}
	if len(all) == 0 {
		return nil, ComponentReport{Status: StatusSkipped, Detail: "no skills"}, false
	}
	return all, ComponentReport{}, true
}

// skillsPass is one dream's pass over the skills, phase by phase; rep
// collects the lines of every phase and refused counts the model answers
// the check turned down.
type skillsPass struct {
	r       *run
	check   skillCheck
	all     []skillFile
	rep     ComponentReport
	refused int
}

// vectors embeds every skill (name and text) to compare them. With no
// Embedder set (the app sets none) it is the offline hashing embedder, not
// the memory store's model: a skill is a document often longer than the
// sentence encoder's 128 pieces, of which it would read only the head, two
// skills to merge are ones that say the same steps in the same words (which
// hashed words and n-grams measure), and SkillMergeThreshold is set on its
// cosines.
func (p *skillsPass) vectors(ctx context.Context) ([][]float32, error) {
	var emb interface {
		Embed(ctx context.Context, texts []string) ([][]float32, error)
	} = p.r.d.o.Embedder
	if emb == nil {
		emb = embed.NewOffline(embed.DefaultDimensions)
	}
	texts := make([]string, len(p.all))
	for i, s := range p.all {
		texts[i] = s.name + "\n" + s.body
	}
	return emb.Embed(ctx, texts)
}

// planMerges plans the merges of overlapping skills (clusters of similar
// vectors): every model call first, nothing written. An error is a failed
// model call.
func (p *skillsPass) planMerges(ctx context.Context, vecs [][]float32) ([]skillMerge, error) {
	r := p.r
	items := make([]item, len(p.all))
	for i, v := range vecs {
		items[i] = item{id: int64(i), vec: v}
	}
	sim := findSimilar(items, 1, float32(r.d.set.SkillMergeThreshold), 0, nil)
	var plans []skillMerge
	for _, cl := range sim.clusters {
		fresh := false
		for _, i := range cl {
			fresh = fresh || !r.unchanged(ctx, skillRel(p.all[i].name), p.all[i].body)
		}
		if !fresh {
			continue // the last dream already kept these apart
		}
		m := skillMerge{}
		var b strings.Builder
		var bodies []string
		for _, i := range cl {
			fmt.Fprintf(&b, "## %s\n%s\n\n", p.all[i].name, p.all[i].body)
			m.members = append(m.members, p.all[i])
			bodies = append(bodies, p.all[i].body)
		}
		out, err := r.ask(ctx, datadir.DreamSkillsPrompt, strings.TrimSpace(b.String()), nil)
		if err != nil {
			return nil, err
		}
		body, why := p.check.merged(out, m.names(), bodies)
		if why != "" {
			p.refused++
			p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("kept %s apart: the merge %s", strings.Join(m.names(), ", "), why))
			continue
		}
		m.body = body
		plans = append(plans, m)
	}
	return plans, nil
}

// guard refuses the whole plan (true, with the report set) when it would
// remove more than MaxDropShare of the skills.
func (p *skillsPass) guard(plans []skillMerge) bool {
	removed := 0
	for _, m := range plans {
		removed += len(m.members) - 1
	}
	refuse, why := p.r.tooMuchDropped(len(p.all), removed)
	if !refuse {
		return false
	}
	for _, m := range plans {
		p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("would have merged %s into %s", strings.Join(m.names(), ", "), m.members[0].name))
	}
	p.rep.Status, p.rep.Detail = StatusRefused, why+"; no skill changed"
	return true
}

// applyMerges writes the planned merges (skipping a group a skill of which
// changed during the dream) and returns the skills that stand now, by name,
// and how many merges it made.
func (p *skillsPass) applyMerges(ctx context.Context, plans []skillMerge) ([]skillFile, int, error) {
	r := p.r
	gone := map[string]bool{}
	merged := 0
	var result []skillFile
	for _, m := range plans {
		if name := r.changedSince(m.members); name != "" {
			p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("kept %s apart: skill %s changed during the dream", strings.Join(m.names(), ", "), name))
			continue
		}
		keep := m.members[0].name
		if err := r.writeFile(ctx, skillRel(keep), m.body+"\n"); err != nil {
			return nil, 0, err
		}
		gone[keep] = true
		for _, s := range m.members[1:] {
			if err := r.removeFile(ctx, skillRel(s.name)); err != nil {
				return nil, 0, err
			}
			gone[s.name] = true
		}
		merged++
		p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("merged skills %s into %s", strings.Join(m.names(), ", "), keep))
		result = append(result, skillFile{keep, m.body})
	}
	for _, s := range p.all {
		if !gone[s.name] {
			result = append(result, s)
		}
	}
	slices.SortFunc(result, func(a, b skillFile) int { return strings.Compare(a.name, b.name) })
	return result, merged, nil
}

// condense shortens the long skills of result, keeping the first line, and
// returns how many it rewrote.
func (p *skillsPass) condense(ctx context.Context, result []skillFile) (int, error) {
	r := p.r
	condensed := 0
	for _, s := range result {
		if r.d.o.Count(s.body) <= r.d.set.SkillCondenseTokens || r.unchanged(ctx, skillRel(s.name), s.body) {
			continue
		}
		out, err := r.ask(ctx, datadir.DreamSkillsPrompt, "## "+s.name+"\n"+s.body, nil)
		if err != nil {
			return condensed, err
		}
		body, why := p.check.condensed(out, s.name, s.body)
		if why != "" {
			p.refused++
			p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("kept %s as it was: the condensed text %s", s.name, why))
			continue
		}
		if name := r.changedSince([]skillFile{s}); name != "" {
			p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("kept %s as it was: it changed during the dream", s.name))
			continue
		}
		if err := r.writeFile(ctx, skillRel(s.name), body+"\n"); err != nil {
			return condensed, err
		}
		condensed++
		p.rep.Lines = append(p.rep.Lines, fmt.Sprintf("condensed %s (%d → %d tokens)", s.name, r.d.o.Count(s.body), r.d.o.Count(body)))
	}
	return condensed, nil
}

// markSeen records what stands now as looked at, so the next dream leaves
// it alone unless it changes.
func (p *skillsPass) markSeen(ctx context.Context, result []skillFile) {
	for _, s := range result {
		if b, err := os.ReadFile(filepath.Join(p.r.d.o.DataDir, skillRel(s.name))); err == nil {
			p.r.seen(ctx, skillRel(s.name), strings.TrimSpace(string(b)))
		}
	}
}

// changedSince returns the name of the first skill whose file no longer
// holds what was read at the start of the phase (edited or deleted while
// the model was working), or "".
func (r *run) changedSince(ss []skillFile) string {
	for _, s := range ss {
		b, err := os.ReadFile(filepath.Join(r.d.o.DataDir, skillRel(s.name)))
		if err != nil || strings.TrimSpace(string(b)) != s.body {
			return s.name
		}
	}
	return ""
}
