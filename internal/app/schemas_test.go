package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"testing"

	_ "github.com/reverie-ai/reverie/extensions/standard"
	"github.com/reverie-ai/reverie/tool"
)

// Every tool a turn can offer, with every standard extension loaded, has a
// JSON schema and a compiled form: tools make both on first use (a turn, a
// call), so a schema that failed to compile would otherwise show only when
// the model first called that tool.
func TestEveryToolSchemaCompiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	a, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_LOG__FILE=false"}, Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tools := a.warmableTools()
	if len(tools) < 20 {
		t.Fatalf("only %d tools; the standard set has more", len(tools))
	}
	for _, tl := range tools {
		t.Run(tl.Name(), func(t *testing.T) {
			var schema struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(tl.Schema(), &schema); err != nil || schema.Type != "object" {
				t.Fatalf("schema %s: type %q, %v", tl.Schema(), schema.Type, err)
			}
			// Validating compiles the schema (a panic on failure); an
			// empty object is either valid or lacks a required property.
			if err := tool.Validate(tl, json.RawMessage(`{}`)); err != nil && !errors.Is(err, tool.ErrInvalidArguments) {
				t.Fatalf("validating {}: %v", err)
			}
		})
	}
}
