// Package skills holds the assistant's learned procedures: one Markdown file
// per skill in <data>/skills/NAME.md, whose first line is a one-line summary
// (shown in the table of contents) followed by the steps. The Store reads,
// caches, writes and deletes them, and records which skills were loaded into
// which session's prompt (table skill_loads, migration component "skills")
// for the reflection cycle. Tools: add_skill (create or replace) and
// read_skill (open a skill listed only in the table of contents).
//
// # Names and bodies
//
// Names written through the store are 1–64 characters of lower-case letters,
// digits, '-' and '_', starting with a letter or digit; a trailing ".md" is
// dropped. Anything else — empty, path separators, "..", capitals, spaces —
// is ErrInvalidName with a suggested valid name, and nothing is written.
// Files a person put in the directory by hand with other names ("Git
// Tips.md") are still listed, shown and readable under their file name;
// hidden files (".x.md") and non-regular files are ignored. A body is
// trimmed and its line endings normalised; empty is ErrEmpty, over
// Options.MaxBodyChars characters (default DefaultMaxBodyChars) or a first
// line over MaxSummaryChars is ErrTooLong, and a credential-like text
// (textcheck.LooksSecret) is ErrSecret.
//
// # Cache
//
// The agent asks for the skills on every turn. The store keeps every file's
// parsed content with its size and modification time. A call stats the
// directory; when its modification time changed (a file was added, removed
// or replaced by rename, as editors and git do) the directory is re-listed
// and every file stat'ed, and a file is re-read only when its size or
// modification time changed. When the directory did not change, the files
// are stat'ed at most every Options.StatInterval (default one second) to
// catch in-place edits. So a turn when nothing changed reads no file and
// usually makes one stat call; the store's own writes are seen at once.
//
// # Writes
//
// Save and Delete are serialised by a mutex. Save writes a temporary file
// in the skills directory, fsyncs it, renames it over NAME.md and fsyncs the
// directory, so a crash leaves the old or the new skill, never a torn one.
// After every write or delete that changed something, Options.Changed is
// called (outside the lock) with a commit message and the data-dir-relative
// path ("skills/NAME.md"); the app wires it to the data dir's git history.
//
// # Load records
//
// RecordLoads stores at most one row per (thread, skill, mode, UTC day):
// an in-memory set remembers what was written today, so a turn whose skills
// were already recorded for its thread costs no database write. Mode is
// full (the whole text was in the prompt), toc (only its summary line) or
// read (opened with read_skill).
//
// # Concurrency
//
// A *Store is safe for concurrent use. The *sql.DB, when given, belongs to
// the caller and must outlive the store.
package skills
