package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// healthTimeout bounds `reverie health`'s request.
const healthTimeout = 5 * time.Second

// newHealthCmd is `reverie health`: GET /healthz of a running agent, exit 0
// when it answers 200 and 1 otherwise — a container's HEALTHCHECK (the
// image has no curl) or a monitoring script's probe.
func newHealthCmd() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that a running agent answers /healthz (exit 0) or not (exit 1)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), healthTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return fmt.Errorf("--url %q: %w", url, err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("not healthy: %w", err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("not healthy: %s answered %s %s", url, res.Status, strings.TrimSpace(string(body)))
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSpace(string(body)))
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8420/healthz", "the health endpoint to ask")
	return cmd
}
