package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/versioning"
	"github.com/reverie-ai/reverie/termtext"
)

// historyFiles is how many changed files a history line names.
const historyFiles = 3

// newMemoryHistoryCmd is `reverie memory history [REV]`: the history of the
// data dir's versioned files, or one change with its diff. It only reads, so
// it works while an agent runs.
func newMemoryHistoryCmd(g *globalFlags, env []string) *cobra.Command {
	var path string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history [REV]",
		Short: "List the changes to MEMORIES.txt, skills, prompts and the world state, or show one",
		Long: `Every change to the data dir's editable files — MEMORIES.txt, BASE_PROMPT.txt,
world_state.json, skills/ and prompts/ — made by a tool, the web page, dreaming or by hand
is recorded in a git repository inside the data dir (DATA/.git). Without REV this lists
the changes, newest first; with REV (a hash, a short hash or HEAD~N) it prints that
change with its diff. Put a change back with "reverie memory restore REV".`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			// Even the default data dir: a history needs one.
			if err := checkDataDir(dir); err != nil {
				return err
			}
			repo, err := versioning.Open(dir, versioning.Options{ReadOnly: true})
			if errors.Is(err, versioning.ErrNoHistory) {
				fmt.Fprintln(cmd.OutOrStdout(), "No history yet: it starts the next time the agent runs on this data dir.")
				return nil
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				d, err := repo.Show(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out, d)
				}
				fmt.Fprintf(out, "commit %s\nDate:  %s\n\n", d.Hash, d.Time.Local().Format("2006-01-02 15:04:05 -0700"))
				for _, line := range strings.Split(d.Message, "\n") {
					fmt.Fprintln(out, "    "+termtext.Line(line))
				}
				fmt.Fprintln(out)
				fmt.Fprint(out, termtext.Text(d.Patch))
				return nil
			}
			if limit < 0 {
				return errors.New("--limit must be 0 (all) or more")
			}
			revs, err := repo.History(cmd.Context(), path, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out, revs)
			}
			if len(revs) == 0 {
				fmt.Fprintln(out, "No changes recorded.")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, r := range revs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Short, r.Time.Local().Format("2006-01-02 15:04"), termtext.Line(r.Subject()), termtext.Line(fileList(r.Files)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&path, "path", "", `only changes to this file or directory ("MEMORIES.txt", "skills")`)
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many changes (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// newMemoryRestoreCmd is `reverie memory restore REV`: through the running
// agent when one runs, else in this process under the data dir lock.
func newMemoryRestoreCmd(g *globalFlags, env []string) *cobra.Command {
	return &cobra.Command{
		Use:   "restore REV",
		Short: "Put MEMORIES.txt, skills, prompts and the world state back as they were at REV",
		Long: `Put every versioned file of the data dir back to its content at REV (a hash, a short hash
or HEAD~N from "reverie memory history"): files changed since are rewritten, files added
since are removed, files removed since come back. Nothing else is touched. The restore is
recorded as a new change, so it can itself be undone with another restore; edits not yet
recorded are recorded first. When MEMORIES.txt comes back, the memory store is re-synced
with it: its lines are current memories again (a superseded or forgotten one is reopened
or re-imported); memories not in the file stay in the store. While an agent runs on the
data dir the restore goes through its control socket and the agent rereads the restored
files (as a restore from the web page does); otherwise it is done in this process.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			// Even the default data dir: a history needs one.
			if err := checkDataDir(dir); err != nil {
				return err
			}
			c, err := runningAgent(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if c != nil {
				return restoreInAgent(cmd, c.History(), args[0])
			}
			rev, err := restoreFiles(cmd, dir, args[0])
			if err != nil || !slices.Contains(rev.Files, memory.MemoriesFile) {
				return err
			}
			// With the vector backend MEMORIES.txt is the top of the memory
			// store: what the restored file holds must be memories again.
			// Opening the store re-syncs it (the agent does so at every
			// start); Reconcile reports where it stands.
			err = withMemory(cmd, g, env, func(ctx context.Context, svc *memory.Service) error {
				r, err := svc.Reconcile(ctx)
				if err != nil {
					return err
				}
				if !svc.Flat() {
					fmt.Fprintf(cmd.OutOrStdout(), "Memory store in step with MEMORIES.txt: %d line(s) are current memories", r.Lines-r.Skipped)
					if r.Skipped > 0 {
						fmt.Fprintf(cmd.OutOrStdout(), "; %d refused (see the log)", r.Skipped)
					}
					fmt.Fprintln(cmd.OutOrStdout(), ".")
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("the files are restored, but the memory store could not be re-synced with MEMORIES.txt (it is retried at the next start): %w", err)
			}
			return nil
		},
	}
}

// restoreInAgent is `reverie memory restore` through the running agent:
// it restores, rereads what it keeps in memory (MEMORIES.txt into the
// memory store, the world state, skills) and says so as restoreFiles does.
func restoreInAgent(cmd *cobra.Command, h api.History, target string) error {
	res, err := h.Restore(cmd.Context(), target)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	at := res.Target
	if res.Revision == nil {
		fmt.Fprintf(out, "Nothing to restore: the files already match %s (%s).\n", at.Short, termtext.Line(subject(at)))
		return nil
	}
	rev := *res.Revision
	fmt.Fprintf(out, "Restored %s (%s) as %s; %d file(s) changed: %s\n",
		at.Short, termtext.Line(subject(at)), rev.Short, len(rev.Files), termtext.Line(strings.Join(rev.Files, ", ")))
	undo := rev.Short + "~1"
	if revs, err := h.List(cmd.Context(), api.HistoryQuery{Limit: 2}); err == nil && len(revs) == 2 && revs[0].Hash == rev.Hash {
		undo = revs[1].Short
	}
	fmt.Fprintf(out, "Undo with: reverie memory restore %s\n", undo)
	if slices.Contains(rev.Files, memory.MemoriesFile) {
		fmt.Fprintln(out, "The running agent re-syncs its memory store with the restored MEMORIES.txt (its log says if it could not).")
	}
	return nil
}

// subject is the first line of a change's message.
func subject(r api.Revision) string {
	s, _, _ := strings.Cut(r.Message, "\n")
	return s
}

// restoreFiles is the file part of `reverie memory restore`: under the data
// dir lock, put the versioned files back as they were at target and report
// it. It returns the new revision (zero when nothing changed).
func restoreFiles(cmd *cobra.Command, dir, target string) (versioning.Revision, error) {
	release, err := datadir.Lock(dir)
	if err != nil {
		if errors.Is(err, datadir.ErrLocked) {
			return versioning.Revision{}, fmt.Errorf("%w\nstop the running agent first (one agent per data dir), or restore from the web page", err)
		}
		return versioning.Revision{}, err
	}
	defer release()
	repo, err := versioning.Open(dir, versioning.Options{})
	if err != nil {
		return versioning.Revision{}, err
	}
	at, err := repo.Show(cmd.Context(), target)
	if err != nil {
		return versioning.Revision{}, err
	}
	rev, err := repo.Restore(cmd.Context(), target)
	if err != nil {
		return versioning.Revision{}, err
	}
	out := cmd.OutOrStdout()
	if rev.IsZero() {
		fmt.Fprintf(out, "Nothing to restore: the files already match %s (%s).\n", at.Short, at.Subject())
		return rev, nil
	}
	fmt.Fprintf(out, "Restored %s (%s) as %s; %d file(s) changed: %s\n",
		at.Short, at.Subject(), rev.Short, len(rev.Files), strings.Join(rev.Files, ", "))
	fmt.Fprintf(out, "Undo with: reverie memory restore %s\n", parentOf(repo, cmd, rev))
	return rev, nil
}

// parentOf names the change before rev (what an undo restores).
func parentOf(repo *versioning.Repo, cmd *cobra.Command, rev versioning.Revision) string {
	h, err := repo.History(cmd.Context(), "", 2)
	if err != nil || len(h) < 2 || h[0].Hash != rev.Hash {
		return rev.Short + "~1"
	}
	return h[1].Short
}

func fileList(files []string) string {
	if len(files) <= historyFiles {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s +%d more", strings.Join(files[:historyFiles], ", "), len(files)-historyFiles)
}
