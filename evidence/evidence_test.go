package evidence

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEncodeGolden(t *testing.T) {
	p := Packet{
		Kind:  WebSearch,
		Title: `Results for "go <generics>"`,
		Items: []Item{
			{URL: "https://go.dev/doc/tutorial/generics", Title: "Tutorial: Getting started with generics", Text: "This tutorial introduces the basics of generics in Go & more."},
			{URL: "https://go.dev/blog/intro-generics", Title: "An Introduction To Generics", Text: "The Go 1.18 release adds support for generics."},
		},
		Meta: Meta{Source: "search_web", Query: "go <generics>", Engine: "duckduckgo"},
	}
	got := p.Encode()
	golden := filepath.Join("testdata", "search.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("Encode:\n%s\nwant:\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatalf("Encode wrote invalid JSON:\n%s", got)
	}
	if n := strings.Count(got, "\n"); n != len(p.Items)+1 {
		t.Errorf("Encode wrote %d line breaks, want one per item and one after the last", n)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if back, ok := Decode(string(b)); !ok || back.Encode() != got {
		t.Errorf("json.Marshal = %s; want Encode's packet", b)
	}
}

func TestDecode(t *testing.T) {
	full := Packet{Kind: Memory, Title: "Memories", Items: []Item{{ID: 7, Label: "episode", When: "2026-11-02", Text: "The user moved to Lyon.", Score: 0.42}}, Meta: Meta{Source: "search_memory", Query: "move"}}
	tests := []struct {
		name string
		in   string
		want Packet
		ok   bool
	}{
		{"round trip", full.Encode(), full, true},
		{"no items", Packet{Kind: WebPage, Title: "empty", Meta: Meta{Source: "fetch_url"}}.Encode(), Packet{Kind: WebPage, Title: "empty", Items: []Item{}, Meta: Meta{Source: "fetch_url"}}, true},
		{"surrounding space", "\n  " + full.Encode() + "\n", full, true},
		{"plain text", "The page says hello.", Packet{}, false},
		{"other JSON object", `{"results":[{"id":1}]}`, Packet{}, false},
		{"kind without items", `{"kind":"memory","title":"x"}`, Packet{}, false},
		{"items not an array", `{"kind":"memory","items":{"a":1}}`, Packet{}, false},
		{"empty kind", `{"kind":"","items":[]}`, Packet{}, false},
		{"broken JSON", `{"kind":"memory","items":[`, Packet{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Decode(tc.in)
			if ok != tc.ok {
				t.Fatalf("Decode ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if got.Encode() != tc.want.Encode() {
				t.Errorf("Decode = %s\nwant %s", got.Encode(), tc.want.Encode())
			}
		})
	}
}

func TestEncodeItem(t *testing.T) {
	it := Item{Text: "a line", When: "2026-01-02"}
	with := Packet{Kind: Memory, Items: []Item{it, it}}.Encode()
	without := Packet{Kind: Memory, Items: []Item{it}}.Encode()
	if d := len(with) - len(without); d != len(EncodeItem(it))+2 {
		t.Errorf("a second item added %d bytes, its line and separator are %d", d, len(EncodeItem(it))+2)
	}
	if EncodeItem(it) != `{"when":"2026-01-02","text":"a line"}` {
		t.Errorf("EncodeItem = %s", EncodeItem(it))
	}
}

func TestBadStructuredMetaStaysValidJSON(t *testing.T) {
	p := Packet{Kind: ToolOutput, Title: "t", Items: []Item{{Text: "x"}}, Meta: Meta{Source: "mcp.s.t", Structured: json.RawMessage(`{broken`)}}
	if s := p.Encode(); !json.Valid([]byte(s)) {
		t.Errorf("a packet with invalid structured content encoded to invalid JSON:\n%s", s)
	}
}
