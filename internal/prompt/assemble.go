package prompt

import (
	"fmt"
	"strings"
	"time"
)

// Mode selects what goes into a system prompt.
//
//	section              main  full  minimal  base_only  none
//	Core Instructions     ✓     ✓       —        ✓        —   (BASE_PROMPT.txt, conditionals applied)
//	Execution Instructions —    —       ✓        —        —   (Input.Minimal or DefaultMinimalInstructions)
//	Skills                ✓ᵃ    TOC     —        —        —
//	User Memories         ✓     ✓       —        —        —   (MEMORIES.txt + recalled)
//	Active Pulse          ✓     ✓       —        —        —
//	Conversation Summary  ✓     —       —        —        —
//	Current Time          ✓ᵇ    ✓ᵇ      ✓        —        —
//	Additional Context    ✓ᵇ    ✓ᵇ      —        —        —   (context providers)
//	Task                  ✓     ✓       ✓        ✓        ✓   (sub-session objective and context)
//
// ᵃ full text, or the table of contents when Input.SkillsAsTOC is set.
// ᵇ the turn part of Split: the sections above change less often than every
// turn and come first, so that a request's prefix stays the same from turn
// to turn (providers' prompt caches).
//
// main is the user-facing agent. The sub-session modes follow seeds 003 and
// 001: full is the assembled prompt without the conversation summary (a
// worker has no conversation) and with the skills as a table of contents;
// base_only is BASE_PROMPT.txt alone; minimal is a lightweight execution
// agent's instructions; none is no system prompt. Every mode ends with the
// task (objective and context) when one is given, so none yields only the
// task. minimal also carries the current time: a worker without it guesses
// dates, and it costs a dozen tokens.
type Mode string

const (
	ModeMain     Mode = "main"
	ModeFull     Mode = "full"
	ModeMinimal  Mode = "minimal"
	ModeBaseOnly Mode = "base_only"
	ModeNone     Mode = "none"
)

// SubSessionModes are the modes a sub-session may ask for, default first.
var SubSessionModes = []Mode{ModeMinimal, ModeFull, ModeBaseOnly, ModeNone}

// ParseMode returns the mode named s ("" means ModeMinimal, the sub-session
// default) or an error listing the valid names.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "":
		return ModeMinimal, nil
	case ModeMain, ModeFull, ModeMinimal, ModeBaseOnly, ModeNone:
		return m, nil
	default:
		return "", fmt.Errorf("unknown prompt mode %q (want minimal, full, base_only or none)", s)
	}
}

// Section headings, in assembly order.
const (
	HeadingCore      = "# Core Instructions"
	HeadingExecution = "# Execution Instructions"
	HeadingTime      = "# Current Time"
	HeadingMemories  = "# User Memories"
	HeadingPulse     = "# Active Pulse"
	HeadingSummary   = "# Conversation Summary"
	HeadingSkills    = "# Skills"
	HeadingContext   = "# Additional Context"
	HeadingTask      = "# Task"
)

// SectionSeparator divides sections (and skills within the Skills section).
const SectionSeparator = "\n\n---\n\n"

// DefaultMinimalInstructions is the system prompt of a minimal-mode worker
// unless Input.Minimal replaces it.
const DefaultMinimalInstructions = `You are a background worker of a personal AI assistant, running one task on your own.
- Work only on the task below; use the tools you have, and nothing else.
- Be efficient: few tool calls, no chatter. You cannot ask the user questions; make reasonable assumptions and state them.
- Never invent results: if something fails or cannot be done, say so plainly.
- Finish with a concise, self-contained report of what you did and found; it is delivered to the assistant that started you.`

// RecalledHeading introduces the recalled memories inside User Memories.
const RecalledHeading = "## Recalled for this conversation"

// SkillsTOCIntro heads the table of contents of skills.
const SkillsTOCIntro = "Learned procedures (name: summary). Read a skill's full text before following it."

// Skill is one learned procedure (skills/NAME.md).
type Skill struct {
	Name string
	// Summary is the first-line summary used in the table of contents;
	// empty means the first non-empty line of Body.
	Summary string
	Body    string
}

// Input is everything one system prompt is built from. Empty fields give
// empty sections, which are omitted.
type Input struct {
	Mode Mode // "" means ModeMain
	// Base is BASE_PROMPT.txt; its conditional sections are applied for Tools.
	Base string
	// Minimal replaces DefaultMinimalInstructions in minimal mode when set.
	Minimal string
	// Now is the current time; zero omits the Current Time section.
	Now time.Time
	// Location is the configured zone; nil means Now's location.
	Location *time.Location
	// Memories is MEMORIES.txt.
	Memories string
	// Recalled are memories recalled for this turn (context providers);
	// those already contained in Memories are skipped.
	Recalled []string
	// Pulse is the active pulse, already formatted ("[P2] #3: Fix auth bug").
	Pulse string
	// Summary is the thread's compaction summary (main mode only).
	Summary string
	// Skills in display order.
	Skills []Skill
	// SkillsAsTOC lists skills by name and summary instead of full text
	// (main mode; full mode always uses the table of contents).
	SkillsAsTOC bool
	// Tools are the names of the tools available to this inference.
	Tools []string
	// Extra are context providers' blocks for the Additional Context section.
	Extra []string
	// Task is a sub-session's objective and context, appended last.
	Task string
}

// Assemble builds the system prompt for in: the sections of in.Mode in the
// order of the table of Mode, each under its heading, divided by
// SectionSeparator, empty sections omitted. Additional Context comes last
// but the task: it is the most turn-specific material. Markers in Base that fail validation are dropped and their
// text kept (ValidateDir reports them at start-up).
func Assemble(in Input) string {
	mode := in.Mode
	if mode == "" {
		mode = ModeMain
	}
	var a assembler
	a.b.Grow(inputSize(in))
	switch mode {
	case ModeMain, ModeFull:
		a.stable(in, mode)
		a.turn(in)
	case ModeMinimal:
		instr := in.Minimal
		if strings.TrimSpace(instr) == "" {
			instr = DefaultMinimalInstructions
		}
		a.section(HeadingExecution, instr)
		a.section(HeadingTime, FormatTime(in.Now, in.Location))
	case ModeBaseOnly:
		a.section(HeadingCore, conditional(in.Base, in.Tools))
	case ModeNone:
	default:
		// An unknown mode gets the safest useful prompt: base only.
		a.section(HeadingCore, conditional(in.Base, in.Tools))
	}
	a.section(HeadingTask, in.Task)
	return a.b.String()
}

// Split is Assemble for a conversation's request in two parts: stable, the
// sections that stay the same from turn to turn (Core Instructions, Skills,
// User Memories, Active Pulse, Conversation Summary, in that order: the ones
// that change least often first), and turn, the two that change with every
// turn (Current Time and Additional Context, which holds the memories
// recalled for the message). The agent sends stable as the system prompt and
// turn after the conversation, just before the turn's message, so that the
// system prompt and the conversation before the message are the same prefix
// as in the previous turn's request and providers' prompt caches reuse it.
// Either part may be empty. Modes other than main and full have no turn part
// (stable is Assemble's prompt).
func Split(in Input) (stable, turn string) {
	mode := in.Mode
	if mode == "" {
		mode = ModeMain
	}
	if mode != ModeMain && mode != ModeFull {
		return Assemble(in), ""
	}
	var s, t assembler
	s.b.Grow(inputSize(in))
	s.stable(in, mode)
	s.section(HeadingTask, in.Task)
	t.turn(in)
	return s.b.String(), t.b.String()
}

// stable writes the sections of main and full mode that change less often
// than every turn, the rarest changes first.
func (a *assembler) stable(in Input, mode Mode) {
	a.section(HeadingCore, conditional(in.Base, in.Tools))
	a.skills(in.Skills, mode == ModeFull || in.SkillsAsTOC)
	a.memories(in.Memories, in.Recalled)
	a.section(HeadingPulse, in.Pulse)
	if mode == ModeMain {
		a.section(HeadingSummary, in.Summary)
	}
}

// turn writes the sections that change with every turn.
func (a *assembler) turn(in Input) {
	a.section(HeadingTime, FormatTime(in.Now, in.Location))
	a.extra(in.Extra)
}

// inputSize bounds the prompt's size so it is built in one allocation.
func inputSize(in Input) int {
	n := len(in.Base) + len(in.Minimal) + len(in.Memories) + len(in.Pulse) + len(in.Summary) + len(in.Task) + 1024
	for _, r := range in.Recalled {
		n += len(r) + 4
	}
	for _, s := range in.Skills {
		n += len(s.Name) + len(s.Summary) + len(s.Body) + 32
	}
	for _, e := range in.Extra {
		n += len(e) + 2
	}
	return n
}

func conditional(base string, tools []string) string {
	out, _ := applyConditionals(base, tools, false)
	return out
}

type assembler struct {
	b strings.Builder
}

// open starts a section: separator (unless first) and heading.
func (a *assembler) open(heading string) {
	if a.b.Len() > 0 {
		a.b.WriteString(SectionSeparator)
	}
	a.b.WriteString(heading)
	a.b.WriteString("\n")
}

func (a *assembler) section(heading, body string) {
	body = trimBlock(body)
	if body == "" {
		return
	}
	a.b.Grow(len(SectionSeparator) + len(heading) + 1 + len(body))
	a.open(heading)
	a.b.WriteString(body)
}

// trimBlock drops surrounding blank lines and trailing spaces but keeps the
// first line's indentation.
func trimBlock(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

func (a *assembler) memories(memories string, recalled []string) {
	memories = trimBlock(memories)
	var extra []string
	for _, r := range recalled {
		r = strings.TrimSpace(r)
		if r == "" || strings.Contains(memories, r) || contains(extra, r) {
			continue
		}
		extra = append(extra, r)
	}
	if memories == "" && len(extra) == 0 {
		return
	}
	a.open(HeadingMemories)
	a.b.WriteString(memories)
	if len(extra) == 0 {
		return
	}
	if memories != "" {
		a.b.WriteString("\n\n")
	}
	a.b.WriteString(RecalledHeading)
	for _, r := range extra {
		a.b.WriteString("\n- ")
		a.b.WriteString(strings.ReplaceAll(r, "\n", "\n  "))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (a *assembler) skills(skills []Skill, toc bool) {
	started := false
	for _, s := range skills {
		name := strings.TrimSpace(s.Name)
		body := trimBlock(s.Body)
		if name == "" && body == "" {
			continue
		}
		if name == "" {
			name = "(unnamed)"
		}
		switch {
		case !started && toc:
			a.open(HeadingSkills)
			a.b.WriteString(SkillsTOCIntro)
			a.b.WriteString("\n")
		case !started:
			a.open(HeadingSkills)
			a.b.WriteString("\n")
		case !toc:
			a.b.WriteString(SectionSeparator)
		}
		started = true
		if toc {
			a.b.WriteString("\n- ")
			a.b.WriteString(name)
			if sum := skillSummary(s); sum != "" {
				a.b.WriteString(": ")
				a.b.WriteString(sum)
			}
			continue
		}
		a.b.WriteString("### Skill: ")
		a.b.WriteString(name)
		if body != "" {
			a.b.WriteString("\n")
			a.b.WriteString(body)
		}
	}
}

// skillSummary is the skill's one-line summary: Summary, else the first
// non-empty line of Body with Markdown heading marks removed.
func skillSummary(s Skill) string {
	sum := strings.TrimSpace(s.Summary)
	if sum == "" {
		for line := range strings.Lines(s.Body) {
			if line = strings.TrimSpace(line); line != "" {
				sum = line
				break
			}
		}
	}
	sum = strings.TrimSpace(strings.TrimLeft(sum, "#"))
	return strings.Join(strings.Fields(sum), " ")
}

func (a *assembler) extra(blocks []string) {
	started := false
	for _, e := range blocks {
		e = trimBlock(e)
		if e == "" {
			continue
		}
		if !started {
			a.open(HeadingContext)
			started = true
		} else {
			a.b.WriteString("\n\n")
		}
		a.b.WriteString(e)
	}
}

// FormatTime renders the Current Time section: weekday, date, time, zone
// abbreviation, UTC offset and zone name, e.g.
// "Wednesday, 2025-01-15 14:32 CET (UTC+01:00, Europe/Berlin)". The zone
// name is left out when it adds nothing (UTC, or a fixed zone named like its
// abbreviation). Zero t gives "".
func FormatTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	if loc != nil {
		t = t.In(loc)
	}
	abbr, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	offset := fmt.Sprintf("UTC%c%02d:%02d", sign, off/3600, off%3600/60)
	name := t.Location().String()
	s := t.Format("Monday, 2006-01-02 15:04 ") + abbr + " (" + offset
	if name != "" && name != abbr && name != "UTC" && name != "Local" {
		s += ", " + name
	}
	return s + ")"
}
