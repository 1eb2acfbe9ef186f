package main

import (
	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/eval"
)

func newEvalLongMemEvalCmd(g *globalFlags, env []string) *cobra.Command {
	var f evalFlags
	var workers int
	var misses bool
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
turn's recall would put into the prompt: memory lines and tokens a question, how many lines are
excerpts of a long episode, how often every evidence round or session is among them, and how often
their text holds the answer (of the questions whose answer an evidence turn holds verbatim, compared
without case and punctuation); --whole-memories shows every memory whole, to compare. Uses the offline embedder unless --embedding names a model
(as for reverie eval locomo).

With --cv, folds over the questions: every retrieval weight is chosen (coordinate search from a
neutral start) on the other folds and each fold is scored with them.

With --misses, the report ends with every question whose evidence rounds are not all in the top ten:
per evidence round its haystack session, its rank among rounds, the ranks of its user message and of
the reply among episodes, how many rounds of its own session rank above it, and the start of the
message (with --json, under "misses").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.open(cmd, g, env, "LongMemEval", "questions")
			if err != nil {
				return err
			}
			defer in.close()
			opts := eval.LMEOptions{K: in.k, Workers: workers, Embedder: in.embedder, Progress: in.progress, Misses: misses, Whole: f.whole}
			qs, err := eval.ParseLongMemEval(in.file)
			if err != nil {
				return err
			}
			var rep evalReport
			if f.cv {
				rep, err = eval.CrossValidateLongMemEval(cmd.Context(), qs, opts)
			} else {
				rep, err = eval.RunLongMemEval(cmd.Context(), qs, opts)
			}
			if err != nil {
				return err
			}
			return f.print(cmd, rep)
		},
	}
	f.register(cmd, "LongMemEval-format JSON file",
		"cross-validate: folds over the questions, weights chosen on the other folds",
		`print one JSON object: {"round":{"recall_any@5":…},"session":{…},"by_type":{…},"questions":N,"injected":{…},"abstention":{…}}`)
	cmd.Flags().IntVar(&workers, "workers", 0, "questions ingested at once (0: one per CPU)")
	cmd.Flags().BoolVar(&misses, "misses", false, "list the questions whose evidence rounds are not all in the top ten, with where each ranked")
	return cmd
}
