// Package pulse is the assistant's working memory: short items for active
// goals, work in progress, deadlines and open questions, each with an
// auto-assigned id, a priority from 1 (urgent) to 10 (low) and a status
// (active, completed, cancelled). Items live in SQLite (table pulse_items,
// migration component "pulse"); the active ones are shown in every system
// prompt as lines like
//
//	[P2] #3: Fix auth bug
//
// sorted by priority, then id. The model manages them with the pulse tool
// (Tool: add, complete, update, list); dreaming purges items completed or
// cancelled more than 30 days ago (PurgeCompleted).
//
// # Validation
//
// Item text is trimmed and its white space collapsed to single spaces (one
// item is one prompt line); empty text is ErrEmpty, more than
// Options.MaxTextChars characters (default MaxTextChars) ErrTooLong, and
// text that textcheck.LooksSecret recognises as a credential ErrSecret. A
// priority outside 1–10 is ErrPriority, an unknown status ErrStatus, an
// unknown id ErrNotFound. A rejected call changes nothing.
//
// # Change tracking
//
// Every change bumps a revision counter in the same transaction (Revision),
// so a periodic review can tell "nothing changed" with one single-row read.
// A write that changes nothing (an update to the same values, completing a
// completed item) does not bump it. After each committed change the
// Options.Changed hook is called with a Change (the app publishes it on the
// bus as TopicChanged).
//
// # Concurrency
//
// A *Store is safe for concurrent use: every write is one SQLite
// transaction (BEGIN IMMEDIATE), so concurrent writers are serialised by the
// database and ids are never duplicated. The Changed hook runs synchronously
// on the writer's goroutine after the commit, outside any transaction. The
// *sql.DB belongs to the caller and must outlive the store.
package pulse
