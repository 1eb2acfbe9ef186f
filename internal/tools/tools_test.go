package tools

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/tools/workspace"
	"github.com/reverie-ai/reverie/tool"
)

func newTools(t *testing.T, mutate func(*Config)) *Tools {
	t.Helper()
	cfg := Config{Workspace: filepath.Join(t.TempDir(), "data", "workspace"), Shell: ShellConfig{Sandbox: "off"}}
	if mutate != nil {
		mutate(&cfg)
	}
	tl, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tl
}

func TestNewValidation(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no workspace", cfg: Config{}, wantErr: "workspace directory is not set"},
		{name: "bad sandbox mode", cfg: Config{Workspace: dir, Shell: ShellConfig{Sandbox: "sometimes"}}, wantErr: `shell.sandbox "sometimes"`},
		{name: "default above max", cfg: Config{Workspace: dir, Shell: ShellConfig{Sandbox: "off", DefaultTimeout: time.Hour, MaxTimeout: time.Minute}}, wantErr: "exceeds max_timeout"},
		{name: "negative fetch size", cfg: Config{Workspace: dir, Shell: ShellConfig{Sandbox: "off"}, Fetch: FetchConfig{MaxBytes: -1}}, wantErr: "must not be negative"},
		{name: "bad allowlist", cfg: Config{Workspace: dir, Shell: ShellConfig{Sandbox: "off"}, Fetch: FetchConfig{AllowHosts: []string{"1.2.3.4/77"}}}, wantErr: "fetch_url"},
		{name: "bad searxng URL", cfg: Config{Workspace: dir, Shell: ShellConfig{Sandbox: "off"}, Search: SearchConfig{SearXNGURL: "not a url"}}, wantErr: "search_web"},
		{name: "workspace is a file", cfg: Config{Workspace: "/etc/passwd", Shell: ShellConfig{Sandbox: "off"}}, wantErr: "workspace"},
		{name: "valid", cfg: Config{Workspace: filepath.Join(dir, "new", "ws"), Shell: ShellConfig{Sandbox: "off"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(tc.cfg, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got.Workspace() != filepath.Join(dir, "new", "ws") {
				t.Fatalf("Workspace() = %q", got.Workspace())
			}
		})
	}
}

func TestAll(t *testing.T) {
	tl := newTools(t, nil)
	all := tl.All()
	set, err := tool.NewSet(all...)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	want := []string{NameReadFile, NameWriteFile, NameApplyPatch, NameExecuteShell, NameFetchURL, NameSearchWeb}
	if tl.browser != nil {
		want = append(want, NameBrowserOpen, NameBrowserSnapshot, NameBrowserClick, NameBrowserType, NameBrowserScreenshot, NameBrowserClose)
	}
	if got := set.Names(); !slices.Equal(got, want) {
		t.Fatalf("names = %v; want %v", got, want)
	}
	required := map[string][]string{
		NameReadFile:     {"path"},
		NameWriteFile:    {"path", "content"},
		NameApplyPatch:   {"patch"},
		NameExecuteShell: {"command"},
		NameFetchURL:     {"url"},
		NameSearchWeb:    {"query"},
		NameBrowserOpen:  {"url"},
		NameBrowserClick: {"ref"},
		NameBrowserType:  {"ref", "text"},
	}
	readOnly := map[string]bool{NameReadFile: true, NameFetchURL: true, NameSearchWeb: true,
		NameBrowserOpen: true, NameBrowserSnapshot: true, NameBrowserScreenshot: true}
	for _, tt := range all {
		t.Run(tt.Name(), func(t *testing.T) {
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(tt.Schema(), &schema); err != nil {
				t.Fatalf("schema: %v", err)
			}
			if schema.Type != "object" || !slices.Equal(schema.Required, required[tt.Name()]) {
				t.Fatalf("schema type %q required %v; want object %v", schema.Type, schema.Required, required[tt.Name()])
			}
			if tt.Description() == "" {
				t.Fatal("empty description")
			}
			if tool.IsReadOnly(tt) != readOnly[tt.Name()] {
				t.Fatalf("read-only = %v; want %v", tool.IsReadOnly(tt), readOnly[tt.Name()])
			}
			if len(tool.CategoriesOf(tt)) == 0 {
				t.Fatal("no categories")
			}
		})
	}
	if !strings.Contains(set.Tools()[3].Description(), "no sandbox is active") {
		t.Error("execute_shell description does not warn about the missing sandbox")
	}
}

// Without Chromium, or with the tools disabled, there are no browser
// tools; a configured path that does not exist is an error.
func TestBrowserToolsNeedChromium(t *testing.T) {
	names := func(tl *Tools) []string {
		var out []string
		for _, tt := range tl.All() {
			if strings.HasPrefix(tt.Name(), "browser_") {
				out = append(out, tt.Name())
			}
		}
		return out
	}
	if got := names(newTools(t, func(c *Config) { c.Browser.Disabled = true })); len(got) != 0 {
		t.Errorf("disabled: %v", got)
	}
	if _, err := New(Config{Workspace: t.TempDir(), Shell: ShellConfig{Sandbox: "off"}, Browser: BrowserConfig{Path: "/nonexistent/chromium"}}, nil); err == nil {
		t.Error("a missing tools.browser.path was accepted")
	}
	t.Setenv("PATH", t.TempDir())
	tl := newTools(t, nil)
	if got := names(tl); len(got) != 0 {
		t.Errorf("no Chromium in PATH: %v", got)
	}
	if !strings.HasPrefix(tl.BrowserStatus(), "absent") {
		t.Errorf("status %q", tl.BrowserStatus())
	}
	// The outward rule: browser_open carries its URL; a request of the
	// page, put to the gate, its method, URL and body.
	for _, tc := range []struct {
		name, args, url, data string
	}{
		{"open", `{"url":"https://example.org/a?b=1"}`, "https://example.org/a?b=1", "https://example.org/a?b=1"},
		{"request", `{"url":"https://x.example/p","request":"POST https://x.example/p secret=1"}`, "https://x.example/p", "POST https://x.example/p secret=1"},
	} {
		d := browserDestinations(json.RawMessage(tc.args))
		if len(d) != 1 || d[0].URL != tc.url || d[0].Data != tc.data {
			t.Errorf("%s: destinations %+v", tc.name, d)
		}
	}
	if d := browserDestinations(json.RawMessage(`{"ref":"e3"}`)); len(d) != 0 {
		t.Errorf("a click carries %+v", d)
	}
}

// call runs a tool by name with JSON arguments, as the tool loop would.
func call(t *testing.T, tl *Tools, name, args string) (string, error) {
	t.Helper()
	set, err := tool.NewSet(tl.All()...)
	if err != nil {
		t.Fatal(err)
	}
	tt, ok := set.Get(name)
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	res, err := tt.Call(t.Context(), json.RawMessage(args))
	return res.Content, err
}

func TestCallThroughToolInterface(t *testing.T) {
	search := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"results":[{"title":"Reverie","url":"https://reverie.example/","content":"An assistant."}]}`))
	}))
	t.Cleanup(search.Close)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("hello from the page"))
	}))
	t.Cleanup(page.Close)
	tl := newTools(t, func(c *Config) {
		c.Search.SearXNGURL = search.URL
		c.Fetch.AllowHosts = []string{"127.0.0.1"}
	})
	tests := []struct {
		name    string
		tool    string
		args    string
		want    string // the result, exactly
		errIs   error
		wantErr string
	}{
		{name: "write", tool: NameWriteFile, args: `{"path":"notes/todo.txt","content":"buy milk\n"}`,
			want: `{"path":"notes/todo.txt","bytes":9,"created":true}`},
		{name: "patch", tool: NameApplyPatch, args: `{"patch":"*** Begin Patch\n*** Update File: notes/todo.txt\n@@\n-buy milk\n+buy oat milk\n*** End Patch"}`,
			want: `{"changes":[{"path":"notes/todo.txt","action":"updated"}]}`},
		{name: "read", tool: NameReadFile, args: `{"path":"notes/todo.txt"}`,
			want: `{"path":"notes/todo.txt","content":"     1\tbuy oat milk\n","start_line":1,"end_line":1,"total_lines":1}`},
		{name: "shell", tool: NameExecuteShell, args: `{"command":"cat todo.txt","workdir":"notes"}`,
			want: `{"exit_code":0,"output":"buy oat milk\n","timed_out":false,"sandbox":"none","limits":"none","note":"WARNING: no sandbox is active (disabled by configuration (shell.sandbox: off)): the command ran directly on the host with this user's full permissions, network access and files outside the workspace"}`},
		{name: "fetch", tool: NameFetchURL, args: `{"url":"` + page.URL + `"}`,
			want: `{"kind":"web_page","title":"` + page.URL + `","items":[` + "\n" + `{"url":"` + page.URL + `","text":"hello from the page"}` + "\n" +
				`],"meta":{"source":"fetch_url","url":"` + page.URL + `","status":200,"content_type":"text/plain"}}`},
		{name: "search", tool: NameSearchWeb, args: `{"query":"reverie"}`,
			want: `{"kind":"web_search","title":"Web results for \"reverie\"","items":[` + "\n" + `{"url":"https://reverie.example/","title":"Reverie","text":"An assistant."}` + "\n" +
				`],"meta":{"source":"search_web","query":"reverie","engine":"searxng"}}`},
		{name: "escape is an error", tool: NameReadFile, args: `{"path":"../../etc/passwd"}`, errIs: workspace.ErrOutsideWorkspace},
		{name: "bad arguments are an error", tool: NameWriteFile, args: `{"path":3}`, wantErr: "decode arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, tl, tc.tool, tc.args)
			if tc.errIs != nil || tc.wantErr != "" {
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("error = %v; want %v", err, tc.errIs)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if got != tc.want {
				t.Fatalf("result =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestSandboxStatus(t *testing.T) {
	status := SandboxStatus()
	if !strings.HasPrefix(status, "bubblewrap available at ") && !strings.HasPrefix(status, "unavailable: ") {
		t.Fatalf("SandboxStatus() = %q", status)
	}
	tl := newTools(t, nil)
	if got := tl.SandboxStatus(); !strings.HasPrefix(got, "none: disabled by configuration") {
		t.Fatalf("Tools.SandboxStatus() = %q", got)
	}
}

// Workspace is the absolute path of the workspace directory.
func (t *Tools) Workspace() string { return t.ws.Dir() }
