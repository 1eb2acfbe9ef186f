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
)

type skillFile struct {
	name, body string
}

// skills merges overlapping skills and condenses long ones, keeping each
// skill's first line (its summary in the table of contents).
func (r *run) skills(ctx context.Context) ComponentReport {
	dir := filepath.Join(r.d.o.DataDir, datadir.SkillsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return ComponentReport{Status: StatusSkipped, Detail: "no skills"}
	}
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	var skills []skillFile
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
			skills = append(skills, skillFile{name, body})
		}
	}
	if len(skills) == 0 {
		return ComponentReport{Status: StatusSkipped, Detail: "no skills"}
	}
	var rep ComponentReport
	rel := func(name string) string { return filepath.ToSlash(filepath.Join(datadir.SkillsDir, name+".md")) }

	// Overlapping skills: clusters of similar texts.
	var emb interface {
		Embed(ctx context.Context, texts []string) ([][]float32, error)
	} = r.d.o.Embedder
	if emb == nil {
		emb = embed.NewOffline(embed.DefaultDimensions)
	}
	texts := make([]string, len(skills))
	for i, s := range skills {
		texts[i] = s.name + "\n" + s.body
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: "compare skills: " + err.Error()}
	}
	items := make([]item, len(skills))
	for i, v := range vecs {
		items[i] = item{id: int64(i), vec: v}
	}
	sim := findSimilar(items, 1, float32(r.d.set.SkillMergeThreshold), 0)
	merged := map[int]bool{}
	mergedCount := 0
	var result []skillFile
	for _, cl := range sim.clusters {
		fresh := false
		for _, i := range cl {
			fresh = fresh || !r.unchanged(ctx, rel(skills[i].name), skills[i].body)
		}
		if !fresh {
			continue // the last dream already kept these apart
		}
		var b strings.Builder
		var names []string
		for _, i := range cl {
			fmt.Fprintf(&b, "## %s\n%s\n\n", skills[i].name, skills[i].body)
			names = append(names, skills[i].name)
			merged[i] = true
		}
		out, err := r.ask(ctx, datadir.DreamSkillsPrompt, strings.TrimSpace(b.String()), nil)
		if err != nil {
			return r.partial(rep, err)
		}
		body := strings.TrimSpace(stripFences(out))
		if body == "" {
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s apart: the merge was empty", strings.Join(names, ", ")))
			for _, i := range cl {
				result = append(result, skills[i])
			}
			continue
		}
		keep := names[0]
		if err := r.writeFile(ctx, rel(keep), body+"\n"); err != nil {
			return r.partial(rep, err)
		}
		for _, n := range names[1:] {
			if err := r.removeFile(ctx, rel(n)); err != nil {
				return r.partial(rep, err)
			}
		}
		mergedCount++
		rep.Lines = append(rep.Lines, fmt.Sprintf("merged skills %s into %s", strings.Join(names, ", "), keep))
		result = append(result, skillFile{keep, body})
	}
	for i, s := range skills {
		if !merged[i] {
			result = append(result, s)
		}
	}
	slices.SortFunc(result, func(a, b skillFile) int { return strings.Compare(a.name, b.name) })

	// Condense long skills, keeping the first line.
	condensed := 0
	for _, s := range result {
		if r.d.o.Count(s.body) <= r.d.set.SkillCondenseTokens || r.unchanged(ctx, rel(s.name), s.body) {
			continue
		}
		out, err := r.ask(ctx, datadir.DreamSkillsPrompt, "## "+s.name+"\n"+s.body, nil)
		if err != nil {
			return r.partial(rep, err)
		}
		body := strings.TrimSpace(stripFences(out))
		first, _, _ := strings.Cut(s.body, "\n")
		if body == "" || len(body) >= len(s.body) {
			rep.Lines = append(rep.Lines, fmt.Sprintf("kept %s as it was: the condensed text was empty or not shorter", s.name))
			continue
		}
		if got, rest, _ := strings.Cut(body, "\n"); strings.TrimSpace(got) != strings.TrimSpace(first) {
			if strings.HasPrefix(strings.TrimSpace(got), "#") {
				body = first + "\n" + strings.TrimSpace(rest)
			} else {
				body = first + "\n" + body
			}
		}
		if err := r.writeFile(ctx, rel(s.name), body+"\n"); err != nil {
			return r.partial(rep, err)
		}
		condensed++
		rep.Lines = append(rep.Lines, fmt.Sprintf("condensed %s (%d → %d tokens)", s.name, r.d.o.Count(s.body), r.d.o.Count(body)))
	}
	// Whatever stands now has been looked at.
	for _, s := range result {
		if b, err := os.ReadFile(filepath.Join(r.d.o.DataDir, rel(s.name))); err == nil {
			r.seen(ctx, rel(s.name), strings.TrimSpace(string(b)))
		}
	}
	rep.Status = StatusOK
	rep.Detail = fmt.Sprintf("%d merge(s), %d condensed, %d skill(s) now", mergedCount, condensed, len(result))
	return rep
}
