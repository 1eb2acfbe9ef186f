package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/eval"
)

// newEvalCmd is `reverie eval`: measurements of the assistant's parts.
func newEvalCmd(g *globalFlags, env []string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate parts of the assistant on public benchmarks",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEvalLoCoMoCmd(g, env), newEvalLongMemEvalCmd(g, env))
	return cmd
}

func newEvalLoCoMoCmd(g *globalFlags, env []string) *cobra.Command {
	var data, ks, embedding string
	var dims int
	var asJSON, cv, fit bool
	cmd := &cobra.Command{
		Use:   "locomo --data FILE",
		Short: "Memory recall@k on a LoCoMo-format file",
		Long: `Ingest each conversation of a LoCoMo-format JSON file into a fresh memory store, through
the function every live channel's messages go through (memory.Ingest), as a group room where its two
people talk and the assistant listens: one episode per dialogue turn with only what a channel supplies
(the speaker's name, the words, the session's date; no image captions, no dataset ids). Then
ask every question and report recall@k = |gold ∩ top-k| / |gold|, averaged per category
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and overall over
categories 1–4. Uses the offline embedder (no network, no data dir) unless --embedding names a model:
BACKEND/MODEL of models.backends in the config file (an openai or ollama backend, as for
memory.embedding.model), or ollama/MODEL (OLLAMA_HOST, else 127.0.0.1:11434) or openai/MODEL
(OPENAI_BASE_URL, OPENAI_API_KEY) when no backend has that name.

With --cv, leave-one-conversation-out: for each conversation every retrieval weight is
chosen (coordinate search from a neutral start) on the other conversations and the held-out
one is scored with them; the figures pool the held-out questions of every fold.`,
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
				return fmt.Errorf("open LoCoMo data: %w", err)
			}
			defer f.Close()
			opts := eval.Options{K: k}
			if embedding != "" {
				e, err := evalEmbedder(cmd, g, env, embedding, dims)
				if err != nil {
					return err
				}
				opts.Embedder = e
			}
			if !asJSON {
				opts.Progress = func(done, total int) {
					fmt.Fprintf(cmd.ErrOrStderr(), "\rconversations %d/%d", done, total)
					if done == total {
						fmt.Fprintln(cmd.ErrOrStderr())
					}
				}
			}
			convs, err := eval.ParseLoCoMo(f)
			if err != nil {
				return err
			}
			if fit {
				t, score, err := eval.FitAll(cmd.Context(), convs, opts)
				if err != nil {
					return err
				}
				b, err := json.Marshal(struct {
					Recall10 float64            `json:"recall@10"`
					Tuning   map[string]float64 `json:"tuning"`
				}{score, eval.Knobs(t)})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return err
			}
			if cv {
				rep, err := eval.CrossValidate(cmd.Context(), convs, opts)
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
			}
			rep, err := eval.Run(cmd.Context(), convs, opts)
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
	cmd.Flags().StringVar(&embedding, "embedding", "", "embedding model BACKEND/MODEL instead of the offline embedder")
	cmd.Flags().IntVar(&dims, "embedding-dimensions", 0, "vector size to ask the --embedding model for (0: its own, asked with one call)")
	cmd.Flags().BoolVar(&cv, "cv", false, "cross-validate: choose the weights on the other conversations, score each held-out one")
	cmd.Flags().BoolVar(&fit, "fit", false, "choose the weights on all the conversations and print them as JSON (for memory.DefaultTuning)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"overall":{"recall@1":…},"by_category":{…},"questions":N}`)
	return cmd
}

// evalEmbedder builds the --embedding model. The config file is read when
// there is one (for models.backends); none is needed for ollama/MODEL and
// openai/MODEL.
func evalEmbedder(cmd *cobra.Command, g *globalFlags, env []string, ref string, dims int) (embed.Embedder, error) {
	models := config.ModelsConfig{}
	path := g.config
	if path == "" {
		if dir, err := g.dataDir(env); err == nil {
			path = filepath.Join(dir, "config.yaml")
		}
	}
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			cfg, err := loadConfig(path, env)
			if err != nil {
				return nil, err
			}
			models = cfg.Models
		}
	}
	b, model, err := app.ResolveEmbeddingBackend(models, ref, env)
	if err != nil {
		return nil, exitError{code: 2, err: fmt.Errorf("--embedding: %w", err)}
	}
	e, err := app.NewEmbeddingModel(cmd.Context(), b, ref, model, dims, 0)
	if err != nil {
		return nil, fmt.Errorf("--embedding: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "embedding model %s (%d dimensions)\n", ref, e.Dimensions())
	return e, nil
}
