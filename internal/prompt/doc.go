// Package prompt builds the system prompt fresh for every inference and
// provides what surrounds it:
//
//   - Assemble: the sections of seed 003 in order (Core Instructions,
//     Current Time, User Memories, Active Pulse, Conversation Summary,
//     Skills), then Additional Context from context providers and, for
//     sub-sessions, the Task; each under a "# " heading, divided by
//     "\n\n---\n\n", empty sections omitted. Modes: main, and the
//     sub-session modes minimal, full, base_only and none (see Mode).
//   - ApplyConditionals: <!-- if tool:NAME --> … <!-- end --> (and
//     <!-- if !tool:NAME -->) sections of BASE_PROMPT.txt kept or dropped by
//     the tools a session has.
//   - Render, ValidateTemplate, ValidateDir: substitution-or-append
//     templates with {name} placeholders, validated at start-up so that an
//     unknown or missing placeholder fails naming the file and the token.
//   - Counter, NewCounter, CountMessage: token counting with tiktoken's
//     cl100k_base and o200k_base vocabularies (embedded, compacted by
//     internal/bpegen) for OpenAI models and a calibrated estimate for the
//     others.
//   - CompactionThreshold, CompactionCut, ChainedSummaryInput, KeepRecent:
//     the arithmetic and input of context compaction (seed 001).
//   - CheckLimits: component size limits and the events that ask the
//     assistant to condense.
//
// Everything here is a pure function of its inputs except token counting,
// whose BPE tables are loaded once per process on first use (sync.Once per
// encoding) and shared; all functions and Counters are safe for concurrent
// use. Nothing is downloaded: tiktoken-go itself is not linked into the
// product (the tests use it as the reference).
package prompt
