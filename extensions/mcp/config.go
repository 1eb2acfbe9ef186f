package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// Defaults of a server's settings.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultStartTimeout = 30 * time.Second
)

// Config is the `mcp:` section.
//
//	mcp:
//	  servers:
//	    everything:
//	      command: npx
//	      args: ["-y", "@modelcontextprotocol/server-everything"]
//	      env: {API_KEY: {env: EVERYTHING_KEY}}
//	      deny: [get-env]
//	    notes:
//	      url: https://notes.example.com/mcp
//	      headers: {Authorization: {file: secrets/notes_auth}}
//	      timeout: 2m
//	  serve:
//	    http: true
type Config struct {
	// Servers are the MCP servers whose tools the assistant uses, by name
	// (the "<server>" of "<server>__<tool>").
	Servers map[string]ServerConfig `yaml:"servers"`
	// Serve configures Reverie's own MCP server.
	Serve ServeConfig `yaml:"serve"`
}

// ServeConfig configures Reverie's own MCP server.
type ServeConfig struct {
	// HTTP serves it over streamable HTTP at /mcp on the web listener,
	// behind the web token (default true; needs the web channel).
	HTTP bool `yaml:"http"`
}

// ServerConfig is one MCP server: a command (stdio) or a URL (streamable
// HTTP).
type ServerConfig struct {
	// Command and Args start a stdio server. The process gets a small
	// default environment (PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG,
	// TMPDIR) plus Env: never Reverie's own secrets.
	Command string                      `yaml:"command"`
	Args    []string                    `yaml:"args"`
	Env     map[string]extension.Secret `yaml:"env"`
	// Dir is the working directory of the command (default: the data dir).
	Dir string `yaml:"dir"`
	// URL is a streamable HTTP endpoint; Headers are sent with every
	// request (values are secrets: {env: NAME}, {file: path} or inline).
	URL     string                      `yaml:"url"`
	Headers map[string]extension.Secret `yaml:"headers"`
	// Enabled switches the server off when false.
	Enabled *bool `yaml:"enabled"`
	// Allow limits the tools offered to these MCP tool names (empty: all);
	// Deny takes tools away.
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
	// Timeout bounds each tool call (default 60s).
	Timeout time.Duration `yaml:"timeout"`
	// StartTimeout bounds starting the server and its first tools/list
	// (default 30s).
	StartTimeout time.Duration `yaml:"start_timeout"`
}

// on reports whether the server is enabled.
func (s ServerConfig) on() bool { return s.Enabled == nil || *s.Enabled }

// offers reports whether the MCP tool called name passes Allow and Deny.
func (s ServerConfig) offers(name string) bool {
	return (len(s.Allow) == 0 || slices.Contains(s.Allow, name)) && !slices.Contains(s.Deny, name)
}

// secrets are the server's env and header values.
func (s ServerConfig) secrets() []extension.Secret {
	var out []extension.Secret
	for _, v := range s.Env {
		out = append(out, v)
	}
	for _, v := range s.Headers {
		out = append(out, v)
	}
	return out
}

func defaultConfig() Config {
	return Config{Serve: ServeConfig{HTTP: true}}
}

// serverName is what a server may be called: it prefixes tool names.
var serverName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9-]+(_[a-zA-Z0-9-]+)*$`) })

// validate checks the section and fills in defaults.
func (c *Config) validate() error {
	var errs []error
	for _, name := range c.names() {
		s := c.Servers[name]
		key := "mcp.servers." + name
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
		}
		if !serverName().MatchString(name) || len(name) > 32 {
			bad("a server name is 1-32 letters, digits, '-' and single '_' (it prefixes the tool names as <server>__<tool>)")
			continue
		}
		switch {
		case s.Command == "" && s.URL == "":
			bad("set command (a stdio server) or url (a streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			bad("set command or url, not both")
		case s.URL != "":
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("url %q: want an http:// or https:// address", s.URL)
			}
			if len(s.Env) > 0 || len(s.Args) > 0 || s.Dir != "" {
				bad("env, args and dir apply to a command, not to a url")
			}
		case len(s.Headers) > 0:
			bad("headers apply to a url, not to a command")
		}
		if s.Timeout < 0 || s.StartTimeout < 0 {
			bad("timeout and start_timeout must not be negative")
		}
		if s.Timeout == 0 {
			s.Timeout = DefaultTimeout
		}
		if s.StartTimeout == 0 {
			s.StartTimeout = DefaultStartTimeout
		}
		for _, e := range append(slices.Clone(s.Allow), s.Deny...) {
			if strings.TrimSpace(e) == "" {
				bad("allow and deny list tool names; an entry is empty")
				break
			}
		}
		c.Servers[name] = s
	}
	return errors.Join(errs...)
}

// names returns the server names, sorted.
func (c *Config) names() []string {
	out := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
