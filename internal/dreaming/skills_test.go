package dreaming

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/prompt"
)

// The skills the skills tests start from: two overlapping ones (the deploy
// pair, merged into blog-deploy), one long enough to be condensed (trip) and
// two unrelated ones.
var (
	longTrip    = "Plan a trip\n" + strings.Repeat("Compare train and flight prices, check the passport, book early. ", 30)
	startSkills = map[string]string{
		"blog-deploy": "How to deploy the blog\n1. make deploy\n2. check the site\n",
		"deploy-blog": "Deploy the blog\n1. run make deploy\n",
		"trip":        longTrip,
		"piano":       "Practise the piano\n1. Scales for ten minutes.\n2. One piece slowly.\n",
		"cat":         "Feed the cat\n1. Half a pouch at eight.\n2. Fresh water.\n",
	}
	goodMerge    = "Deploy the blog\n1. make deploy\n2. check the site"
	goodCondense = "Plan a trip\n1. Compare train and flight prices.\n2. Check the passport.\n3. Book early."
	// The reviewer's fake model: an answer to the instruction, not a skill.
	echoAnswer = "OK: You are tidying the skills of a personal assistant, keeping them short and exact."
)

// skillFixture writes skills and scripts the model: merge answers the
// deploy pair, condense the trip skill.
func skillFixture(t *testing.T, skills map[string]string, merge, condense func(*fixture) string) *fixture {
	t.Helper()
	f := newFixture(t, false)
	for name, body := range skills {
		if err := os.WriteFile(filepath.Join(f.dir, "skills", name+".md"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.reply = func(p string) string {
		switch {
		case strings.Contains(p, "## blog-deploy") && strings.Contains(p, "## deploy-blog"):
			return merge(f)
		case strings.Contains(p, "## trip"):
			return condense(f)
		case strings.Contains(p, "reviewing the pulse"):
			return `{"actions":[]}`
		}
		t.Errorf("unexpected prompt:\n%s", p)
		return ""
	}
	return f
}

func (f *fixture) skills(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(f.dir, "skills"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(f.dir, "skills", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(e.Name(), ".md")] = string(b)
	}
	return out
}

func reply(s string) func(*fixture) string { return func(*fixture) string { return s } }

func TestSkillsDreamMergesAndCondenses(t *testing.T) {
	ctx := context.Background()
	f := skillFixture(t, startSkills, reply(goodMerge), reply("## trip\n"+strings.Replace(goodCondense, "Plan a trip", "Plan a trip.", 1)))
	rep, err := f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	sc := component(rep, "skills")
	if sc.Status != StatusOK || !strings.Contains(sc.Detail, "1 merge(s), 1 condensed, 4 skill(s) now") {
		t.Fatalf("skills: %+v", sc)
	}
	got := f.skills(t)
	want := maps.Clone(startSkills)
	delete(want, "deploy-blog")
	want["blog-deploy"] = goodMerge + "\n"
	// The echoed "## trip" heading is dropped and the near-copy of the
	// summary gives way to the original line.
	want["trip"] = goodCondense + "\n"
	if !maps.Equal(got, want) {
		t.Fatalf("skills after the dream:\n got %q\nwant %q", got, want)
	}
	if rep.ModelCalls != 2 {
		t.Errorf("model calls %d, want 2", rep.ModelCalls)
	}
	if _, err := f.d.Revert(ctx, rep.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.skills(t); !maps.Equal(got, startSkills) {
		t.Fatalf("skills after revert:\n got %q\nwant %q", got, startSkills)
	}
	// Nothing changed since: the next dream asks nothing about skills.
	f.d.Dream(ctx, "test")
	if rep, _ := f.d.Dream(ctx, "test"); rep.ModelCalls != 0 {
		t.Errorf("a dream over unchanged skills made %d model calls", rep.ModelCalls)
	}
}

func TestSkillsDreamRefusals(t *testing.T) {
	three := map[string]string{"blog-deploy": startSkills["blog-deploy"], "deploy-blog": startSkills["deploy-blog"], "piano": startSkills["piano"]}
	cases := []struct {
		name            string
		skills          map[string]string // nil: startSkills
		merge, condense func(*fixture) string
		status          Status
		why             string   // in the detail or a line
		unchanged       []string // skills that must keep their text
	}{
		{name: "merge drops more than the allowed share", skills: three, merge: reply(goodMerge), status: StatusRefused,
			why: "it would remove 1 of 3 entries (33%", unchanged: []string{"blog-deploy", "deploy-blog", "piano"}},
		{name: "merge answers the instruction", merge: reply(echoAnswer + "\n1. make deploy"), condense: reply(goodCondense),
			status: StatusOK, why: `kept blog-deploy, deploy-blog apart: the merge answers the instruction ("OK: You are`, unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge repeats the instruction", merge: reply("Deploy the blog\nYou are tidying the skills of a personal assistant.\n1. make deploy"),
			condense: reply(goodCondense), status: StatusOK, why: `the merge repeats the instruction ("you are tidying the skills"`,
			unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge loses the summary", merge: reply("Publish the website\n1. make deploy\n2. check the site"), condense: reply(goodCondense),
			status: StatusOK, why: "the merge lost the first-line summary", unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge lists the skills side by side", merge: reply("## deploy-blog\nDeploy the blog\n1. run make deploy\n\n## blog-deploy\nHow to deploy the blog\n1. make deploy"),
			condense: reply(goodCondense), status: StatusOK, why: `lists the skills side by side (a "## blog-deploy" heading)`,
			unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge is empty", merge: reply("```\n```"), condense: reply(goodCondense), status: StatusOK,
			why: "the merge was empty", unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge has no steps", merge: reply("Deploy the blog"), condense: reply(goodCondense), status: StatusOK,
			why: "the merge has no procedure below the summary", unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge grows", merge: reply(goodMerge + "\n3. tweet about it\n4. update the changelog and the sitemap\n5. ping the search engines"),
			condense: reply(goodCondense), status: StatusOK, why: "the merge is longer than the skills it merges",
			unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge summary line too long", merge: reply("Deploy the blog " + strings.Repeat("carefully ", 40) + "\n1. make deploy"),
			condense: reply(goodCondense), status: StatusOK, why: "the merge is too long for a skill: the first line",
			unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "merge holds a secret", merge: reply(goodMerge + "\npassword: hunter22"), condense: reply(goodCondense), status: StatusOK,
			why: "the merge looks like it holds a secret", unchanged: []string{"blog-deploy", "deploy-blog"}},
		{name: "skill edited while the model merged", merge: func(f *fixture) string {
			os.WriteFile(filepath.Join(f.dir, "skills", "deploy-blog.md"), []byte("Deploy the blog\n1. run make deploy-prod\n"), 0o600)
			return goodMerge
		}, condense: reply(goodCondense), status: StatusOK, why: "kept blog-deploy, deploy-blog apart: skill deploy-blog changed during the dream",
			unchanged: []string{"blog-deploy"}},
		{name: "condensation answers the instruction", merge: reply(goodMerge), condense: reply(echoAnswer), status: StatusOK,
			why: `kept trip as it was: the condensed text answers the instruction`, unchanged: []string{"trip"}},
		{name: "condensation loses the summary", merge: reply(goodMerge), condense: reply("A new first line\n1. Compare prices.\n2. Book early."),
			status: StatusOK, why: `the condensed text lost the first-line summary (it begins "A new first line" instead of "Plan a trip")`, unchanged: []string{"trip"}},
		{name: "condensation grows", merge: reply(goodMerge), condense: reply(longTrip + "\nAlso pack an umbrella."), status: StatusOK,
			why: "the condensed text is not shorter than the original", unchanged: []string{"trip"}},
		{name: "condensation keeps only the summary", merge: reply(goodMerge), condense: reply("Plan a trip"), status: StatusOK,
			why: "the condensed text has no procedure below the summary", unchanged: []string{"trip"}},
		{name: "condensation ends with a remark", merge: reply(goodMerge), condense: reply(goodCondense + "\n\nLet me know if you want it shorter."),
			status: StatusOK, why: `the condensed text holds a remark to the reader ("Let me know`, unchanged: []string{"trip"}},
		{name: "condensation is empty", merge: reply(goodMerge), condense: reply("   "), status: StatusOK,
			why: "the condensed text was empty", unchanged: []string{"trip"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			skills := c.skills
			if skills == nil {
				skills = startSkills
			}
			if c.condense == nil {
				c.condense = func(*fixture) string { t.Error("condensation asked"); return "" }
			}
			f := skillFixture(t, skills, c.merge, c.condense)
			rep, err := f.d.Dream(context.Background(), "test")
			if err != nil {
				t.Fatal(err)
			}
			sc := component(rep, "skills")
			report := sc.Detail + "\n" + strings.Join(sc.Lines, "\n")
			if sc.Status != c.status || !strings.Contains(report, c.why) {
				t.Fatalf("skills: %s, want %s with %q:\n%s", sc.Status, c.status, c.why, report)
			}
			got := f.skills(t)
			for _, name := range c.unchanged {
				if got[name] != skills[name] && !strings.Contains(c.name, "edited") {
					t.Errorf("skill %s changed: %q", name, got[name])
				}
			}
			if c.status == StatusRefused && !maps.Equal(got, skills) {
				t.Errorf("a refused dream changed the skills: %q", got)
			}
			if strings.Contains(c.name, "edited") && got["deploy-blog"] != "Deploy the blog\n1. run make deploy-prod\n" {
				t.Errorf("the edit made during the dream was lost: %q", got["deploy-blog"])
			}
			if c.status == StatusOK && strings.HasPrefix(c.name, "merge") {
				if got["trip"] != goodCondense+"\n" {
					t.Errorf("a refused merge stopped the condensation: trip = %q", got["trip"])
				}
			}
		})
	}
}

func TestSkillCheck(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join("..", "datadir", "defaults", datadir.DreamSkillsPrompt))
	if err != nil {
		t.Fatal(err)
	}
	check := newSkillCheck(prompt.Render(string(tmpl), map[string]string{"content": ""}), 0)
	orig := "Book a table at the usual restaurant\n1. Call Chez Anna on 01 23 45 67 89.\n2. Ask for the window table.\n3. Confirm by text."
	cases := []struct {
		name, out, want string // want: the stored text, or the start of the refusal
	}{
		{"kept", "Book a table at the usual restaurant\n1. Call Chez Anna on 01 23 45 67 89.\n2. Confirm by text.",
			"Book a table at the usual restaurant\n1. Call Chez Anna on 01 23 45 67 89.\n2. Confirm by text."},
		{"heading marks and near copy", "# Book a table at usual restaurants\n1. Call Chez Anna.",
			"Book a table at the usual restaurant\n1. Call Chez Anna."},
		{"fenced", "```markdown\nBook a table at the usual restaurant\n1. Call Chez Anna.\n```",
			"Book a table at the usual restaurant\n1. Call Chez Anna."},
		{"sure", "Sure! Book a table at the usual restaurant\n1. Call Chez Anna.", "refused: answers the instruction"},
		{"here is", "Here is the condensed skill:\nBook a table at the usual restaurant\n1. Call.", "refused: answers the instruction"},
		{"echo of the example", "How to book a table at the usual restaurant, how to deploy the blog\n1. Call.",
			"refused: repeats the instruction"},
		{"paraphrase of the task", "I tidied the skill for you\n1. Call Chez Anna.", "refused: lost the first-line summary"},
		{"one word kept", "Restaurant\n1. Call Chez Anna.", "refused: lost the first-line summary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, why := check.condensed(c.out, "table", orig)
			got := body
			if why != "" {
				got = "refused: " + why
			}
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	// A merge may broaden the summary, keeping most words of one original.
	body, why := check.merged("Deploy and check the blog\n1. make deploy\n2. check the site", []string{"blog-deploy", "deploy-blog"},
		[]string{startSkills["blog-deploy"], startSkills["deploy-blog"]})
	if why != "" || !strings.HasPrefix(body, "Deploy and check the blog\n") {
		t.Fatalf("broader merge summary: %q, %q", body, why)
	}
}
