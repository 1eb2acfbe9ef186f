package kernel

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// dynamicExt offers tools that change, and HTTP endpoints.
type dynamicExt struct {
	mu        sync.Mutex
	tools     []tool.Tool
	endpoints []extension.HTTPEndpoint
}

func (d *dynamicExt) Init(context.Context, extension.Host) error { return nil }

func (d *dynamicExt) CurrentTools() []tool.Tool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tools
}

func (d *dynamicExt) HTTPEndpoints() []extension.HTTPEndpoint { return d.endpoints }

func (d *dynamicExt) set(ts ...tool.Tool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tools = ts
}

func rawTool(t *testing.T, name string) tool.Tool {
	t.Helper()
	tl, err := tool.NewRaw(name, "test", nil, func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestDynamicToolsAndEndpoints(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	d := &dynamicExt{endpoints: []extension.HTTPEndpoint{
		{Path: "/mcp", Handler: ok},
		{Path: "/api/x", Handler: ok}, // reserved: dropped
		{Path: "/", Handler: ok},      // too broad: dropped
		{Path: "/nil"},                // no handler: dropped
	}}
	k := mustNew(t, Options{Registry: []extension.Info{{ID: "dyn", New: func() extension.Extension { return d }}}})
	ctx := context.Background()
	if err := k.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}

	names := func() []string {
		var out []string
		for _, tl := range k.DynamicTools() {
			out = append(out, tl.Name())
		}
		return out
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("tools before any: %v", got)
	}
	d.set(rawTool(t, "srv__a"), rawTool(t, "srv__b"), rawTool(t, "srv__a"))
	if got := names(); !slices.Equal(got, []string{"srv__a", "srv__b"}) {
		t.Fatalf("tools = %v, want each name once", got)
	}
	d.set()
	if got := names(); len(got) != 0 {
		t.Fatalf("tools after they went away: %v", got)
	}

	cases := []struct {
		path string
		want bool
	}{
		{"/mcp", true},
		{"/mcp/sub", true},
		{"/mcpx", false},
		{"/api/x", false},
		{"/", false},
		{"/nil", false},
	}
	for _, tc := range cases {
		if _, got := k.Endpoint(tc.path); got != tc.want {
			t.Errorf("Endpoint(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
