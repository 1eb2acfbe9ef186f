package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

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
	var f evalFlags
	var fit bool
	cmd := &cobra.Command{
		Use:   "locomo --data FILE",
		Short: "Memory recall@k on a LoCoMo-format file",
		Long: `Ingest each conversation of a LoCoMo-format JSON file into a fresh memory store, through
the function every live channel's messages go through (memory.Ingest), as a group room where its two
people talk and the assistant listens: one episode per dialogue turn with only what a channel supplies
(the speaker's name, the words, the session's date; no image captions, no dataset ids), on the
conversation's own clock: the store's clock stands at each session's date while it is stored, as a
live room stores a message when it is said. Then ask every question an hour after the latest session
(LoCoMo's questions carry no date) and report recall@k = |gold ∩ top-k| / |gold|, averaged per category
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and overall over
categories 1–4. It also reports what the turn's recall would put into the prompt (the code a live turn
runs): memory lines and tokens a question, how many lines are excerpts of a long episode, how often every
evidence turn is among them, and how often their text holds the answer (of the questions whose answer an
evidence turn holds verbatim, compared without case and punctuation); --whole-memories shows every memory
whole, to compare. Uses the product's default embedding model, builtin/use-lite (the sentence encoder
built into the binary: no network, no data dir), each text embedded once in a run (--embedding-cache
FILE keeps the vectors across runs), unless --embedding names another: builtin/hashing (the offline
hashing embedder), BACKEND/MODEL of models.backends in the config file (an openai or ollama backend,
as for memory.embedding.model), or ollama/MODEL (OLLAMA_HOST, else 127.0.0.1:11434) or openai/MODEL
(OPENAI_BASE_URL, OPENAI_API_KEY) when no backend has that name.

With --cv, leave-one-conversation-out: for each conversation every retrieval weight is
chosen (coordinate search from a neutral start) on the other conversations and the held-out
one is scored with them; the figures pool the held-out questions of every fold.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.open(cmd, g, env, "LoCoMo", "conversations")
			if err != nil {
				return err
			}
			defer in.close()
			opts := eval.Options{K: in.k, Embedder: in.embedder, Progress: in.progress, Whole: f.whole}
			convs, err := eval.ParseLoCoMo(in.file)
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
			if f.cv {
				rep, err := eval.CrossValidate(cmd.Context(), convs, opts)
				if err != nil {
					return err
				}
				return f.print(cmd, rep)
			}
			rep, err := eval.Run(cmd.Context(), convs, opts)
			if err != nil {
				return err
			}
			return f.print(cmd, rep)
		},
	}
	f.register(cmd, "LoCoMo-format JSON file",
		"cross-validate: choose the weights on the other conversations, score each held-out one",
		`print one JSON object: {"overall":{"recall@1":…},"by_category":{…},"questions":N,"injected":{…}}`)
	cmd.Flags().BoolVar(&fit, "fit", false, "choose the weights on all the conversations and print them as JSON (for memory.DefaultTuning)")
	return cmd
}

// evalFlags are the flags every `reverie eval` dataset command takes.
type evalFlags struct {
	data, ks, embedding string
	embeddingCache      string
	dims                int
	asJSON, cv, whole   bool
}

func (f *evalFlags) register(cmd *cobra.Command, dataHelp, cvHelp, jsonHelp string) {
	cmd.Flags().StringVar(&f.data, "data", "", dataHelp)
	cmd.Flags().StringVar(&f.ks, "k", "1,5,10,25", "recall cut-offs, comma-separated")
	cmd.Flags().StringVar(&f.embedding, "embedding", "", "embedding model BACKEND/MODEL instead of the built-in sentence encoder (builtin/use-lite); builtin/hashing is the offline hashing embedder")
	cmd.Flags().IntVar(&f.dims, "embedding-dimensions", 0, "vector size to ask the --embedding model for (0: its own, asked with one call)")
	cmd.Flags().StringVar(&f.embeddingCache, "embedding-cache", "", "keep the embedding model's vectors in this SQLite file across runs (by model and text), instead of for this run only")
	cmd.Flags().BoolVar(&f.cv, "cv", false, cvHelp)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, jsonHelp)
	cmd.Flags().BoolVar(&f.whole, "whole-memories", false, "inject every recalled memory whole, as before long episodes were cut to excerpts (to measure the excerpts against)")
}

// evalInput is what the flags resolve to: the open data file (the caller
// closes it), the cut-offs, the embedding model (--embedding, else
// eval.DefaultEmbedder's) and the progress line (nil with --json).
type evalInput struct {
	file     *os.File
	k        []int
	embedder embed.Embedder
	cache    io.Closer // the model's vectors, by text, for this run (nil: none kept)
	progress func(done, total int)
}

// close closes the data file and the run's vector cache.
func (in evalInput) close() {
	in.file.Close()
	if in.cache != nil {
		in.cache.Close()
	}
}

// open checks the flags and opens the dataset; what names the dataset in
// errors, unit what the progress line counts.
func (f *evalFlags) open(cmd *cobra.Command, g *globalFlags, env []string, what, unit string) (evalInput, error) {
	if f.data == "" {
		return evalInput{}, exitError{code: 2, err: fmt.Errorf("--data FILE is required")}
	}
	k, err := parseKs(f.ks)
	if err != nil {
		return evalInput{}, err
	}
	in := evalInput{k: k}
	if f.embedding == "" {
		if f.dims != 0 {
			return evalInput{}, exitError{code: 2, err: fmt.Errorf("--embedding-dimensions needs --embedding (%s has %d)", config.EmbeddingBuiltinUSELite, config.EmbeddingBuiltinDimensions)}
		}
		if in.embedder, in.cache, err = eval.DefaultEmbedder(cmd.Context(), f.embeddingCache); err != nil {
			return evalInput{}, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "embedding model %s (%d dimensions)\n", config.EmbeddingBuiltinUSELite, in.embedder.Dimensions())
	} else if in.embedder, in.cache, err = evalEmbedder(cmd, g, env, f.embedding, f.dims, f.embeddingCache); err != nil {
		return evalInput{}, err
	}
	if !f.asJSON {
		in.progress = func(done, total int) {
			fmt.Fprintf(cmd.ErrOrStderr(), "\r%s %d/%d", unit, done, total)
			if done == total {
				fmt.Fprintln(cmd.ErrOrStderr())
			}
		}
	}
	if in.file, err = os.Open(f.data); err != nil {
		if in.cache != nil {
			in.cache.Close()
		}
		return evalInput{}, fmt.Errorf("open %s data: %w", what, err)
	}
	return in, nil
}

// evalReport is a report of any dataset.
type evalReport interface {
	MarshalJSON() ([]byte, error)
	WriteTable(w io.Writer) error
}

// print writes rep as one JSON line (--json) or as tables.
func (f *evalFlags) print(cmd *cobra.Command, rep evalReport) error {
	if !f.asJSON {
		return rep.WriteTable(cmd.OutOrStdout())
	}
	b, err := rep.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return err
}

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

// evalEmbedder builds the --embedding model. The config file is read when
// there is one (for models.backends); none is needed for ollama/MODEL and
// openai/MODEL. The model is asked for each text once in a run: its vectors
// are kept by text (embed.Cached, in a database of this run's memory, or in
// the file cachePath names to keep them across runs; the caller closes it),
// so --cv, which asks every question again for each weight it tries, sends
// each question to the model once. builtin/hashing computes a vector faster
// than a cache finds it: nothing is kept (nil closer).
func evalEmbedder(cmd *cobra.Command, g *globalFlags, env []string, ref string, dims int, cachePath string) (embed.Embedder, io.Closer, error) {
	models := config.ModelsConfig{}
	if path, err := g.configPath(env); err == nil {
		if _, err := os.Stat(path); err == nil {
			cfg, err := loadConfig(path, env)
			if err != nil {
				return nil, nil, err
			}
			models = cfg.Models
		}
	}
	b, model, err := app.ResolveEmbeddingBackend(models, ref, env)
	if err != nil {
		return nil, nil, exitError{code: 2, err: fmt.Errorf("--embedding: %w", err)}
	}
	e, err := app.NewEmbeddingModel(cmd.Context(), b, ref, model, dims, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedding: %w", err)
	}
	if b.Kind == config.EmbeddingBuiltin && ref == config.EmbeddingBuiltinHashing {
		if cachePath != "" {
			return nil, nil, exitError{code: 2, err: fmt.Errorf("--embedding-cache: %s keeps nothing (it computes a vector faster than a cache finds it)", ref)}
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "embedding model %s (%d dimensions)\n", ref, e.Dimensions())
		return e, nil, nil
	}
	cached, closer, err := eval.CacheVectors(cmd.Context(), e, cachePath)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedding: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "embedding model %s (%d dimensions)\n", ref, e.Dimensions())
	return cached, closer, nil
}
