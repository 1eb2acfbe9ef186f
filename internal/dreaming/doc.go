// Package dreaming is Reverie's nightly memory consolidation (seed 001's
// Dreaming Loop), made safe: every change is journalled and reversible, and
// a consolidation that would remove too much is refused.
//
// A dream consolidates each component independently with direct calls to
// the `dreaming` model role (no tool loop, no conversation side effects);
// one failing or refused component does not stop the others.
//
//   - Memories, vector backend: (1) dedup clusters — pairs at cosine ≥
//     0.85 grouped by complete linkage (every two members at ≥ 0.85, at most
//     6 members; single linkage chained "sister lives in Porto" ~ "brother
//     lives in Porto" ~ "brother lives in Lisbon" into one) — each judged by
//     the model (DREAM_DEDUP_PROMPT.txt, JSON merge | distinct): merge
//     writes one new memory (source dream) and closes the originals
//     (valid_to set, never erased); distinct changes nothing; (2) up to 20
//     of the most similar pairs in [0.5, 0.85) resolved by a JSON decision
//     keep_first | keep_second | merge | keep_both
//     (DREAM_CONTRADICTION_PROMPT.txt), the loser closed, keep_both changing
//     nothing. A distinct or keep_both verdict is remembered for the two
//     texts (dream_seen rows "pair:A:B"), so later dreams do not ask again
//     and the 20 go to other pairs; a cluster's distinct pairs may still be
//     checked as pairs. With the built-in encoder cosine does not tell a
//     paraphrase from an update or from another fact worded alike
//     (testdata/pairs.tsv, hand-written: paraphrases median 0.70, updates
//     0.84, different facts 0.65; at ≥ 0.85 7, 19 and 3 of 40 each), so
//     the model's decision, not the threshold, is what keeps two facts
//     apart; (3) stale pruning: not recalled for 90 days and fewer
//     than 3 recalls, closed, except source=user_explicit; (4) the top 50
//     by recalls written to MEMORIES.txt (lines hand-written into the file
//     are first imported into the store, so the export never loses them).
//     All model calls happen before anything changes; the whole plan is then
//     checked against the guard.
//   - Memories, flat backend: the model rewrites MEMORIES.txt
//     (DREAM_MEMORIES_PROMPT.txt).
//   - Pulse: JSON actions complete | update | keep (DREAM_PULSE_PROMPT.txt);
//     items completed more than 30 days ago are purged.
//   - Skills: overlapping skills (similar texts) merged, long ones condensed
//     to about 150 tokens keeping the first-line summary
//     (DREAM_SKILLS_PROMPT.txt). The merges are planned (all model calls)
//     before any file changes, and the plan is checked against the guard.
//
// # Safety
//
// The guard refuses a component's result that would remove more than
// Settings.MaxDropShare (25%) of its entries (memories, pulse items,
// skills), or that does not parse; nothing of that component changes and
// the report says why. The flat backend's rewrite of MEMORIES.txt counts a
// line as removed when the rewrite no longer holds at least half of its
// content words (heldLines), not only when the line count drops, so a
// rewrite that replaces every fact with others is refused like a vector
// plan that closes them. A model-written skill (a merge or a condensation) is
// also checked on its own (skillcheck.go): it must parse as a skill within
// the size limits, begin with the summary (the original first line, or most
// of its words), still hold a procedure, not grow, and not be an answer to
// the instruction ("OK: You are tidying…", a copied run of its words)
// instead of a skill; a merge must be one skill made only of the skills it
// names, none of them edited while the model worked. A refused answer keeps
// the original skills and the report says why. Every change
// is journalled (tables dream_runs, dream_changes) with what is needed to
// undo it, the changed files are committed to the data dir's history as one
// revision, and Revert undoes a dream: closed memories reopened, created
// ones deleted, pulse items set back, files restored. (Pulse items purged
// for being completed more than 30 days earlier are not restored.)
//
// # Cost at scale
//
// The similarity pass never builds a matrix: pairs are streamed, each item
// keeps its 16 most similar partners at ≥ the threshold (from which the
// clusters are built) and the suspicious pairs are kept in a bounded heap,
// so memory is O(N). Up to ExactLimit memories every pair is compared
// (N²/2 dot products of 384 dims; 4,000 → 8M); above, candidates come from
// locality-sensitive hashing (16 tables of 8 random-hyperplane bits,
// buckets compared in windows of 256), at most 16·N·256 comparisons. Model
// calls are one per cluster (at most 100 per dream), one per suspicious
// pair (at most 20), one for the pulse, one per merged or long skill.
//
// # Concurrency
//
// A Dreamer runs one dream (or revert) at a time; a second concurrent call
// gets ErrBusy. Run owns its timer and calls Dream in its own goroutine.
package dreaming
