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
	dir := filepath.Join(r.d.o.DataDir, datadir.SkillsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return ComponentReport{Status: StatusSkipped, Detail: "no skills"}
	}
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	var all []skillFile
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || name == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return ComponentReport{Status: StatusFailed, Detail: err.Error()}
		}
		if body := strings.TrimSpace(string(b)); body != "" {
			all = append(all, skillFile{name, body})
		}
	}
	if len(all) == 0 {
		return ComponentReport{Status: StatusSkipped, Detail: "no skills"}
	}
	tmpl, err := os.ReadFile(filepath.Join(r.d.o.DataDir, datadir.DreamSkillsPrompt))
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: fmt.Sprintf("read %s: %v", datadir.DreamSkillsPrompt, err)}
	}
	check := newSkillCheck(prompt.Render(string(tmpl), map[string]string{"content": ""}), r.d.set.SkillMaxChars)
	var rep ComponentReport
	refused := 0

	// Plan the merges of overlapping skills (clusters of similar texts):
	// every model call first, nothing written.
	var emb interface {
		Embed(ctx context.Context, texts []string) ([][]float32, error)
	} = r.d.o.Embedder
	if emb == nil {
		emb = embed.NewOffline(embed.DefaultDimensions)
	}
	texts := make([]string, len(all))
	for i, s := range all {
		texts[i] = s.name + "\n" + s.body
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: "compare skills: " + err.Error()}
	}
	items := make([]item, len(all))
	for i, v := range vecs {
		items[i] = item{id: int64(i), vec: v}
	}
	sim := findSimilar(items, 1, float32(r.d.set.SkillMergeThreshold), 0)
	var plans []skillMerge
	for _, cl := range sim.clusters {
		fresh := false
		for _, i := range cl {
			fresh = fresh || !r.unchanged(ctx, skillRel(all[i].name), all[i].body)
		}
		if !fresh {
			continue // the last dream already kept these apart
		}
		m := skillMerge{}
		var b strings.Builder
		var bodies []string
		for _, i := range cl {
			fmt.Fprintf(&b, "## %s\n%s\n\n", all[i].name, all[i].body)
			m.members = append(m.members, all[i])
			bodies = append(bodies, all[i].body)
		}
		out, err := r.ask(ctx, datadir.DreamSkillsPrompt, strings.TrimSpace(b.String()), nil)
		if err != nil {
			return ComponentReport{Status: StatusFailed, Detail: err.Error() + "; no skill changed", Lines: rep.Lines}
		}
		body, why := check.merged(out, m.names(), bodies)
		if why != "" {
			refused++
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s apart: the merge %s", strings.Join(m.names(), ", "), why))
			continue
		}
		m.body = body
		plans = append(plans, m)
	}

	// The guard over the plan.
	removed := 0
	for _, m := range plans {
		removed += len(m.members) - 1
	}
	if refuse, why := r.tooMuchDropped(len(all), removed); refuse {
		for _, m := range plans {
			rep.Lines = append(rep.Lines, fmt.Sprintf("would have merged %s into %s", strings.Join(m.names(), ", "), m.members[0].name))
		}
		rep.Status, rep.Detail = StatusRefused, why+"; no skill changed"
		return rep
	}

	// Apply the merges.
	gone := map[string]bool{}
	mergedCount := 0
	var result []skillFile
	for _, m := range plans {
		if name := r.changedSince(m.members); name != "" {
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s apart: skill %s changed during the dream", strings.Join(m.names(), ", "), name))
			continue
		}
		keep := m.members[0].name
		if err := r.writeFile(ctx, skillRel(keep), m.body+"\n"); err != nil {
			return r.partial(rep, err)
		}
		gone[keep] = true
		for _, s := range m.members[1:] {
			if err := r.removeFile(ctx, skillRel(s.name)); err != nil {
				return r.partial(rep, err)
			}
			gone[s.name] = true
		}
		mergedCount++
		rep.Lines = append(rep.Lines, fmt.Sprintf("merged skills %s into %s", strings.Join(m.names(), ", "), keep))
		result = append(result, skillFile{keep, m.body})
	}
	for _, s := range all {
		if !gone[s.name] {
			result = append(result, s)
		}
	}
	slices.SortFunc(result, func(a, b skillFile) int { return strings.Compare(a.name, b.name) })

	// Condense long skills, keeping the first line.
	condensed := 0
	for _, s := range result {
		if r.d.o.Count(s.body) <= r.d.set.SkillCondenseTokens || r.unchanged(ctx, skillRel(s.name), s.body) {
			continue
		}
		out, err := r.ask(ctx, datadir.DreamSkillsPrompt, "## "+s.name+"\n"+s.body, nil)
		if err != nil {
			return r.partial(rep, err)
		}
		body, why := check.condensed(out, s.name, s.body)
		if why != "" {
			refused++
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s as it was: the condensed text %s", s.name, why))
			continue
		}
		if name := r.changedSince([]skillFile{s}); name != "" {
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s as it was: it changed during the dream", s.name))
			continue
		}
		if err := r.writeFile(ctx, skillRel(s.name), body+"\n"); err != nil {
			return r.partial(rep, err)
		}
		condensed++
		rep.Lines = append(rep.Lines, fmt.Sprintf("condensed %s (%d → %d tokens)", s.name, r.d.o.Count(s.body), r.d.o.Count(body)))
	}
	// Whatever stands now has been looked at.
	for _, s := range result {
		if b, err := os.ReadFile(filepath.Join(r.d.o.DataDir, skillRel(s.name))); err == nil {
			r.seen(ctx, skillRel(s.name), strings.TrimSpace(string(b)))
		}
	}
	rep.Status = StatusOK
	rep.Detail = fmt.Sprintf("%d merge(s), %d condensed, %d skill(s) now", mergedCount, condensed, len(result))
	if refused > 0 {
		rep.Detail += fmt.Sprintf("; %d model answer(s) refused, those skills kept as they were", refused)
	}
	return rep
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
