package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/tool"
)

func TestConformance(t *testing.T) {
	info, ok := extension.Lookup("kv")
	if !ok {
		t.Fatal("kv is not registered")
	}
	extensiontest.Run(t, info)
	extensiontest.Run(t, info, extensiontest.WithConfig("max_value_bytes: 1024\nmax_keys: 5\n"))
}

// setup returns an initialised KV on a fresh host and its tools by name.
func setup(t *testing.T, config string) map[string]tool.Tool {
	t.Helper()
	h := extensiontest.NewHost(t, extensiontest.WithID("kv"), extensiontest.WithConfig(config))
	k := new(KV)
	if err := k.Init(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if err := k.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	tools := map[string]tool.Tool{}
	for _, tl := range k.Tools() {
		tools[tl.Name()] = tl
	}
	return tools
}

// call runs a tool with args the way the tool loop does: validated against
// the schema first.
func call(t *testing.T, tools map[string]tool.Tool, name, args string) (string, error) {
	t.Helper()
	tl := tools[name]
	if v, ok := tl.(interface{ ValidateArgs(json.RawMessage) error }); ok {
		if err := v.ValidateArgs(json.RawMessage(args)); err != nil {
			return "", fmt.Errorf("schema: %w", err)
		}
	}
	res, err := tl.Call(context.Background(), json.RawMessage(args))
	return res.Content, err
}

func mustCall(t *testing.T, tools map[string]tool.Tool, name, args string, out any) {
	t.Helper()
	content, err := call(t, tools, name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	if err := json.Unmarshal([]byte(content), out); err != nil {
		t.Fatalf("%s: %v in %s", name, err, content)
	}
}

func TestRoundTrips(t *testing.T) {
	tools := setup(t, "")

	var set setResult
	mustCall(t, tools, "kv_set", `{"namespace":"tasks","key":"news/last_id","value":"4711"}`, &set)
	if !set.Created || set.Bytes != 4 || set.Namespace != "tasks" {
		t.Errorf("set = %+v", set)
	}
	mustCall(t, tools, "kv_set", `{"namespace":"tasks","key":"news/last_id","value":"4712"}`, &set)
	if set.Created {
		t.Errorf("overwrite reported as created: %+v", set)
	}
	var get getResult
	mustCall(t, tools, "kv_get", `{"namespace":"tasks","key":"news/last_id"}`, &get)
	if string(get.Value) != `"4712"` || get.JSON || get.UpdatedAt == "" {
		t.Errorf("get = %+v (%s)", get, get.Value)
	}

	// JSON values are checked, stored compactly and come back as JSON.
	mustCall(t, tools, "kv_set", `{"namespace":"tasks","key":"news/config","value":"{ \"feeds\": [1, 2] }","json":true}`, &set)
	mustCall(t, tools, "kv_get", `{"namespace":"tasks","key":"news/config"}`, &get)
	if string(get.Value) != `{"feeds":[1,2]}` || !get.JSON {
		t.Errorf("json get = %+v (%s)", get, get.Value)
	}
	// Text that looks like JSON stays text unless json is set.
	mustCall(t, tools, "kv_set", `{"key":"plain","value":"[1,2]"}`, &set)
	if set.Namespace != DefaultNamespace {
		t.Errorf("default namespace = %q", set.Namespace)
	}
	mustCall(t, tools, "kv_get", `{"key":"plain"}`, &get)
	if string(get.Value) != `"[1,2]"` {
		t.Errorf("text get = %s", get.Value)
	}
	// Unicode keys and values survive.
	mustCall(t, tools, "kv_set", `{"namespace":"tasks","key":"note/café","value":"naïve ☕"}`, &set)
	mustCall(t, tools, "kv_get", `{"namespace":"tasks","key":"note/café"}`, &get)
	if string(get.Value) != `"naïve ☕"` {
		t.Errorf("unicode get = %s", get.Value)
	}

	var list keysResult
	mustCall(t, tools, "kv_list", `{"namespace":"tasks","prefix":"news/"}`, &list)
	if len(list.Keys) != 2 || list.Keys[0].Key != "news/config" || list.Keys[1].Key != "news/last_id" || list.More {
		t.Errorf("list = %+v", list)
	}
	list = keysResult{}
	mustCall(t, tools, "kv_list", `{"namespace":"tasks","limit":1}`, &list)
	if len(list.Keys) != 1 || !list.More {
		t.Errorf("limited list = %+v", list)
	}
	list = keysResult{}
	mustCall(t, tools, "kv_list", `{"namespace":"empty"}`, &list)
	if list.Keys == nil || len(list.Keys) != 0 || list.More {
		t.Errorf("empty list = %+v", list)
	}
	var nss namespacesResult
	mustCall(t, tools, "kv_list", `{}`, &nss)
	if len(nss.Namespaces) != 2 || nss.Namespaces[0] != (namespaceEntry{"default", 1}) || nss.Namespaces[1] != (namespaceEntry{"tasks", 3}) {
		t.Errorf("namespaces = %+v", nss.Namespaces)
	}

	var del deleteResult
	mustCall(t, tools, "kv_delete", `{"namespace":"tasks","key":"news/last_id"}`, &del)
	if !del.Deleted {
		t.Errorf("delete = %+v", del)
	}
	mustCall(t, tools, "kv_delete", `{"namespace":"tasks","key":"news/last_id"}`, &del)
	if del.Deleted {
		t.Errorf("second delete = %+v", del)
	}
	if _, err := call(t, tools, "kv_get", `{"namespace":"tasks","key":"news/last_id"}`); err == nil ||
		!strings.Contains(err.Error(), `no key "news/last_id" in namespace "tasks"`) {
		t.Errorf("get of a deleted key = %v", err)
	}
	// Namespaces are separate.
	if _, err := call(t, tools, "kv_get", `{"namespace":"other","key":"plain"}`); err == nil {
		t.Error("key found in the wrong namespace")
	}
}

func TestBadInput(t *testing.T) {
	tools := setup(t, "max_value_bytes: 16\nmax_keys: 3\n")
	tests := []struct {
		name, tool, args, reason string
	}{
		{"empty key", "kv_set", `{"key":"","value":"x"}`, "key is empty"},
		{"blank key", "kv_get", `{"key":"   "}`, "key is empty"},
		{"long key", "kv_set", `{"key":"` + strings.Repeat("k", MaxKeyBytes+1) + `","value":"x"}`, "at most 256"},
		{"key with newline", "kv_set", `{"key":"a\nb","value":"x"}`, "control character"},
		{"upper-case namespace", "kv_set", `{"namespace":"Tasks","key":"k","value":"x"}`, "not allowed"},
		{"namespace with slash", "kv_get", `{"namespace":"a/b","key":"k"}`, "not allowed"},
		{"namespace with space", "kv_list", `{"namespace":"a b"}`, "not allowed"},
		{"namespace with dots only start", "kv_delete", `{"namespace":".hidden","key":"k"}`, "not allowed"},
		{"huge value", "kv_set", `{"key":"k","value":"` + strings.Repeat("v", 17) + `"}`, "at most 16"},
		{"bad json", "kv_set", `{"key":"k","value":"{nope","json":true}`, "not valid JSON"},
		{"missing value", "kv_set", `{"key":"k"}`, "schema"},
		{"unknown argument", "kv_get", `{"key":"k","ttl":3}`, "schema"},
		{"bad limit", "kv_list", `{"namespace":"a","limit":501}`, "between 1 and 500"},
		{"prefix without namespace", "kv_list", `{"prefix":"a"}`, "needs a namespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(t, tools, tc.tool, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("%s = %q, %v; want an error containing %q", tc.tool, out, err, tc.reason)
			}
		})
	}
	var nss namespacesResult
	mustCall(t, tools, "kv_list", `{}`, &nss)
	if nss.Namespaces == nil || len(nss.Namespaces) != 0 {
		t.Errorf("bad input stored something: %+v", nss)
	}

	// A full store refuses new keys but still updates existing ones.
	for i := range 3 {
		if _, err := call(t, tools, "kv_set", fmt.Sprintf(`{"key":"k%d","value":"v"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := call(t, tools, "kv_set", `{"key":"k3","value":"v"}`); err == nil || !strings.Contains(err.Error(), "full (3 keys)") {
		t.Errorf("set in a full store = %v", err)
	}
	if _, err := call(t, tools, "kv_set", `{"key":"k0","value":"new"}`); err != nil {
		t.Errorf("update in a full store = %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []string{"max_value_bytes: 0\n", "max_keys: -1\n", "ttl: 5\n"} {
		h := extensiontest.NewHost(t, extensiontest.WithID("kv"), extensiontest.WithConfig(cfg))
		if err := new(KV).Init(t.Context(), h); err == nil {
			t.Errorf("config %q accepted", cfg)
		}
	}
}

func TestConcurrentSets(t *testing.T) {
	tools := setup(t, "max_keys: 40\n")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				// Half the writers share keys: updates race with inserts.
				key := fmt.Sprintf("w%d-%d", w%4, i)
				if _, err := call(t, tools, "kv_set", fmt.Sprintf(`{"namespace":"c","key":%q,"value":"%d"}`, key, w)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var list keysResult
	mustCall(t, tools, "kv_list", `{"namespace":"c","limit":500}`, &list)
	if len(list.Keys) != 40 {
		t.Errorf("%d keys, want 40", len(list.Keys))
	}
}
