package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/eval"
)

// newEvalCmd is `reverie eval`: measurements of the assistant's parts.
func newEvalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate parts of the assistant on public benchmarks",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEvalLoCoMoCmd())
	return cmd
}

func newEvalLoCoMoCmd() *cobra.Command {
	var data, ks string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "locomo --data FILE",
		Short: "Memory recall@k on a LoCoMo-format file",
		Long: `Ingest each conversation of a LoCoMo-format JSON file into a fresh memory store, through
the same code path the assistant uses (one memory per dialogue turn, dated by its session),
ask every question and report recall@k = |gold ∩ top-k| / |gold|, averaged per category
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and overall over
categories 1–4. Uses the offline embedder; needs no network and no data dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if data == "" {
				return exitError{code: 2, err: fmt.Errorf("--data FILE is required")}
			}
			var k []int
			for _, s := range strings.Split(ks, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < 1 {
					return exitError{code: 2, err: fmt.Errorf("--k: %q is not a positive number", s)}
				}
				k = append(k, n)
			}
			f, err := os.Open(data)
			if err != nil {
				return fmt.Errorf("open LoCoMo data: %w", err)
			}
			defer f.Close()
			opts := eval.Options{K: k}
			if !asJSON {
				opts.Progress = func(done, total int) {
					fmt.Fprintf(cmd.ErrOrStderr(), "\rconversations %d/%d", done, total)
					if done == total {
						fmt.Fprintln(cmd.ErrOrStderr())
					}
				}
			}
			rep, err := eval.LoCoMo(cmd.Context(), f, opts)
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
	cmd.Flags().StringVar(&data, "data", "", "LoCoMo-format JSON file")
	cmd.Flags().StringVar(&ks, "k", "1,5,10,25", "recall cut-offs, comma-separated")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"overall":{"recall@1":…},"by_category":{…},"questions":N}`)
	return cmd
}
