package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/eval"
)

// parseKs reads --k: positive numbers, comma-separated.
func parseKs(ks string) ([]int, error) {
	var k []int
	for _, s := range strings.Split(ks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, exitError{code: 2, err: fmt.Errorf("--k: %q is not a positive number", s)}
		}
		k = append(k, n)
	}
	return k, nil
}

func newEvalLongMemEvalCmd(g *globalFlags, env []string) *cobra.Command {
	var data, ks, embedding string
	var dims, workers int
	var asJSON, cv bool
	cmd := &cobra.Command{
		Use:   "longmemeval --data FILE",
		Short: "Memory recall on a LongMemEval-format file",
		Long: `For each question of a LongMemEval-format JSON file, store its haystack in a fresh memory store
as private web conversations between the user and the assistant (each message an episode, with the
user's display name or the assistant's name as its speaker, at its session's time, through the function
a live turn is recorded with), ask the question at its date and report, at round level (a user message
and the reply after it) and session level, recall_any@k (some evidence among the first k distinct units
of the ranking), recall_all@k (all of it) and NDCG@10, overall and by question type. Abstention
questions (ids ending in _abs) are left out of recall and reported apart. It also reports what the
turn's recall would put into the prompt: memory lines and tokens a question, and how often every
evidence round or session is among them. Uses the offline embedder unless --embedding names a model
(as for reverie eval locomo).

With --cv, folds over the questions: every retrieval weight is chosen (coordinate search from a
neutral start) on the other folds and each fold is scored with them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if data == "" {
				return exitError{code: 2, err: fmt.Errorf("--data FILE is required")}
			}
			k, err := parseKs(ks)
			if err != nil {
				return err
			}
			f, err := os.Open(data)
			if err != nil {
				return fmt.Errorf("open LongMemEval data: %w", err)
			}
			defer f.Close()
			opts := eval.LMEOptions{K: k, Workers: workers}
			if embedding != "" {
				e, err := evalEmbedder(cmd, g, env, embedding, dims)
				if err != nil {
					return err
				}
				opts.Embedder = e
			}
			if !asJSON {
				opts.Progress = func(done, total int) {
					fmt.Fprintf(cmd.ErrOrStderr(), "\rquestions %d/%d", done, total)
					if done == total {
						fmt.Fprintln(cmd.ErrOrStderr())
					}
				}
			}
			qs, err := eval.ParseLongMemEval(f)
			if err != nil {
				return err
			}
			var rep interface {
				MarshalJSON() ([]byte, error)
				WriteTable(w io.Writer) error
			}
			if cv {
				rep, err = eval.CrossValidateLongMemEval(cmd.Context(), qs, opts)
			} else {
				rep, err = eval.RunLongMemEval(cmd.Context(), qs, opts)
			}
			if err != nil {
				return err
			}
			if asJSON {
				b, err := rep.MarshalJSON()
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return err
			}
			return rep.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "LongMemEval-format JSON file")
	cmd.Flags().StringVar(&ks, "k", "1,5,10,25", "recall cut-offs, comma-separated")
	cmd.Flags().StringVar(&embedding, "embedding", "", "embedding model BACKEND/MODEL instead of the offline embedder")
	cmd.Flags().IntVar(&dims, "embedding-dimensions", 0, "vector size to ask the --embedding model for (0: its own, asked with one call)")
	cmd.Flags().IntVar(&workers, "workers", 0, "questions ingested at once (0: one per CPU)")
	cmd.Flags().BoolVar(&cv, "cv", false, "cross-validate: folds over the questions, weights chosen on the other folds")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"round":{"recall_any@5":…},"session":{…},"by_type":{…},"questions":N,"injected":{…},"abstention":{…}}`)
	return cmd
}
