package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/eval"
)

func newEvalLongMemEvalCmd(g *globalFlags, env []string) *cobra.Command {
	var f evalFlags
	var workers int
	var misses bool
	var repeats int
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
without case and punctuation); --whole-memories shows every memory whole, to compare. Uses the built-in
sentence encoder (builtin/use-lite, the product's default) unless --embedding names another model (as
for reverie eval locomo: builtin/hashing is the offline hashing embedder).

With --cv, folds over the questions: every retrieval weight is chosen (coordinate search from a
neutral start) on the other folds and each fold is scored with them. --cv-repeats N repeats the
cross-validation over N partitions into folds (repeat 0 the one --cv uses alone, each further one
dealing every question type's questions to the folds in an order its own salted hash of the ids
sets), on the one ingested store, and reports per repeat the pooled round recall_all@10 and
recall_any@10, NDCG@10 and session recall_any@5, then their mean, standard deviation, least and
greatest value (with --json, "repeats" and "spread"); the other figures are repeat 0's.

With --misses, the report ends with every question whose evidence rounds are not all in the top ten:
per evidence round its haystack session, its rank among rounds, the ranks of its user message and of
the reply among episodes, how many rounds of its own session rank above it, and the start of the
message (with --json, under "misses").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("cv-repeats") && !f.cv {
				return exitError{code: 2, err: fmt.Errorf("--cv-repeats needs --cv")}
			}
			if repeats < 1 {
				return exitError{code: 2, err: fmt.Errorf("--cv-repeats: %d is not a positive number", repeats)}
			}
			in, err := f.open(cmd, g, env, "LongMemEval", "questions")
			if err != nil {
				return err
			}
			defer in.close()
			opts := eval.LMEOptions{K: in.k, Workers: workers, Embedder: in.embedder, Progress: in.progress, Misses: misses, Whole: f.whole, CVRepeats: repeats}
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
	cmd.Flags().IntVar(&repeats, "cv-repeats", 1, "with --cv: repeat the cross-validation over this many partitions into folds and report the spread")
	cmd.Flags().BoolVar(&misses, "misses", false, "list the questions whose evidence rounds are not all in the top ten, with where each ranked")
	return cmd
}
