package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/reverie-ai/reverie/api"
)

// ErrNoAgent: no agent serves the data dir's control socket (no socket
// file, or a stale one nobody listens on).
var ErrNoAgent = errors.New("no agent is running on this data dir")

// localProbeTimeout bounds Local's first request.
const localProbeTimeout = 5 * time.Second

// Local returns a client of the agent running on dataDir, through its
// control socket (api.ControlSocket) with the control token
// (api.ControlTokenFile), after checking that the agent answers. It returns
// an error wrapping ErrNoAgent when none runs there.
func Local(ctx context.Context, dataDir string, opts ...Option) (*Client, error) {
	sock := filepath.Join(dataDir, api.ControlSocket)
	if _, err := os.Stat(sock); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (no %s)", ErrNoAgent, sock)
	}
	token, err := os.ReadFile(filepath.Join(dataDir, api.ControlTokenFile))
	if err != nil {
		return nil, fmt.Errorf("read the control token: %w", err)
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", sock)
		},
		IdleConnTimeout: 90 * time.Second,
		MaxIdleConns:    4,
	}}
	// The host name is not checked on the socket.
	c, err := New("http://localhost", strings.TrimSpace(string(token)), append([]Option{WithHTTPClient(hc)}, opts...)...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, localProbeTimeout)
	defer cancel()
	if _, err := c.Info(pctx); err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w (%s is stale)", ErrNoAgent, sock)
		}
		return nil, fmt.Errorf("reach the agent through %s: %w", sock, err)
	}
	return c, nil
}
