package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// ID is the extension's id and configuration section.
const ID = "mcp"

// version is what Reverie reports as its MCP implementation version.
const version = "1"

func init() {
	extension.Register(extension.Info{
		ID:          ID,
		New:         func() extension.Extension { return new(MCP) },
		Description: "MCP: tools of MCP servers for the assistant; Reverie's memory, pulse and reminders for MCP clients (/mcp)",
	})
}

// MCP is the extension.
type MCP struct {
	cfg     Config
	log     *slog.Logger
	host    extension.Host
	servers []*server
	httpMCP *httpServer
}

// Init decodes the `mcp:` section and prepares a supervisor per enabled
// server (they start in Run).
func (m *MCP) Init(_ context.Context, host extension.Host) error {
	cfg, err := decodeConfig(host.DecodeConfig)
	if err != nil {
		return err
	}
	m.cfg = cfg
	m.host, m.log = host, host.Logger()
	impl := &sdk.Implementation{Name: "reverie", Version: version}
	for _, name := range m.cfg.names() {
		sc := m.cfg.Servers[name]
		if !sc.on() {
			continue
		}
		s := newServer(name, sc, host.DataDir(), m.log, impl, host.Now)
		s.secret = host.RegisterSecret
		// Known now, redacted from the start; one that does not resolve
		// keeps the server down, saying why, without stopping the agent.
		for _, sec := range sc.secrets() {
			if v, err := sec.Resolve(host.DataDir()); err == nil {
				host.RegisterSecret(v)
			}
		}
		m.servers = append(m.servers, s)
	}
	if m.cfg.Serve.HTTP {
		m.httpMCP = newHTTPServer(api.ServicesFrom(host), host.DataDir(), m.log)
	}
	return nil
}

// CheckConfig decodes and validates the section as Init does (for
// reverie doctor, which also starts each server once: see Probe).
func (m *MCP) CheckConfig(decode func(v any) error) error {
	_, err := decodeConfig(decode)
	return err
}

func decodeConfig(decode func(v any) error) (Config, error) {
	cfg := defaultConfig()
	if err := decode(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", extension.ErrInvalidConfig, err)
	}
	return cfg, nil
}

// Run supervises every configured server until ctx ends.
func (m *MCP) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() { _ = s.Run(ctx) })
	}
	if m.httpMCP != nil {
		wg.Go(func() { m.httpMCP.run(ctx) })
	}
	wg.Wait()
	return nil
}

// CurrentTools are the tools of the servers that are up now.
func (m *MCP) CurrentTools() []tool.Tool {
	var out []tool.Tool
	for _, s := range m.servers {
		out = append(out, s.currentTools()...)
	}
	return out
}

// Servers reports every configured, enabled server.
func (m *MCP) Servers() []ServerStatus {
	out := make([]ServerStatus, len(m.servers))
	for i, s := range m.servers {
		out[i], _ = s.status()
	}
	return out
}

// WaitStarted waits until no server is still starting, or ctx ends, and
// names the servers that are not up (extension.StartWaiter).
func (m *MCP) WaitStarted(ctx context.Context) []string {
	var seen []ServerStatus // what the wait saw last: one moment's statuses
	_ = m.WaitServers(ctx, func(sts []ServerStatus) bool {
		seen = sts
		return !slices.ContainsFunc(sts, func(s ServerStatus) bool { return s.State == StateStarting })
	})
	var out []string
	for _, s := range seen {
		if s.State != StateUp {
			why := string(s.State)
			if s.Err != "" {
				why += ": " + s.Err
			}
			out = append(out, fmt.Sprintf("MCP server %s is not up (%s); its tools are missing from this exchange", s.Name, why))
		}
	}
	return out
}

// WaitServers waits until ok holds for the servers' statuses, or ctx
// ends.
func (m *MCP) WaitServers(ctx context.Context, ok func([]ServerStatus) bool) error {
	for {
		sts := make([]ServerStatus, len(m.servers))
		changed := make([]<-chan struct{}, len(m.servers))
		for i, s := range m.servers {
			sts[i], changed[i] = s.status()
		}
		if ok(sts) {
			return nil
		}
		// Any change wakes the wait: watch them all until one fires.
		wake := make(chan struct{}, 1)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for _, c := range changed {
			wg.Go(func() {
				select {
				case <-c:
					select {
					case wake <- struct{}{}:
					default:
					}
				case <-stop:
				}
			})
		}
		select {
		case <-wake:
		case <-ctx.Done():
		}
		close(stop)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Health fails while a server is not up, saying which and why.
func (m *MCP) Health(context.Context) error {
	var down []string
	for _, st := range m.Servers() {
		switch st.State {
		case StateUp:
		case StateDown:
			d := fmt.Sprintf("%s is down since %s: %s", st.Name, st.Since.Format(time.TimeOnly), st.Err)
			if !st.RetryAt.IsZero() {
				d += fmt.Sprintf(" (restart at %s)", st.RetryAt.Format(time.TimeOnly))
			}
			down = append(down, d)
		default:
			down = append(down, fmt.Sprintf("%s is %s", st.Name, st.State))
		}
	}
	if len(down) > 0 {
		return errors.New("MCP server " + strings.Join(down, "; "))
	}
	return nil
}

// Diagnose starts every configured MCP server once and lists its tools
// (`reverie doctor`, extension.Diagnoser): it fails naming the servers
// that do not come up, and says how many tools each other one offers.
func (m *MCP) Diagnose(ctx context.Context, decode func(v any) error, dataDir string) (string, error) {
	cfg, err := decodeConfig(decode)
	if err != nil {
		return "", err
	}
	sts, err := Probe(ctx, cfg, dataDir)
	if err != nil {
		return "", err
	}
	if len(sts) == 0 {
		return "no MCP servers configured", nil
	}
	var up, down []string
	for _, st := range sts {
		if st.State != StateUp {
			down = append(down, fmt.Sprintf("server %s is down: %s", st.Name, st.Err))
			continue
		}
		up = append(up, fmt.Sprintf("server %s is up with %d tool(s)", st.Name, len(st.Tools)))
	}
	if len(down) > 0 {
		return "", errors.New(strings.Join(append(down, up...), "; "))
	}
	return strings.Join(up, "; "), nil
}

// HTTPEndpoints serves Reverie's MCP server at /mcp (mcp.serve.http).
func (m *MCP) HTTPEndpoints() []extension.HTTPEndpoint {
	if m.httpMCP == nil {
		return nil
	}
	return []extension.HTTPEndpoint{{Path: "/mcp", Handler: m.httpMCP}}
}

var (
	_ extension.Extension           = (*MCP)(nil)
	_ extension.ConfigChecker       = (*MCP)(nil)
	_ extension.Diagnoser           = (*MCP)(nil)
	_ extension.ServiceProvider     = (*MCP)(nil)
	_ extension.DynamicToolProvider = (*MCP)(nil)
	_ extension.HealthChecker       = (*MCP)(nil)
	_ extension.StartWaiter         = (*MCP)(nil)
	_ extension.HTTPProvider        = (*MCP)(nil)
)
