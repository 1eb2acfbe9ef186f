package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/termtext"
)

// newMemoryCmd is `reverie memory`: the long-term memory from the command
// line. search, add, list, edit and forget are here; history and restore (the
// data dir's versioned files) live in memoryhistory.go.
func newMemoryCmd(g *globalFlags, env []string, children ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Search, add, list, edit and forget long-term memories",
		Long: `Work with the long-term memory of the data dir. While an agent runs on the data dir the
commands go through its control socket; otherwise they open the store in this process.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newMemorySearchCmd(g, env), newMemoryAddCmd(g, env), newMemoryListCmd(g, env), newMemoryEditCmd(g, env),
		newMemoryForgetCmd(g, env))
	cmd.AddCommand(children...)
	return cmd
}

// withMemory opens the data dir's memory store in this process (no
// extensions, no channels) for the duration of fn.
func withMemory(cmd *cobra.Command, g *globalFlags, env []string, fn func(ctx context.Context, svc *memory.Service) error) error {
	return withApp(cmd, g, env, func(ctx context.Context, a *app.App) error { return fn(ctx, a.Memory) })
}

// withMemories gives fn the data dir's memories: the running agent's
// through its control socket, else the store opened in this process.
func withMemories(cmd *cobra.Command, g *globalFlags, env []string, fn func(ctx context.Context, svc api.Memories) error) error {
	return withServices(cmd, g, env, func(ctx context.Context, s services) error { return fn(ctx, s.memories) })
}

func parseKinds(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		kind := memory.Kind(strings.TrimSpace(k))
		if !kind.Valid() {
			return nil, fmt.Errorf("--kind: unknown kind %q (want %s)", kind, strings.Join(memory.Kind("").EnumValues(), ", "))
		}
		out = append(out, string(kind))
	}
	return out, nil
}

func newMemorySearchCmd(g *globalFlags, env []string) *cobra.Command {
	var limit int
	var kinds string
	var asJSON, history bool
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Recall the memories most relevant to QUERY (hybrid: words and meaning)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			query := strings.Join(args, " ")
			if strings.TrimSpace(query) == "" {
				return errors.New("give words to search for (reverie memory list shows every memory)")
			}
			ks, err := parseKinds(kinds)
			if err != nil {
				return err
			}
			return withMemories(cmd, g, env, func(ctx context.Context, svc api.Memories) error {
				res, err := svc.Search(ctx, api.MemorySearch{Text: query, Limit: limit, Kinds: ks,
					IncludeClosed: history})
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), memoriesJSON(res))
				}
				return writeMemories(cmd.OutOrStdout(), res)
			})
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 10, "number of results")
	cmd.Flags().StringVar(&kinds, "kind", "", "only these kinds (comma-separated: fact, preference, episode, procedure, opinion)")
	cmd.Flags().BoolVar(&history, "superseded", false, "include superseded memories")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemoryAddCmd(g *globalFlags, env []string) *cobra.Command {
	var kind, when string
	var keep bool
	cmd := &cobra.Command{
		Use:   "add TEXT",
		Short: "Remember TEXT (as if you had asked the assistant to)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, err := parseKinds(kind)
			if err != nil {
				return err
			}
			m := api.MemoryInput{Text: strings.Join(args, " "), Kind: string(memory.KindFact), Source: string(memory.SourceUserExplicit),
				Keep: &keep}
			if len(ks) == 1 {
				m.Kind = ks[0]
			} else if len(ks) > 1 {
				return errors.New("--kind: give one kind")
			}
			if when != "" {
				t, err := time.Parse(time.DateOnly, when)
				if err != nil {
					return fmt.Errorf("--when: %q is not YYYY-MM-DD", when)
				}
				m.EventTime = &t
			}
			return withMemories(cmd, g, env, func(ctx context.Context, svc api.Memories) error {
				r, err := svc.Add(ctx, m)
				if err != nil {
					return err
				}
				if r.Existing {
					fmt.Fprintf(cmd.OutOrStdout(), "already remembered as #%d\n", r.ID)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "remembered as #%d\n", r.ID)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "fact", "fact, preference, episode, procedure or opinion")
	cmd.Flags().StringVar(&when, "when", "", "date of an episode (YYYY-MM-DD)")
	cmd.Flags().BoolVar(&keep, "keep", true, "also add it to MEMORIES.txt (always in the prompt; an episode never is)")
	return cmd
}

func newMemoryListCmd(g *globalFlags, env []string) *cobra.Command {
	var limit int
	var kinds string
	var asJSON, closed, byAccess bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memories, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, err := parseKinds(kinds)
			if err != nil {
				return err
			}
			if limit < 0 {
				return errors.New("--limit must be 0 (all) or more")
			}
			return withMemories(cmd, g, env, func(ctx context.Context, svc api.Memories) error {
				ms, err := listMemories(ctx, svc, api.MemoryFilter{Kinds: ks, IncludeClosed: closed, Limit: limit, OrderByAccess: byAccess})
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), memoriesJSON(ms))
				}
				return writeMemories(cmd.OutOrStdout(), ms)
			})
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "at most this many (0: all)")
	cmd.Flags().StringVar(&kinds, "kind", "", "only these kinds (comma-separated)")
	cmd.Flags().BoolVar(&closed, "superseded", false, "include superseded memories")
	cmd.Flags().BoolVar(&byAccess, "by-access", false, "most recalled first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemoryEditCmd(g *globalFlags, env []string) *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "edit ID TEXT",
		Short: "Correct a memory: the new text replaces it, the old one is kept as history",
		Long: `Replace the text of memory ID (from search or list) by TEXT. The old version is closed,
not deleted: "memory list --superseded" shows it with the id of the version that replaced
it. The new version is marked as written by you (user_explicit) and MEMORIES.txt follows.
With TEXT equal to the current text only --kind changes, in place.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(strings.TrimPrefix(args[0], "#"), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a memory id", args[0])
			}
			ks, err := parseKinds(kind)
			if err != nil {
				return err
			}
			if len(ks) > 1 {
				return errors.New("--kind: give one kind")
			}
			return withMemories(cmd, g, env, func(ctx context.Context, svc api.Memories) error {
				m, err := svc.Get(ctx, id)
				if err != nil {
					return idError{id: id, err: err}
				}
				in := api.MemoryInput{Text: strings.Join(args[1:], " "), Kind: m.Kind, EventTime: m.EventTime}
				if len(ks) == 1 {
					in.Kind = ks[0]
				}
				if m.ValidTo != nil {
					return closedMemory(ctx, svc, m)
				}
				updated, err := svc.Update(ctx, id, in)
				if err != nil {
					return idError{id: id, err: err}
				}
				cur := updated.ID
				if cur == id {
					fmt.Fprintf(cmd.OutOrStdout(), "updated #%d\n", id)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "#%d is now #%d (the old text is kept as history)\n", id, cur)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "also change the kind (fact, preference, episode, procedure, opinion)")
	return cmd
}

func newMemoryForgetCmd(g *globalFlags, env []string) *cobra.Command {
	return &cobra.Command{
		Use:   "forget ID...",
		Short: "Forget memories permanently (ids from search or list)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, a := range args {
				id, err := strconv.ParseInt(strings.TrimPrefix(a, "#"), 10, 64)
				if err != nil {
					return fmt.Errorf("%q is not a memory id", a)
				}
				ids[i] = id
			}
			return withMemories(cmd, g, env, func(ctx context.Context, svc api.Memories) error {
				var errs []error
				for _, id := range ids {
					m, err := svc.Get(ctx, id)
					if err == nil {
						err = svc.Forget(ctx, id)
					}
					if err != nil {
						errs = append(errs, idError{id: id, err: err})
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "forgot #%d: %s\n", id, termtext.Line(m.Text))
				}
				return errors.Join(errs...)
			})
		},
	}
}

// listPage is how many memories one request of an unlimited list asks
// for: the API's largest page.
const listPage = 1000

// listMemories lists the memories f selects; with no limit (f.Limit 0) it
// asks page after page, so that "all" means all through the control
// socket too (the API answers at most listPage at a time).
func listMemories(ctx context.Context, svc api.Memories, f api.MemoryFilter) ([]api.Memory, error) {
	if f.Limit > 0 {
		return svc.List(ctx, f)
	}
	var all []api.Memory
	f.Limit = listPage
	for {
		ms, err := svc.List(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
		if len(ms) < listPage {
			return all, nil
		}
		f.Offset += len(ms)
	}
}

type memoryJSON struct {
	ID          int64   `json:"id"`
	Text        string  `json:"text"`
	Kind        string  `json:"kind"`
	Source      string  `json:"source"`
	CreatedAt   string  `json:"created_at"`
	EventTime   string  `json:"event_time,omitempty"`
	ValidTo     string  `json:"valid_to,omitempty"`
	AccessCount int     `json:"access_count"`
	Score       float64 `json:"score,omitempty"`
	// SupersededBy is the memory whose edit closed this one.
	SupersededBy int64 `json:"superseded_by,omitempty"`
}

func toJSON(m api.Memory) memoryJSON {
	j := memoryJSON{ID: m.ID, Text: m.Text, Kind: m.Kind, Source: m.Source,
		CreatedAt: m.CreatedAt.Format(time.RFC3339), AccessCount: m.AccessCount}
	if m.Score != nil {
		j.Score = *m.Score
	}
	if m.EventTime != nil {
		j.EventTime = m.EventTime.Format(time.DateOnly)
	}
	if m.ValidTo != nil {
		j.ValidTo = m.ValidTo.Format(time.RFC3339)
		j.SupersededBy = m.SupersededBy
	}
	return j
}

func memoriesJSON(ms []api.Memory) []memoryJSON {
	out := make([]memoryJSON, len(ms))
	for i, m := range ms {
		out[i] = toJSON(m)
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeMemories(w io.Writer, ms []api.Memory) error {
	if len(ms) == 0 {
		_, err := fmt.Fprintln(w, "no memories")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tDATE\tTEXT")
	for _, m := range ms {
		date := m.CreatedAt.Format(time.DateOnly)
		if m.EventTime != nil {
			date = m.EventTime.Format(time.DateOnly)
		}
		text := termtext.Line(m.Text)
		switch {
		case m.ValidTo != nil && m.SupersededBy != 0:
			text += fmt.Sprintf(" (superseded by #%d)", m.SupersededBy)
		case m.ValidTo != nil:
			text += " (superseded)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.ID, termtext.Line(m.Kind), date, text)
	}
	return tw.Flush()
}

// closedMemory is the refusal to edit m, a closed memory: it names the
// current version that replaced it, as forget does, when there is one.
func closedMemory(ctx context.Context, svc api.Memories, m api.Memory) error {
	id := m.ID
	for range 1000 {
		if m.SupersededBy == 0 {
			break
		}
		next, err := svc.Get(ctx, m.SupersededBy)
		if err != nil {
			break
		}
		if next.ValidTo == nil {
			return closedError{id: id, current: next.ID}
		}
		m = next
	}
	return closedError{id: id}
}

// closedError refuses an edit of memory id, closed; current is the version
// that replaced it (0: none is current). It is a memory.ErrClosed.
type closedError struct{ id, current int64 }

func (e closedError) Error() string {
	if e.current == 0 {
		return fmt.Sprintf("memory %d is history (superseded) and no current version replaced it (nothing was changed)", e.id)
	}
	return fmt.Sprintf("memory %d was replaced by memory %d, its current version: edit %d to change it (nothing was changed)",
		e.id, e.current, e.current)
}

func (e closedError) Unwrap() error { return memory.ErrClosed }

// idError is a memory command's error about memory id: the reason as a
// person reads it, without the API error's words in front (api.Reason), the
// same whether the agent runs (its control socket) or not (in process). A
// reason that names the memory itself ("memory 999 not found") is the whole
// sentence; any other gets the id in front ("#5: memory duplicates …").
type idError struct {
	id  int64
	err error
}

func (e idError) Error() string {
	r := api.Reason(e.err)
	if strings.HasPrefix(r, fmt.Sprintf("memory %d ", e.id)) {
		return r
	}
	return fmt.Sprintf("#%d: %s", e.id, r)
}
func (e idError) Unwrap() error { return e.err }
