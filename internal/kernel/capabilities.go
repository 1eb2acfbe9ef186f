package kernel

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// toolName is the name rule of tool.Tool.

// capabilities is the index of what the live extensions provide.
type capabilities struct {
	tools    []tool.Tool
	channels []extension.ChannelProvider
	byName   map[string]extension.ChannelProvider
	agents   []extension.AgentProvider
	jobs     []ScopedJob
	context  []extension.ContextProvider
	setup    map[string]extension.SetupProvider
	dynamic  []ownedDynamic
	// endpoints are the HTTPProviders' endpoints, by path.
	endpoints map[string]http.Handler
}

// ownedDynamic is a DynamicToolProvider and the id of its extension.
type ownedDynamic struct {
	id string
	p  extension.DynamicToolProvider
}

// index rebuilds the capability index from the extensions that are
// initialised, started or running. It is the one place where capabilities
// are detected. A capability method that panics fails its extension (and
// skips its dependents), which then contributes nothing.
func (k *Kernel) index() {
	k.mu.RLock()
	var live []*entry
	for _, e := range k.order {
		switch e.state {
		case StateInitialised, StateStarted, StateRunning:
			live = append(live, e)
		}
	}
	k.mu.RUnlock()

	caps := capabilities{byName: map[string]extension.ChannelProvider{}, setup: map[string]extension.SetupProvider{},
		endpoints: map[string]http.Handler{}}
	toolOwner := map[string]string{}
	agentOwner := map[string]string{}
	jobSeen := map[string]bool{}
	channelOwner := map[string]string{}
	type prioritised struct {
		p        extension.ContextProvider
		priority int
	}
	var ctxProviders []prioritised
	for _, e := range live {
		id := e.info.ID
		var (
			tools    []tool.Tool
			channel  string
			agent    extension.AgentDescriptor
			jobs     []extension.Job
			priority int
			routes   []extension.HTTPEndpoint
		)
		err := safely(func() error {
			if p, ok := e.ext.(extension.ToolProvider); ok {
				tools = p.Tools()
			}
			if p, ok := e.ext.(extension.ChannelProvider); ok {
				channel = p.ChannelName()
			}
			if p, ok := e.ext.(extension.AgentProvider); ok {
				agent = p.AgentDescriptor()
			}
			if p, ok := e.ext.(extension.SchedulerProvider); ok {
				jobs = p.ScheduledJobs()
			}
			if p, ok := e.ext.(extension.ContextProvider); ok {
				priority = p.ContextPriority()
			}
			if p, ok := e.ext.(extension.HTTPProvider); ok {
				routes = p.HTTPEndpoints()
			}
			return nil
		})
		if err != nil {
			k.mu.Lock()
			k.fail(e, fmt.Errorf("detect capabilities: %w", err))
			k.skipDependents(e)
			k.mu.Unlock()
			continue
		}

		for _, t := range tools {
			if t == nil {
				k.log.Error("nil tool dropped", "ext", id)
				continue
			}
			name := t.Name()
			if tool.CheckName(name) != nil {
				k.log.Error("tool with an invalid name dropped", "ext", id, "tool", name)
				continue
			}
			if owner, dup := toolOwner[name]; dup {
				k.log.Error("duplicate tool name: later one dropped", "tool", name, "kept", owner, "dropped", id)
				continue
			}
			toolOwner[name] = id
			caps.tools = append(caps.tools, t)
		}
		if p, ok := e.ext.(extension.ChannelProvider); ok {
			switch owner, dup := channelOwner[channel]; {
			case channel == "":
				k.log.Error("channel without a name dropped", "ext", id)
			case dup:
				k.log.Error("duplicate channel name: later one dropped", "channel", channel, "kept", owner, "dropped", id)
			default:
				channelOwner[channel] = id
				caps.channels = append(caps.channels, p)
				caps.byName[channel] = p
			}
		}
		if p, ok := e.ext.(extension.AgentProvider); ok {
			switch owner, dup := agentOwner[agent.Name]; {
			case agent.Name == "":
				k.log.Error("agent without a name dropped", "ext", id)
			case dup:
				k.log.Error("duplicate agent name: later one dropped", "agent", agent.Name, "kept", owner, "dropped", id)
			default:
				agentOwner[agent.Name] = id
				caps.agents = append(caps.agents, p)
			}
		}
		for _, j := range jobs {
			if j.Name == "" || (j.Run == nil && j.Report == nil) {
				k.log.Error("scheduled job without a name or function dropped", "ext", id, "job", j.Name)
				continue
			}
			if jobSeen[id+"/"+j.Name] {
				k.log.Error("duplicate scheduled job: later one dropped", "ext", id, "job", j.Name)
				continue
			}
			jobSeen[id+"/"+j.Name] = true
			caps.jobs = append(caps.jobs, ScopedJob{Extension: id, Job: j})
		}
		if p, ok := e.ext.(extension.ContextProvider); ok {
			ctxProviders = append(ctxProviders, prioritised{p, priority})
		}
		if p, ok := e.ext.(extension.SetupProvider); ok {
			caps.setup[id] = p
		}
		if p, ok := e.ext.(extension.DynamicToolProvider); ok {
			caps.dynamic = append(caps.dynamic, ownedDynamic{id, p})
		}
		for _, r := range routes {
			if err := checkEndpointPath(r.Path); err != nil || r.Handler == nil {
				k.log.Error("HTTP endpoint dropped", "ext", id, "path", r.Path, "err", err)
				continue
			}
			if _, dup := caps.endpoints[r.Path]; dup {
				k.log.Error("duplicate HTTP endpoint: later one dropped", "ext", id, "path", r.Path)
				continue
			}
			caps.endpoints[r.Path] = r.Handler
		}
	}
	slices.SortStableFunc(ctxProviders, func(a, b prioritised) int { return a.priority - b.priority })
	for _, p := range ctxProviders {
		caps.context = append(caps.context, p.p)
	}

	k.mu.Lock()
	k.caps = caps
	k.mu.Unlock()
}

// Tools returns the tools of every live ToolProvider, in dependency order.
// Of two tools with the same name only the first is kept (the other is
// logged as an error).
func (k *Kernel) Tools() []tool.Tool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Clone(k.caps.tools)
}

// DynamicTools returns the tools every live DynamicToolProvider offers
// now, in dependency order. Tools with an invalid name, and a second tool
// of the same name, are dropped; a provider that panics contributes
// nothing this time (the panic is logged).
func (k *Kernel) DynamicTools() []tool.Tool {
	k.mu.RLock()
	providers := k.caps.dynamic
	k.mu.RUnlock()
	if len(providers) == 0 {
		return nil
	}
	var out []tool.Tool
	seen := map[string]bool{}
	for _, d := range providers {
		var ts []tool.Tool
		if err := safely(func() error { ts = d.p.CurrentTools(); return nil }); err != nil {
			k.log.Error("dynamic tools not offered", "ext", d.id, "err", err)
			continue
		}
		for _, t := range ts {
			if t == nil || tool.CheckName(t.Name()) != nil || seen[t.Name()] {
				continue
			}
			seen[t.Name()] = true
			out = append(out, t)
		}
	}
	return out
}

// Endpoint returns the HTTP handler an HTTPProvider serves for path: the
// endpoint whose path is path itself or a parent of it.
func (k *Kernel) Endpoint(path string) (http.Handler, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.caps.endpoints) == 0 {
		return nil, false
	}
	for p := path; p != "" && p != "/"; p = p[:strings.LastIndexByte(p, '/')] {
		if h, ok := k.caps.endpoints[p]; ok {
			return h, true
		}
	}
	return nil, false
}

// checkEndpointPath refuses paths an HTTPProvider may not serve.
func checkEndpointPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/"):
		return fmt.Errorf("path %q: want an absolute path without a trailing slash", p)
	case p == "/api" || strings.HasPrefix(p, "/api/") || p == "/healthz":
		return fmt.Errorf("path %q is reserved for the web channel", p)
	}
	return nil
}

// Channels returns every live channel, in dependency order.
func (k *Kernel) Channels() []extension.ChannelProvider {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Clone(k.caps.channels)
}

// Channel returns the live channel named name ("web", "cli", …).
func (k *Kernel) Channel(name string) (extension.ChannelProvider, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	c, ok := k.caps.byName[name]
	return c, ok
}

// Agents returns every live AgentProvider, in dependency order.
func (k *Kernel) Agents() []extension.AgentProvider {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Clone(k.caps.agents)
}

// Jobs returns the scheduled jobs of every live SchedulerProvider with the
// id of the extension providing each. Jobs without a name or function, and
// a second job of the same name from one extension, are logged and dropped.
func (k *Kernel) Jobs() []ScopedJob {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Clone(k.caps.jobs)
}

// ContextProviders returns every live ContextProvider in ascending
// ContextPriority order (dependency order among equal priorities).
func (k *Kernel) ContextProviders() []extension.ContextProvider {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Clone(k.caps.context)
}

// SetupProviders returns every live SetupProvider by extension id.
func (k *Kernel) SetupProviders() map[string]extension.SetupProvider {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return maps.Clone(k.caps.setup)
}
