package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extensions/web"
	"github.com/reverie-ai/reverie/internal/config"
)

// healthTimeout bounds `reverie health`'s request.
const healthTimeout = 5 * time.Second

// newHealthCmd is `reverie health`: GET /healthz of a running agent, exit 0
// when it answers 200 and 1 otherwise — a container's HEALTHCHECK (the
// image has no curl) or a monitoring script's probe. Without --url it asks
// the address the data dir's configuration listens on (web.listen, with
// its environment overrides), as the supervisor does.
func newHealthCmd(g *globalFlags, env []string) *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that a running agent answers /healthz (exit 0) or not (exit 1)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				u, err := configuredHealthURL(g, env)
				if err != nil {
					return err
				}
				url = u
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), healthTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return fmt.Errorf("--url %q: %w", url, err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return unhealthy(url, err)
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
	cmd.Flags().StringVar(&url, "url", "", "the health endpoint to ask (default: http://<web.listen>/healthz of the data dir's configuration, http://127.0.0.1:8420/healthz unless it says otherwise)")
	return cmd
}

// unhealthyError is a probe that got no answer, in one sentence rather
// than the transport's chain ("Get …: dial tcp …: connect: …"), which it
// unwraps to.
type unhealthyError struct {
	url, why string
	err      error
}

func (e unhealthyError) Error() string { return "not healthy: " + e.url + " " + e.why }
func (e unhealthyError) Unwrap() error { return e.err }

// unhealthy is the error of a probe of url that failed with err.
func unhealthy(url string, err error) error {
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return unhealthyError{url: url, why: "does not answer: nothing listens there (the connection was refused)", err: err}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &op) && op.Timeout()):
		return unhealthyError{url: url, why: fmt.Sprintf("did not answer within %s", healthTimeout), err: err}
	case errors.As(err, &op) && op.Op == "dial":
		return unhealthyError{url: url, why: fmt.Sprintf("cannot be reached (%v)", op.Err), err: err}
	}
	return fmt.Errorf("not healthy: %w", err)
}

// configuredHealthURL is the health endpoint the data dir's configuration
// (or --config) makes the web channel listen on. It reads the
// configuration only: no data dir is created.
func configuredHealthURL(g *globalFlags, env []string) (string, error) {
	path, err := g.configPath(env)
	if err != nil {
		return "", err
	}
	cfg, err := loadConfig(path, env)
	if err != nil {
		return "", err
	}
	u, err := webHealthURL(cfg)
	if err != nil {
		return "", fmt.Errorf("%w: give the address to ask with --url", err)
	}
	return u, nil
}

// errNoHealthAddress is returned by webHealthURL when the configuration
// names no address /healthz can be asked at.
var errNoHealthAddress = errors.New("no health address")

// webHealthURL is the /healthz address of the web channel cfg configures:
// web.listen, or the default. A listener on every address (0.0.0.0, ::) is
// asked on the loopback address. It wraps errNoHealthAddress when the web
// channel is off or picks its port at start (port 0).
func webHealthURL(cfg *config.Config) (string, error) {
	if !cfg.ExtensionEnabled("web", true) {
		return "", fmt.Errorf("%w: the web channel is off in the configuration", errNoHealthAddress)
	}
	wc := web.Config{Listen: web.DefaultListen}
	if err := cfg.DecodeExtension("web", &wc); err != nil {
		return "", fmt.Errorf("read the web channel's configuration: %w", err)
	}
	host, port, err := net.SplitHostPort(wc.Listen)
	if err != nil {
		return "", fmt.Errorf("web.listen %q: %w", wc.Listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("%w: web.listen %q picks its port at start", errNoHealthAddress, wc.Listen)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
