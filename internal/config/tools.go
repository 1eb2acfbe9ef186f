package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/approval"
)

// ToolsConfig is the `tools:` section: limits and safety switches of the
// core tools.
type ToolsConfig struct {
	// Workspace is the directory the file and shell tools are confined to,
	// relative to the data dir unless absolute.
	Workspace string `yaml:"workspace"`
	// MaxFileBytes is the largest file the file tools read or write.
	MaxFileBytes int64           `yaml:"max_file_bytes"`
	Shell        ShellToolConfig `yaml:"shell"`
	Fetch        FetchToolConfig `yaml:"fetch"`
	Search       SearchConfig    `yaml:"search"`
	Browser      BrowserConfig   `yaml:"browser"`
	// Allow limits the main assistant's tools to these tool names and
	// "@category" entries (empty: every tool). Sub-sessions get theirs from
	// their mode and profile (workflow.profiles).
	Allow []string `yaml:"allow"`
	// Deny takes tools (names or "@category") away from the main
	// assistant, after Allow.
	Deny []string `yaml:"deny"`
	// Approval maps a tool name to when its calls wait for the user's
	// approval: never, always, untrusted or new_destinations (older names:
	// new_hosts, new_hosts_after_private, network, other_channels; see
	// internal/approval). Entries given are added to the defaults (same
	// tool: replaced).
	Approval map[string]string `yaml:"approval"`
	// ApprovalTimeout is how long a call waits for an answer before it
	// counts as denied.
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`
}

// ShellToolConfig configures execute_shell.
type ShellToolConfig struct {
	// Sandbox is auto (bubblewrap and Landlock, each when it works),
	// required (refuse to start when neither works) or off.
	Sandbox string `yaml:"sandbox"`
	// Network gives sandboxed commands network access.
	Network bool `yaml:"network"`
	// Timeout applies when the model gives none; MaxTimeout caps it.
	Timeout    time.Duration `yaml:"timeout"`
	MaxTimeout time.Duration `yaml:"max_timeout"`
	// MaxOutputBytes is how much merged output is kept (head and tail).
	MaxOutputBytes int `yaml:"max_output_bytes"`
	// Limits bound each command's resources.
	Limits ShellLimitsConfig `yaml:"limits"`
}

// ShellLimitsConfig is `tools.shell.limits`: what one command may consume;
// 0 is unlimited.
type ShellLimitsConfig struct {
	// Processes (and threads) at once: a pids cgroup when one can be
	// created, else RLIMIT_NPROC (not applied to root by the kernel).
	Processes int `yaml:"processes"`
	// Memory: a memory cgroup when one can be created, else the address
	// space of each process (RLIMIT_AS).
	Memory ByteSize `yaml:"memory"`
	// FileSize is the largest file a command may write (RLIMIT_FSIZE).
	FileSize ByteSize `yaml:"file_size"`
	// CPUSeconds is the CPU time of each process (RLIMIT_CPU).
	CPUSeconds int `yaml:"cpu_seconds"`
}

// ByteSize is a size in bytes, written as a number of bytes or with a
// binary unit: 512KiB, 256MiB, 1GiB, 1TiB (KB, MB, GB, K, M, G are read
// as the binary units too).
type ByteSize int64

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToLower(strings.TrimSpace(s[len(num):]))
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
		"g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}
	sh, ok := shift[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n < 0 {
		return fmt.Errorf("size %q: want bytes, or a number with KiB, MiB, GiB or TiB", s)
	}
	if n > math.MaxInt64>>sh {
		return fmt.Errorf("size %q is too large", s)
	}
	*b = ByteSize(n << sh)
	return nil
}

// FetchToolConfig configures fetch_url.
type FetchToolConfig struct {
	// AllowPrivate lets fetch_url reach loopback, private and link-local
	// addresses.
	AllowPrivate bool `yaml:"allow_private"`
	// AllowHosts lists host names, IPs or CIDR prefixes allowed even though
	// they are not public.
	AllowHosts []string      `yaml:"allow_hosts"`
	Timeout    time.Duration `yaml:"timeout"`
	MaxBytes   int           `yaml:"max_bytes"`
}

// BrowserConfig is `tools.browser`: the browser_* tools on a headless
// Chromium. They reach what fetch_url may (tools.fetch.allow_private and
// allow_hosts).
type BrowserConfig struct {
	// Enabled offers the browser tools when Chromium is found.
	Enabled bool `yaml:"enabled"`
	// Path is Chromium's executable; empty: chromium, chromium-browser,
	// google-chrome… in PATH.
	Path string `yaml:"path"`
	// Timeout bounds each browser call (an approval's wait excepted).
	Timeout time.Duration `yaml:"timeout"`
	// IdleTimeout closes a conversation's browser unused that long.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxBrowsers is how many browsers run at once.
	MaxBrowsers int `yaml:"max_browsers"`
	// MaxMemory bounds one browser's resident memory, all its processes,
	// while a call runs and after it.
	MaxMemory ByteSize `yaml:"max_memory"`
	// MaxDownload bounds one file a page downloads into the workspace; a
	// larger download is stopped and its file removed.
	MaxDownload ByteSize `yaml:"max_download"`
}

// SearchConfig configures search_web.
type SearchConfig struct {
	// SearXNGURL selects a SearXNG instance (JSON format enabled) instead of
	// DuckDuckGo.
	SearXNGURL string        `yaml:"searxng_url"`
	Timeout    time.Duration `yaml:"timeout"`
}

func defaultTools() ToolsConfig {
	return ToolsConfig{
		Workspace:    "workspace",
		MaxFileBytes: 10 << 20,
		Shell: ShellToolConfig{Sandbox: "auto", Timeout: time.Minute, MaxTimeout: 10 * time.Minute, MaxOutputBytes: 32 << 10,
			Limits: ShellLimitsConfig{Processes: 256, Memory: 1 << 30, FileSize: 256 << 20, CPUSeconds: 60}},
		Fetch:  FetchToolConfig{AllowHosts: []string{}, Timeout: 30 * time.Second, MaxBytes: 5 << 20},
		Allow:  []string{},
		Deny:   []string{},
		Search: SearchConfig{Timeout: 15 * time.Second},
		Browser: BrowserConfig{Enabled: true, Timeout: 30 * time.Second, IdleTimeout: 5 * time.Minute,
			MaxBrowsers: 2, MaxMemory: 1 << 30, MaxDownload: 100 << 20},
		Approval:        defaultApprovals(),
		ApprovalTimeout: approval.DefaultTimeout,
	}
}

func defaultApprovals() map[string]string {
	out := map[string]string{}
	for name, p := range approval.DefaultPolicies() {
		out[name] = string(p)
	}
	return out
}

func (c *Config) validateTools() error {
	t := c.Tools
	switch t.Shell.Sandbox {
	case "auto", "required", "off":
	default:
		return c.invalid("tools.shell.sandbox", "unknown value %q (want auto, required or off)", t.Shell.Sandbox)
	}
	checks := []struct {
		key string
		bad bool
		msg string
	}{
		{"tools.workspace", t.Workspace == "", "must not be empty"},
		{"tools.max_file_bytes", t.MaxFileBytes <= 0, "must be positive"},
		{"tools.shell.timeout", t.Shell.Timeout <= 0, "must be positive"},
		{"tools.shell.max_timeout", t.Shell.MaxTimeout < t.Shell.Timeout, "must not be less than timeout"},
		{"tools.shell.max_output_bytes", t.Shell.MaxOutputBytes <= 0, "must be positive"},
		{"tools.shell.limits.processes", t.Shell.Limits.Processes < 0, "must not be negative (0 is unlimited)"},
		{"tools.shell.limits.cpu_seconds", t.Shell.Limits.CPUSeconds < 0, "must not be negative (0 is unlimited)"},
		{"tools.fetch.timeout", t.Fetch.Timeout <= 0, "must be positive"},
		{"tools.fetch.max_bytes", t.Fetch.MaxBytes <= 0, "must be positive"},
		{"tools.search.timeout", t.Search.Timeout <= 0, "must be positive"},
		{"tools.browser.timeout", t.Browser.Timeout <= 0, "must be positive"},
		{"tools.browser.idle_timeout", t.Browser.IdleTimeout <= 0, "must be positive"},
		{"tools.browser.max_browsers", t.Browser.MaxBrowsers <= 0, "must be positive"},
		{"tools.browser.max_memory", t.Browser.MaxMemory <= 0, "must be positive"},
		{"tools.browser.max_download", t.Browser.MaxDownload <= 0, "must be positive"},
		{"tools.approval_timeout", t.ApprovalTimeout <= 0, "must be positive"},
	}
	for _, ch := range checks {
		if ch.bad {
			return c.invalid(ch.key, "%s", ch.msg)
		}
	}
	for name, p := range t.Approval {
		if !approval.Policy(p).Valid() {
			return c.invalid("tools.approval."+name, "unknown policy %q (want one of %s)", p, approval.PolicyNames())
		}
	}
	for key, list := range map[string][]string{"tools.allow": t.Allow, "tools.deny": t.Deny} {
		for _, e := range list {
			if strings.TrimSpace(strings.TrimPrefix(e, "@")) == "" {
				return c.invalid(key, "empty entry (want a tool name or \"@category\")")
			}
		}
	}
	return nil
}
