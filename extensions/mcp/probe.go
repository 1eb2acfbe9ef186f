package mcp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Probe starts every enabled server of cfg once (in parallel, each within
// its start_timeout), lists its tools and stops it again: what `reverie
// doctor` reports. A server that does not come up is StateDown with the
// reason. cfg is validated first; its error is a configuration error.
func Probe(ctx context.Context, cfg Config, dataDir string) ([]ServerStatus, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	impl := &sdk.Implementation{Name: "reverie-doctor", Version: version}
	log := slog.New(slog.DiscardHandler)
	var out []ServerStatus
	for _, name := range cfg.names() {
		if sc := cfg.Servers[name]; sc.on() {
			out = append(out, ServerStatus{Name: name})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			s := newServer(out[i].Name, cfg.Servers[out[i].Name], dataDir, log, impl, time.Now)
			cs, tools, err := s.connect(ctx)
			st := &out[i]
			st.Since = time.Now()
			if err != nil {
				st.State, st.Err = StateDown, err.Error()
				return
			}
			st.State, st.Tools = StateUp, names(tools)
			_ = cs.Close()
		})
	}
	wg.Wait()
	return out, nil
}

// ParseConfig is the zero-value-safe configuration with defaults, for
// decoding the `mcp:` section outside the agent (reverie doctor).
func ParseConfig() Config { return defaultConfig() }
