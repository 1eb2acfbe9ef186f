// Package versioning keeps the human-editable files of the data dir in a git
// repository inside the data dir (DATA/.git), read and written by a small
// pure-Go implementation of the part of git it needs: no git binary and no
// git library are needed, and a user who has git can browse the history
// with ordinary git commands.
//
// # What is tracked
//
// Only the files people and the assistant edit as text (Tracked):
//
//	MEMORIES.txt  BASE_PROMPT.txt  world_state.json  skills/…  prompts/…
//
// Never the database (reverie.db*), logs/, secrets, the workspace, archive/,
// the lock file or config.yaml (it may hold inline secrets, and secrets never
// go into history). Inside skills/ and prompts/, hidden files (".*"), temp
// files ("*.tmp") and editor leftovers ("*~", "*.swp") are skipped too, and
// so is anything that is not a regular file. The rule is code (IsTracked);
// the .gitignore written on initialisation only mirrors it for people using
// git by hand.
//
// # Operations
//
// Commit stages the paths a component just changed (files or directories,
// deletions included) and records a commit only when something differs from
// the last one; CommitAll does the same for every tracked path (used at
// start-up for edits made while Reverie was stopped). History lists commits,
// optionally only those touching a path; Show returns one commit's patch;
// Restore puts every tracked file back to its content at an earlier revision
// and records that as a new commit "restore <short>". History is never
// rewritten, so a restore can itself be restored. Uncommitted edits found
// when Restore starts are committed first, so a restore never loses them.
//
// # Durability and bad input
//
// A missing .git is initialised. A .git that cannot be opened (a corrupt
// HEAD, a missing head commit, garbage where the repository should be) is
// moved aside to .git.corrupt-<UTC timestamp> — never deleted — and a fresh
// repository is started; Open logs a warning naming the kept copy. The index
// is a cache of the head commit: an unreadable index or one that disagrees
// with the head is rebuilt from the head commit on Open.
//
// Files restored are written atomically (temp file, fsync, rename).
//
// # On-disk format
//
// The repository is an ordinary git repository that git itself reads as
// clean: HEAD names refs/heads/main; objects are loose, zlib-compressed and
// SHA-1-addressed with git's exact encoding of blobs, trees (entries in
// git's order, modes 100644, 100755 and 40000) and commits (tree, parent,
// author, committer); the index is a version 2 "DIRC" index matching the
// head commit, with stat data so git status need not rehash. A commit
// stages its objects in temp files, syncs them, renames them to their ids,
// then replaces the index (atomically, not synced: it is a cache that Open
// rebuilds) and last the ref (atomically and synced), so a crash leaves the
// previous commit or the new one. What git may write there is read too:
// packed refs (.git/packed-refs), pack files left by git gc or git repack
// (index version 2, whole objects and OFS/REF deltas), index version 3 and
// its extensions, merge commits, annotated tags and a detached HEAD (a
// commit then moves HEAD itself). An index of version 4 is rebuilt; a
// version 1 pack index or objects borrowed through objects/info/alternates
// leave the head unreadable, so the repository is kept aside as above.
// Reverie never packs, and never writes reflogs or index extensions.
//
// Revisions are full hashes, unique prefixes of at least four hex digits,
// HEAD, branch and tag names, each with git's ~N and ^N suffixes.
//
// Show's patch is written here too: Myers' diff in linear space (bounded
// in cost for pathological files), three lines of context, git's headers,
// binary files named rather than shown.
//
// # Concurrency
//
// A Repo is safe for concurrent use: one mutex serialises every operation,
// reads included (the object store and its caches are not safe for
// concurrent use). One process owns a data dir (datadir.Lock); commands
// that change the history from outside the agent take that lock first. Git
// run by hand in the data dir while an agent writes is not coordinated
// with (Reverie does not take git's .lock files).
package versioning
