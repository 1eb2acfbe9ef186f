// Package tools builds Reverie's core tools: read_file, write_file and
// apply_patch confined to a workspace directory, execute_shell (sandboxed
// with bubblewrap and Landlock when available), fetch_url behind an SSRF
// guard, and search_web. The work is done by the subpackages (workspace,
// files, patch, shell, web); this package validates configuration and turns
// them into tool.Tool values with tool.New, so every argument schema is
// derived from the Go argument struct the handler receives.
//
// Tools are safe for concurrent use. A tool's failure is returned as an
// error; the tool loop reports it to the model.
package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/reverie-ai/reverie/internal/tools/browser"
	"github.com/reverie-ai/reverie/internal/tools/files"
	"github.com/reverie-ai/reverie/internal/tools/shell"
	"github.com/reverie-ai/reverie/internal/tools/web"
	"github.com/reverie-ai/reverie/internal/tools/workspace"
	"github.com/reverie-ai/reverie/tool"
)

// Config configures the core tools. Zero values take the documented
// defaults; only Workspace is required.
type Config struct {
	// Workspace is the directory the file and shell tools are confined to
	// (conventionally <data>/workspace). It is created when missing.
	Workspace string
	Files     FilesConfig
	Shell     ShellConfig
	Fetch     FetchConfig
	Search    SearchConfig
	Browser   BrowserConfig
}

// BrowserConfig configures the browser_* tools (internal/tools/browser).
// They use Fetch's AllowPrivate and AllowHosts: the browser reaches what
// fetch_url may.
type BrowserConfig struct {
	// Disabled leaves the browser tools out even when Chromium is found.
	Disabled bool
	// Path is Chromium's executable; empty: looked for in PATH.
	Path string
	// Timeout bounds each browser call (default 30s).
	Timeout time.Duration
	// IdleTimeout closes a conversation's browser unused that long
	// (default 5m).
	IdleTimeout time.Duration
	// MaxBrowsers is how many browsers run at once (default 2).
	MaxBrowsers int
	// MaxMemory bounds one browser's resident memory (default 1 GiB).
	MaxMemory int64
	// MaxDownload bounds one file a page downloads (default 100 MiB).
	MaxDownload int64
	// Clock schedules idle closes (tests).
	Clock browser.Clock
}

// FilesConfig limits the file tools.
type FilesConfig struct {
	// MaxFileBytes is the largest file read_file/apply_patch open and
	// write_file/apply_patch produce (default 10 MiB).
	MaxFileBytes int64
}

// ShellConfig configures execute_shell.
type ShellConfig struct {
	// Sandbox is "auto" (default: bubblewrap and Landlock, each when it
	// works, else unsandboxed with a warning in every result), "required"
	// (fail when neither works) or "off".
	Sandbox string
	// Network gives sandboxed commands network access (off by default).
	Network bool
	// DefaultTimeout applies when the model gives none (default 60s).
	DefaultTimeout time.Duration
	// MaxTimeout caps the model's timeout_seconds (default 10m).
	MaxTimeout time.Duration
	// MaxOutput is how many bytes of merged output are kept (default 32 KiB).
	MaxOutput int
	// Limits bound each command's processes, memory, file size and CPU
	// time (zero fields: unlimited).
	Limits shell.Limits
	// ReadOnly are absolute paths commands may read at their own place
	// (the skills directory, whose folders' scripts run from there).
	ReadOnly []string
}

// FetchConfig configures fetch_url.
type FetchConfig struct {
	// AllowPrivate lets fetch_url reach loopback, private and link-local
	// addresses (off by default).
	AllowPrivate bool
	// AllowHosts lists host names (without port), IP addresses or CIDR
	// prefixes that may be fetched even though they are not public.
	AllowHosts []string
	// Timeout bounds one fetch (default 30s).
	Timeout time.Duration
	// MaxBytes is how much of a body is read (default 5 MiB).
	MaxBytes int
}

// SearchConfig configures search_web.
type SearchConfig struct {
	// SearXNGURL selects a SearXNG instance (JSON format enabled) instead of
	// DuckDuckGo.
	SearXNGURL string
	// DuckDuckGoURL overrides the DuckDuckGo HTML endpoint (tests).
	DuckDuckGoURL string
	// Timeout bounds one search (default 15s).
	Timeout time.Duration
}

// Tools holds the configured core tools.
type Tools struct {
	ws            *workspace.Workspace
	files         *files.Files
	shell         *shell.Shell
	fetcher       *web.Fetcher
	searcher      *web.Searcher
	browser       *browser.Manager // nil without Chromium
	browserStatus string
	all           []tool.Tool
}

// New validates cfg, creates the workspace and builds the tools. With
// Shell.Sandbox "auto" or "required", short bubblewrap and Landlock
// self-tests run later, in Prepare (in "required" mode New fails when
// neither is present at all).
func New(cfg Config, logger *slog.Logger) (*Tools, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ws, err := workspace.Open(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	// The self-test bounds itself; New has no caller context by contract.
	sh, err := shell.New(context.Background(), shell.Config{
		Workspace:      ws,
		Mode:           shell.Mode(cfg.Shell.Sandbox),
		Network:        cfg.Shell.Network,
		DefaultTimeout: cfg.Shell.DefaultTimeout,
		MaxTimeout:     cfg.Shell.MaxTimeout,
		MaxOutput:      cfg.Shell.MaxOutput,
		Limits:         cfg.Shell.Limits,
		ReadOnly:       cfg.Shell.ReadOnly,
	}, logger.With("tool", "execute_shell"))
	if err != nil {
		return nil, fmt.Errorf("execute_shell: %w", err)
	}
	fetcher, err := web.NewFetcher(web.FetchConfig{
		AllowPrivate: cfg.Fetch.AllowPrivate,
		AllowHosts:   cfg.Fetch.AllowHosts,
		Timeout:      cfg.Fetch.Timeout,
		MaxBytes:     cfg.Fetch.MaxBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("fetch_url: %w", err)
	}
	searcher, err := web.NewSearcher(web.SearchConfig{
		SearXNGURL:    cfg.Search.SearXNGURL,
		DuckDuckGoURL: cfg.Search.DuckDuckGoURL,
		Timeout:       cfg.Search.Timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("search_web: %w", err)
	}
	t := &Tools{
		ws:       ws,
		files:    files.New(ws, files.Limits{MaxFileBytes: cfg.Files.MaxFileBytes}),
		shell:    sh,
		fetcher:  fetcher,
		searcher: searcher,
	}
	if err := t.setUpBrowser(cfg, logger); err != nil {
		return nil, err
	}
	t.all = append(t.build(), t.browserTools()...)
	logger.Info("core tools ready", "workspace", ws.Dir(), "search", searcher.Engine(), "browser", t.browserStatus)
	return t, nil
}

// Prepare tests execute_shell's sandbox (shell.Shell.Prepare): the first
// shell command waits for it; the agent calls it in the background once it
// is ready. In sandbox mode required, the error says that no layer works.
func (t *Tools) Prepare(ctx context.Context) error { return t.shell.Prepare(ctx) }

// Prepared reports whether the shell sandbox's self-test has finished.
func (t *Tools) Prepared() bool { return t.shell.Prepared() }

func (c Config) validate() error {
	var errs []error
	if c.Workspace == "" {
		errs = append(errs, errors.New("workspace directory is not set"))
	}
	if c.Files.MaxFileBytes < 0 {
		errs = append(errs, errors.New("files max_file_bytes must not be negative"))
	}
	switch shell.Mode(c.Shell.Sandbox) {
	case "", shell.ModeAuto, shell.ModeRequired, shell.ModeOff:
	default:
		errs = append(errs, fmt.Errorf("shell.sandbox %q: want auto, required or off", c.Shell.Sandbox))
	}
	if c.Shell.DefaultTimeout < 0 || c.Shell.MaxTimeout < 0 || c.Shell.MaxOutput < 0 {
		errs = append(errs, errors.New("shell timeouts and max_output must not be negative"))
	}
	if c.Shell.MaxTimeout > 0 && c.Shell.DefaultTimeout > c.Shell.MaxTimeout {
		errs = append(errs, fmt.Errorf("shell default_timeout %s exceeds max_timeout %s", c.Shell.DefaultTimeout, c.Shell.MaxTimeout))
	}
	if c.Fetch.Timeout < 0 || c.Fetch.MaxBytes < 0 {
		errs = append(errs, errors.New("fetch timeout and max_bytes must not be negative"))
	}
	if c.Browser.Timeout < 0 || c.Browser.IdleTimeout < 0 || c.Browser.MaxBrowsers < 0 || c.Browser.MaxMemory < 0 || c.Browser.MaxDownload < 0 {
		errs = append(errs, errors.New("browser timeouts and limits must not be negative"))
	}
	if c.Search.Timeout < 0 {
		errs = append(errs, errors.New("search timeout must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("core tools config: %w", err)
	}
	return nil
}

// All returns the tools, in order: read_file, write_file, apply_patch,
// execute_shell, fetch_url, search_web, then the browser tools when
// Chromium was found. The slice is a copy.
func (t *Tools) All() []tool.Tool {
	return append([]tool.Tool(nil), t.all...)
}

// SandboxStatus describes the shell sandbox these tools actually use, in
// one line: "bubblewrap (…)" or "none: <reason>".
func (t *Tools) SandboxStatus() string { return t.shell.Status() }

// SandboxStatus probes this machine for a working bubblewrap without any
// configuration and describes the result in one line, for reverie doctor.
func SandboxStatus() string {
	return shell.SandboxStatus(context.Background())
}

// LimitsStatus says how execute_shell's resource limits would be enforced
// here (the limits in force, and what is missing and why).
func LimitsStatus(l shell.Limits, bwrap bool) (desc, missing string) {
	return shell.LimitsStatus(l, bwrap)
}

// Tool names.
const (
	NameReadFile     = "read_file"
	NameWriteFile    = "write_file"
	NameApplyPatch   = "apply_patch"
	NameExecuteShell = "execute_shell"
	NameFetchURL     = "fetch_url"
	NameSearchWeb    = "search_web"
)

func (t *Tools) build() []tool.Tool {
	return []tool.Tool{
		tool.New(NameReadFile, readFileDescription,
			func(ctx context.Context, a files.ReadArgs) (any, error) { return t.files.Read(ctx, a) },
			// A workspace file may come from anywhere (a download, a page the
			// model saved, a sync): its text is untrusted input.
			tool.ReadOnly(), tool.ReadsPrivateData(), tool.UntrustedResults(), tool.WithCategories("files", "research")),
		tool.New(NameWriteFile, writeFileDescription,
			func(ctx context.Context, a files.WriteArgs) (any, error) { return t.files.Write(ctx, a) },
			tool.WithCategories("files", "execution")),
		tool.New(NameApplyPatch, applyPatchDescription,
			func(ctx context.Context, a files.PatchArgs) (any, error) { return t.files.ApplyPatch(ctx, a) },
			tool.WithCategories("files", "execution")),
		tool.New(NameExecuteShell, "",
			func(ctx context.Context, a shell.Args) (any, error) { return t.shell.Run(ctx, a) },
			// What the sandbox allows is known once Prepare has tested it.
			tool.DescribedBy(t.shellDescription), tool.ReadsPrivateData(), tool.UntrustedResults(),
			tool.SendsOutTo(t.shellDestinations), tool.WithCategories("execution")),
		tool.New(NameFetchURL, fetchURLDescription,
			func(ctx context.Context, a web.FetchArgs) (any, error) {
				r, err := t.fetcher.Fetch(ctx, a)
				if err != nil {
					return nil, err
				}
				return r.Evidence().Encode(), nil
			},
			tool.ReadOnly(), tool.UntrustedResults(), tool.SendsOutTo(fetchDestinations), tool.WithCategories("web", "research")),
		tool.New(NameSearchWeb, searchWebDescription,
			// The query goes to the configured search engine, a destination
			// fixed by the configuration: search_web is not outward.
			func(ctx context.Context, a web.SearchArgs) (any, error) {
				r, err := t.searcher.Search(ctx, a)
				if err != nil {
					return nil, err
				}
				return r.Evidence(a.Query).Encode(), nil
			},
			tool.ReadOnly(), tool.UntrustedResults(), tool.WithCategories("web", "research")),
	}
}

const readFileDescription = `Read a text file in the workspace. Returns {"path","content","start_line","end_line","total_lines","next_offset","truncated"}; content lines are prefixed with their line number and a tab (the prefix is not part of the file). Reads 2000 lines by default: pass offset (1-based line) and limit to page through long files, continuing at next_offset. Binary files are refused. A directory path returns its entries, one per line, with "/" after subdirectories. Paths are relative to the workspace; nothing outside it can be read.`

const writeFileDescription = `Write a text file in the workspace, replacing it (or appending with append=true). Parent directories are created; the write is atomic. Returns {"path","bytes","created"}. To change part of an existing file prefer apply_patch. Paths are relative to the workspace; nothing outside it can be written.`

const applyPatchDescription = `Edit files in the workspace with a patch. The patch is all-or-nothing: if any part fails (missing context, a file that exists or does not), nothing is changed and the error says what did not match.

Format:
*** Begin Patch
*** Add File: path/new.txt
+every line of the new file, each prefixed with "+"
*** Delete File: path/obsolete.txt
*** Update File: path/file.py
*** Move to: path/renamed.py          (optional, renames the updated file)
@@ def greet():                       (optional: a line to find first; the hunk is searched after it)
 unchanged context line (prefix: one space)
-line to remove (prefix: "-")
+line to add (prefix: "+")
 unchanged context line
@@
 another hunk of the same file, further down
-old
+new
*** End Patch

Rules: copy context and removed lines exactly from the file (read it first); give about 3 lines of context around each change; hunks of one file must be in file order; "*** End of File" after a hunk pins it to the end of the file. Returns {"changes":[{"path","action","moved_to"}]}.`

const fetchURLDescription = `Fetch a web page (http or https) and return its main content as markdown, as an evidence packet: {"kind":"web_page","title","items":[{"url","text"}],"meta":{"url","status","content_type","truncated"}} (the page's text is the item's text; meta.url is the address after redirects). Plain text and JSON are returned as they are; images and other binary content are refused. Content is capped at max_chars (default 20000). Private, loopback and link-local addresses are blocked.`

const searchWebDescription = `Search the web. Returns an evidence packet: {"kind":"web_search","title","items":[{"url","title","text"}],"meta":{"query","engine"}}, one item per result with its snippet as text; use fetch_url to read a result. If the search engine is blocking requests the call fails with an error saying so; try again later.`

// fetchDestinations: fetch_url carries its URL (path and query) to the
// URL's host.
func fetchDestinations(a web.FetchArgs) []tool.Destination {
	return []tool.Destination{{URL: a.URL, Data: a.URL}}
}

// shellDestinations: with network access (configured, or no sandbox layer
// that blocks it) a command can reach anywhere; without, nothing.
func (t *Tools) shellDestinations(a shell.Args) []tool.Destination {
	if !t.shell.NetworkEnabled() {
		return nil
	}
	return []tool.Destination{{Anywhere: "the network (the shell has network access)", Data: a.Command}}
}

func (t *Tools) shellDescription() string {
	d := `Run a command with /bin/sh -c in the workspace (or workdir, relative to it). Returns {"exit_code","output","timed_out","sandbox","limits","limit_hit","note"}: output is stdout and stderr merged, with the middle cut when long; exit_code is -1 when the command was killed; limits are the resource limits of each command and limit_hit names those it reached (processes, memory, file_size, cpu_seconds). The command is killed after timeout_seconds (default 60). Use it for builds, tests, git, searching files (grep, find) and running scripts; use read_file, write_file and apply_patch to view and edit files.`
	return d + " " + t.shell.Describe()
}
