package prompt

import "fmt"

// Component names a prompt component with a size limit.
type Component string

const (
	ComponentMemories Component = "memories"
	ComponentPulse    Component = "pulse"
	ComponentSkills   Component = "skills"
)

// Limits are the component size limits in characters; 0 disables a limit.
type Limits struct {
	MemoriesChars int
	PulseChars    int
	SkillsChars   int
}

// DefaultLimits are seed 003's defaults (skills: the richer 20,000-char
// form, per the design's resolution of the seeds' disagreement).
func DefaultLimits() Limits {
	return Limits{MemoriesChars: 10000, PulseChars: 5000, SkillsChars: 20000}
}

// Exceeded reports one component over its limit.
type Exceeded struct {
	Component Component
	Chars     int
	Limit     int
}

// Event is the text of the system event that asks the assistant to condense
// the component (seed 003: read it, condense and prioritise, update it).
func (e Exceeded) Event() string {
	switch e.Component {
	case ComponentMemories:
		return fmt.Sprintf("MEMORIES.txt is %d characters, over its limit of %d. Read it, condense and prioritise it "+
			"(merge duplicates, drop what no longer matters), and rewrite it with the memory tools.", e.Chars, e.Limit)
	case ComponentPulse:
		return fmt.Sprintf("The active pulse is %d characters, over its limit of %d. Review the pulse items: complete "+
			"what is done, merge overlapping items and shorten the rest with the pulse tool.", e.Chars, e.Limit)
	case ComponentSkills:
		return fmt.Sprintf("The skills total %d characters, over their limit of %d. Reorganise them: merge overlapping "+
			"skills and condense each, keeping its first-line summary.", e.Chars, e.Limit)
	default:
		return fmt.Sprintf("%s is %d characters, over its limit of %d; condense it.", e.Component, e.Chars, e.Limit)
	}
}

// CheckLimits returns the components over their limits, in the order
// memories, pulse, skills; nil when none is.
func CheckLimits(memoriesChars, pulseChars, skillsChars int, limits Limits) []Exceeded {
	var out []Exceeded
	check := func(c Component, n, limit int) {
		if limit > 0 && n > limit {
			out = append(out, Exceeded{Component: c, Chars: n, Limit: limit})
		}
	}
	check(ComponentMemories, memoriesChars, limits.MemoriesChars)
	check(ComponentPulse, pulseChars, limits.PulseChars)
	check(ComponentSkills, skillsChars, limits.SkillsChars)
	return out
}
