package prompt

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch (run with -update after checking the change)\n--- got ---\n%s\n--- want ---\n%s", file, got, want)
	}
}

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

const testBase = `You are Reverie, a personal assistant.

Keep answers short.

<!-- if tool:spawn_sub_session -->
## Delegation
Delegate long work to sub-sessions; use depends_on for ordering.
<!-- end -->

<!-- if !tool:spawn_sub_session -->
## Working alone
You cannot delegate: do the work yourself.
<!-- end -->

<!-- if tool:pulse -->
## Pulse
Track work in progress with the pulse tool.
<!-- end -->

Never reveal credentials.
`

func fullInput(t testing.TB) Input {
	return Input{
		Base:     testBase,
		Now:      time.Date(2025, 1, 15, 13, 32, 0, 0, time.UTC),
		Location: berlin(t),
		Memories: "- Name: Alice\n- Prefers tea over coffee\n",
		Recalled: []string{"Prefers tea over coffee", "Sister lives in Lyon", "  ", "Sister lives in Lyon"},
		Pulse:    "[P2] #3: Fix auth bug\n[P5] #7: Plan trip to Lyon",
		Summary:  "Alice asked about flights to Lyon; we compared two options.",
		Skills: []Skill{
			{Name: "deploy_blog", Body: "Deploy the blog to the VPS.\n\n1. hugo --minify\n2. rsync public/"},
			{Name: "weekly_review", Summary: "Sunday review of goals", Body: "# Weekly review\nGo through the pulse."},
		},
		Tools: []string{"spawn_sub_session", "read_file"},
		Extra: []string{"World state: project=blog, status=drafting", ""},
		Task:  "",
	}
}

func TestAssembleGolden(t *testing.T) {
	task := "Objective: find the cheapest train from Berlin to Lyon next Friday.\nContext: Alice prefers mornings."
	tests := []struct {
		name string
		in   func(Input) Input
	}{
		{"main", func(in Input) Input { in.Mode = ModeMain; return in }},
		{"main_default_mode", func(in Input) Input { in.Mode = ""; return in }},
		{"main_skills_toc", func(in Input) Input { in.Mode = ModeMain; in.SkillsAsTOC = true; return in }},
		{"full", func(in Input) Input { in.Mode = ModeFull; in.Task = task; in.Tools = []string{"pulse"}; return in }},
		{"minimal", func(in Input) Input { in.Mode = ModeMinimal; in.Task = task; return in }},
		{"minimal_custom", func(in Input) Input {
			in.Mode, in.Task, in.Minimal = ModeMinimal, task, "You are a researcher. Cite sources."
			return in
		}},
		{"base_only", func(in Input) Input { in.Mode = ModeBaseOnly; in.Task = task; in.Tools = nil; return in }},
		{"none", func(in Input) Input { in.Mode = ModeNone; in.Task = task; return in }},
		{"empty_sections_omitted", func(in Input) Input {
			return Input{Mode: ModeMain, Base: testBase, Now: in.Now, Location: in.Location, Pulse: "  \n", Summary: "\n"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Assemble(tc.in(fullInput(t)))
			name := tc.name
			if name == "main_default_mode" {
				name = "main"
			}
			golden(t, name, got)
		})
	}
}

func TestAssembleSectionsOrderAndOmission(t *testing.T) {
	in := fullInput(t)
	got := Assemble(in)
	order := []string{HeadingCore, HeadingSkills, HeadingMemories, HeadingPulse, HeadingSummary, HeadingTime, HeadingContext}
	last := -1
	for _, h := range order {
		i := strings.Index(got, h+"\n")
		if i < 0 {
			t.Fatalf("section %q missing", h)
		}
		if i <= last {
			t.Errorf("section %q out of order", h)
		}
		last = i
	}
	if n := strings.Count(got, "# "); n < len(order) {
		t.Errorf("want at least %d headings, got %d", len(order), n)
	}

	empty := []struct {
		name    string
		mutate  func(*Input)
		heading string
	}{
		{"no memories", func(in *Input) { in.Memories, in.Recalled = "", nil }, HeadingMemories},
		{"no pulse", func(in *Input) { in.Pulse = " \n\t" }, HeadingPulse},
		{"no summary", func(in *Input) { in.Summary = "" }, HeadingSummary},
		{"no skills", func(in *Input) { in.Skills = []Skill{{}} }, HeadingSkills},
		{"no extra", func(in *Input) { in.Extra = []string{"", "\n"} }, HeadingContext},
		{"no time", func(in *Input) { in.Now = time.Time{} }, HeadingTime},
		{"no base", func(in *Input) { in.Base = "\n\n" }, HeadingCore},
	}
	for _, tc := range empty {
		t.Run(tc.name, func(t *testing.T) {
			in := fullInput(t)
			tc.mutate(&in)
			got := Assemble(in)
			if strings.Contains(got, tc.heading+"\n") {
				t.Errorf("empty section %q present:\n%s", tc.heading, got)
			}
			if strings.Contains(got, "---\n\n---") || strings.HasPrefix(got, "\n") || strings.HasSuffix(got, "---\n\n") {
				t.Errorf("stray divider:\n%s", got)
			}
		})
	}
	if got := Assemble(Input{Mode: ModeNone}); got != "" {
		t.Errorf("none mode without task = %q, want empty", got)
	}
	if got := Assemble(Input{}); got != "" {
		t.Errorf("empty input = %q, want empty", got)
	}
}

func TestAssembleRecalledOnlyAndModes(t *testing.T) {
	got := Assemble(Input{Recalled: []string{"Likes jazz"}})
	want := HeadingMemories + "\n" + RecalledHeading + "\n- Likes jazz"
	if got != want {
		t.Errorf("recalled only:\n%q\nwant\n%q", got, want)
	}
	in := fullInput(t)
	in.Mode = ModeFull
	if got := Assemble(in); strings.Contains(got, HeadingSummary) || !strings.Contains(got, SkillsTOCIntro) {
		t.Errorf("full mode must omit the summary and list skills as TOC:\n%s", got)
	}
	in.Mode = ModeBaseOnly
	if got := Assemble(in); strings.Contains(got, HeadingMemories) || strings.Contains(got, HeadingTime) {
		t.Errorf("base_only must hold the base only:\n%s", got)
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", ModeMinimal, false},
		{"minimal", ModeMinimal, false},
		{"full", ModeFull, false},
		{" base_only ", ModeBaseOnly, false},
		{"none", ModeNone, false},
		{"main", ModeMain, false},
		{"everything", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseMode(%q) = %q, %v; want %q, err %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestFormatTime(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		t    time.Time
		loc  *time.Location
		want string
	}{
		{"berlin winter", time.Date(2025, 1, 15, 13, 32, 0, 0, time.UTC), berlin(t), "Wednesday, 2025-01-15 14:32 CET (UTC+01:00, Europe/Berlin)"},
		{"berlin summer", time.Date(2025, 7, 4, 22, 5, 0, 0, time.UTC), berlin(t), "Saturday, 2025-07-05 00:05 CEST (UTC+02:00, Europe/Berlin)"},
		{"new york", time.Date(2025, 1, 15, 13, 32, 0, 0, time.UTC), ny, "Wednesday, 2025-01-15 08:32 EST (UTC-05:00, America/New_York)"},
		{"utc", time.Date(2025, 1, 15, 13, 32, 0, 0, time.UTC), time.UTC, "Wednesday, 2025-01-15 13:32 UTC (UTC+00:00)"},
		{"nil location keeps time's zone", time.Date(2025, 1, 15, 13, 32, 0, 0, time.FixedZone("IST", 5*3600+1800)), nil, "Wednesday, 2025-01-15 13:32 IST (UTC+05:30)"},
		{"zero", time.Time{}, berlin(t), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatTime(tc.t, tc.loc); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func BenchmarkAssemble(b *testing.B) {
	in := fullInput(b)
	in.Memories = strings.Repeat("- A remembered fact about the user and their preferences.\n", 150) // ~9k chars
	for i := range 20 {
		in.Skills = append(in.Skills, Skill{Name: "skill_" + string(rune('a'+i)), Body: strings.Repeat("Step of a procedure.\n", 40)})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Assemble(in)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   func(Input) Input
	}{
		{"main", func(in Input) Input { return in }},
		{"full", func(in Input) Input { in.Mode = ModeFull; return in }},
		{"minimal", func(in Input) Input { in.Mode = ModeMinimal; return in }},
		{"no_time_no_context", func(in Input) Input { in.Now, in.Extra = time.Time{}, nil; return in }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(fullInput(t))
			stable, turn := Split(in)
			whole := Assemble(in)
			switch {
			case turn == "":
				if stable != whole {
					t.Errorf("without a turn part, stable is not Assemble's prompt:\n%s\n---\n%s", stable, whole)
				}
			default:
				if stable+SectionSeparator+turn != whole {
					t.Errorf("stable + turn is not Assemble's prompt:\n%s\n---\n%s\n---\n%s", stable, turn, whole)
				}
				if strings.Contains(stable, HeadingTime) || strings.Contains(stable, HeadingContext) {
					t.Errorf("the stable part holds a per-turn section:\n%s", stable)
				}
				if !strings.HasPrefix(turn, HeadingTime) {
					t.Errorf("the turn part does not open with the time:\n%s", turn)
				}
			}
			if in.Mode == ModeMinimal {
				return
			}
			// The stable part does not depend on the time or the context.
			later := in
			later.Now, later.Extra = in.Now.Add(time.Hour), []string{"other context"}
			if s2, _ := Split(later); s2 != stable {
				t.Errorf("the stable part changed with the time and the context")
			}
		})
	}
}
