// Package datadir locates, creates and guards Reverie's data directory.
//
// Resolve picks the directory (--data flag, $REVERIE_HOME, the XDG data
// dir). Bootstrap creates it and writes the defaults shipped inside the
// binary — config.yaml, BASE_PROMPT.txt, MEMORIES.txt, world_state.json,
// starter skills and the prompt templates — never overwriting a file that
// exists, so it is safe on every start and after upgrades. Lock makes sure
// one agent process owns a data dir; CheckWritable turns permission
// problems into one clear sentence.
//
// # Files this package ships (the product's voice)
//
//	BASE_PROMPT.txt                      core instructions, first section of every prompt
//	MEMORIES.txt                         long-term facts; empty (it goes into the prompt verbatim)
//	skills/*.md                          starter skills; the first line is the one-line summary
//	prompts/SEED_<lang>.txt              the conversation opener, one per language
//	prompts/DREAM_MEMORIES_PROMPT.txt    nightly consolidation of MEMORIES.txt      {content}
//	prompts/DREAM_PULSE_PROMPT.txt       nightly review of pulse items (JSON)      {content}
//	prompts/DREAM_DEDUP_PROMPT.txt       merge a cluster of similar memories or not (JSON) {content}
//	prompts/DREAM_CONTRADICTION_PROMPT.txt  resolve two conflicting memories (JSON) {content}
//	prompts/DREAM_SKILLS_PROMPT.txt      merge overlapping skills / condense one    {content}
//	prompts/REFLECTION_PROMPT.txt        analyse the reflection rules' findings (JSON) {content}
//	prompts/COMPACTION_PROMPT.txt        summarise old conversation history        {history}
//
// Placeholders returns the placeholders each template may use, for the
// start-up validation (prompt.ValidateDir). A template without its
// placeholder gets the text appended at the end.
//
// # Conditional sections in BASE_PROMPT.txt
//
// Instructions about a tool are wrapped in markers so that a session without
// that tool (a minimal sub-session worker, a build without the scheduler)
// does not pay for them or get told about tools it cannot call:
//
//	<!-- if tool:spawn_sub_session -->
//	## Background work
//	…
//	<!-- end -->
//
//	<!-- if !tool:spawn_sub_session -->
//	You cannot start background workers; do the work yourself.
//	<!-- end -->
//
// Rules (implemented by internal/prompt, ApplyConditionals):
//   - `<!-- if tool:NAME -->` keeps the lines up to the next `<!-- end -->`
//     only when the tool NAME is available to the session; `<!-- if
//     !tool:NAME -->` only when it is not. NAME is the exact tool name.
//   - Markers stand alone on their line and are removed with it. Blocks do
//     not nest. An unbalanced, nested or malformed marker fails start-up,
//     naming the file and line.
//   - Blank lines left by a removed block collapse to one.
//   - Any other HTML comment is ordinary text and reaches the model.
//
// # Concurrency
//
// Bootstrap is safe to run concurrently with another Bootstrap of the same
// dir: files are created with an exclusive link, so neither overwrites the
// other's. Lock uses flock(2) on dir/.lock: the lock is held by the open
// file and released by the kernel when the process dies, so a crashed agent
// never leaves a stale lock.
package datadir
