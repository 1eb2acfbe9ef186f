// Package memory is Reverie's long-term memory: facts, preferences,
// episodes, procedures and opinions, with hybrid recall.
//
// # Backends
//
// Store is the backend interface. Open selects one by Options.Backend:
//
//   - local_vector (default, VectorStore): rows in the SQLite table
//     "memories" (migration component "memory"), an FTS5 index for
//     TextSearch (external content, porter + unicode61 tokenizer) that takes
//     new memories in batches (ftsBatch; TextSearch catches up first), the
//     embedding stored as a BLOB next to the id of the model that made it,
//     compact: int8 codes and one float32 scale (vecblob.go; 518 bytes at
//     512 dimensions, where float32 took 2,048; stores of older versions
//     are converted in the background, compact.go), and an in-memory
//     index holding every memory's metadata plus the same int8 codes and
//     a sign-bit sketch of its vector (about 0.45 KB per 384-dim memory).
//     The int8 codes live in a shared mapping of an unlinked file next to
//     the database (vecSpace: file cache the kernel can drop and read
//     back, not the process's private memory), copied from the BLOBs at
//     every load; in the heap for an in-memory database or where the file
//     cannot be made.
//   - flat (FlatStore): MEMORIES.txt only, one memory per line, BM25 recall.
//
// # Hybrid recall
//
// For a query q at time t (Query.At, default now), VectorStore.Recall:
//
//  1. Takes up to C = Tuning.Candidates full-text candidates: the content
//     words of q (stop words and speaker names the query mentions dropped),
//     Porter2-stemmed, ranked by BM25 (k1 = BM25K1, b = BM25B) over an
//     in-memory inverted index that mirrors the FTS5 table. With KindWeight
//     > 0, each noun the query names (the longest phrase of up to three
//     words internal/lexicon knows: "musical instruments", "doctors") adds
//     the words naming its kinds and instances (guitar, drum…;
//     dermatologist, surgeon…: WordNet's hyponyms, kindTerms) as terms of
//     weight KindWeight, and with DerivedWeight > 0 each word or phrase the
//     words WordNet derives from it in another part of speech (marriage →
//     marry, photography → photographer) at DerivedWeight, one group per
//     phrase, where a memory scores only its best term of the group (so a
//     reply listing ten instruments does not outrank the message naming
//     one); and up to C
//     vector candidates by cosine similarity to the embedded query. Below
//     8,192 memories every vector is compared; above, the 1,024 (or 8·C)
//     memories nearest by Hamming distance of the sign sketches are
//     re-ranked by the int8 dot product. Memories not valid at t
//     (ValidFrom > t or ValidTo ≤ t, unless IncludeClosed) and those outside
//     Kinds/Thread are excluded from both lists.
//  2. Pseudo-relevance feedback: a second BM25 ranking for the query plus
//     FeedbackTerms terms of the FeedbackDocs best full-text matches,
//     those with the highest sum over the matches holding them of
//     idf · score/best score (a match counts as much as it matches),
//     fused with weight FeedbackWeight (it finds the answer that uses
//     other words than the question).
//  3. Fuses the rankings by reciprocal rank fusion:
//     fused(m) = Wt/(k + rank_text(m)) + Wv/(k + rank_vec(m)), a missing
//     rank contributing 0 (k = RRFK). With PassageWeight > 0 a passage
//     ranking joins them at that weight: the candidates so far, and the
//     next full-text matches up to PassageCandidates, ranked by their best
//     window of PassageWidth consecutive sentences (each line of the text
//     split into sentences as an excerpt splits a paragraph), scored as
//     the sum over the query terms it holds of idf·tf·(k1+1)/(tf+k1), tf
//     counted in the window, a kind group counting its best term; a memory
//     with no query term scores nothing and is not ranked. It finds the
//     one sentence of a long message that holds the answer.
//  4. Spreads relevance to conversational context along the episode chains
//     linked at ingest (each episode to the one told just before and after
//     it in the same thread and session, by the stored Thread and Session):
//     the episodes up to SpreadReach links away get
//     fused(n) = max(fused(n), own(n) + w·Spread^(d−1)·own(m)) at distance d,
//     w = Spread backwards and forwards, or AnswerSpread forwards when the
//     next episode's stored speaker differs (a reply), so an answer is found
//     through the question that preceded it. An episode of an exchange with
//     the assistant (a user's message whose next episode is the assistant's
//     reply, stored Role assistant, or that reply) passes relevance only
//     within the exchange (w = ExchangeSpread to the reply and back to the
//     message) and, from a reply, ExchangeSpread to the message after it
//     (the user's answer to what the assistant asked): the exchanges around are
//     other topics, which the chain's reach would otherwise pull into the
//     top ranks. A group room's overheard messages spread along the chain.
//  5. Re-scores: score(m) = fused(m)/((Wt+Wv)/(k+1)) ·
//     (1 + Br·e^(−age/τr) + Bs·G + Bi·intent) · (1 + Bsp if the query names
//     m's speaker) · (1 + Bd if m is dated within the time the query names)
//     · (len(m)/avglen)^γ, where len counts words (γ = LengthPrior: short
//     memories such as "Thanks, see you!" seldom hold the answer), age is
//     the time since creation, G = R − R0 is what recall has added to the
//     memory's Ebbinghaus retention R = e^(−Δ/S), with Δ the time since
//     its last recall (an access: shown in a turn's prompt, say) and stability
//     S = S0·(1 + ln(1 + accesses)) growing with every recall, over the
//     retention R0 = e^(−age/S0) of the memory had it never been recalled
//     (G = 0 for a memory never recalled, however old: a memory used often
//     and lately outranks an equal one never used, and age alone does not
//     count against a memory), and
//     intent ∈ [0,1] is the fit to the query's intent: a time question
//     (when, what date, how long ago, before/after, …) scores ½ for a dated
//     memory or an episode and ½ for text mentioning a date or relative
//     time; "what do I like/prefer/favourite" favours preferences, "how do
//     I" procedures, "what do I think" opinions. A memory's speaker is its
//     stored Speaker field (never read from the text: "Note: …" has none),
//     and the query names it when the speaker's words appear in it. The time a query names is the span of
//     the calendar days ("on 13 October, 2023", "October 13, 2023",
//     "2023-10-13") and months ("in July 2023") it mentions, else of its
//     years ("in 2022"), else the days it names relative to the time it is
//     asked ("yesterday", "5 days ago", "four weeks ago", "two months
//     ago": the day that many units before, widened by half a unit on each
//     side, at most 15 days); a memory's date is its EventTime, else its
//     CreatedAt, and may lie one day before to DateSlackDays after the span
//     (Bd = DateBoost).
//  6. Returns the top Limit by score, ties broken by id, and — unless
//     Query.Peek — records an access to each.
//
// Recall's phases are one method each of recallRun (recall.go); Rank runs
// them without reading the rows back. Tuning holds every constant;
// DefaultTuning was measured on the LoCoMo and LongMemEval dev splits with
// the built-in sentence encoder, each weight set where the
// cross-validations' folds point (see internal/eval and DefaultTuning).
//
// # Episodes
//
// Ingest (and Service.Ingest) is the one way conversations enter memory:
// the agent calls it after every answered user turn when memory.episodes is
// on, the router for a group-room message the assistant only listens to,
// and `reverie eval` for its datasets. It stores a message (chat.Inbound)
// and the assistant's reply as episode memories: kind episode, source
// conversation, the thread, the session (the day in the configured zone,
// SessionOf), the speaker (the sender's display name, the assistant's
// name) and role as columns, the time the message was received as
// EventTime. No model is
// called. Episodes are never merged with equal text (two "Thanks!" are two
// episodes); they fade faster than facts (EpisodeStrengthDays), and
// dreaming condenses old ones into facts.
//
// # Writes and validation
//
// Texts are trimmed; empty text is ErrEmpty, more than MaxTextLen characters
// ErrTooLong, and anything LooksSecret recognises (API keys, tokens, private
// keys, "password: …") ErrSecret — such text is never stored. Adding a text
// equal after normalisation (case, white space, trailing punctuation) to a
// current memory stores nothing new: the existing id is returned and its
// UpdatedAt bumped. A superseded memory is closed (ValidTo set), not
// deleted; Delete removes it for good. Update of a memory's text is such a
// supersession: one transaction closes the old row, inserts the new text
// as a new memory (new id, the old one's access statistics) and links the
// old row to it (superseded_by, Memory.SupersededBy); a closed memory is
// not edited (ErrClosed). Only kind, source, event time and thread change
// in place. When the embedder's ID differs from the one stored with a
// vector, that memory is left out of vector search until Reembed
// (resumable, batched, progress callback) has re-embedded it.
//
// # MEMORIES.txt and the store
//
// Service joins the store and MEMORIES.txt. With local_vector the file is
// the store's top: every line of it is a current memory, lines leaving it
// stay in the store. Service.Reconcile restores that after the file was
// changed behind the service (a restore from the data dir's history, a
// hand edit while stopped; the app calls it at every start and after a
// restore): a missing line reopens the most recently closed memory with
// exactly its text (VectorStore.EnsureCurrent), else it is imported
// (SourceImport). Nothing is closed or deleted, so it is idempotent.
//
// # Concurrency
//
// VectorStore is safe for concurrent use. Embedding runs outside any lock;
// each write is one SQLite transaction followed by the index update, both
// under a write mutex so the index always reflects the committed order.
// Recall holds the index read lock only while ranking (not during SQL or
// embedding), so readers never wait for the database and a recall sees
// every write that returned before it started. Access statistics are applied
// to the in-memory index at once and written to SQLite later: with the
// database's shared group commit (Options.Commits, the agent's) in its next
// transaction (sqlite.Committer.Defer: a turn's next write, or the
// Committer's own within 50 ms), one write of all that is pending queued
// at most once a second and by the store's goroutine every 5 s; without
// it, in a transaction of its own by that goroutine (on 256 pending
// memories or every 5 s). A crash loses the accesses not yet written: at
// most those of the last 5 s, as before. Flush writes them now,
// and Shutdown stops the goroutine and flushes. The index
// is read from SQLite by another goroutine the store owns, started by
// LoadIndex or by the first reader or writer of the index, not by Open: the
// index lock is held from Open until the load is done, so the first recall
// or write waits for it (and a failed load makes recall return its error);
// Shutdown waits for that goroutine too. Get and
// Recall report pending counts; List flushes first. The *sql.DB belongs to
// the caller and must outlive the store.
package memory
