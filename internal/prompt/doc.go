// Package prompt builds the system prompt fresh for every inference and
// provides what surrounds it: the conditional BASE_PROMPT sections, the
// substitution-or-append templates and their start-up validation, token
// counting, compaction helpers and component size limits.
package prompt
