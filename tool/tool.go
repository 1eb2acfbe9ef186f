// Package tool defines what a tool is for the agent: a name, a description,
// a JSON Schema for its arguments and a handler. Tools are built with New
// from a Go arguments struct so that the schema and the handler have one
// source of truth.
package tool

import (
	"context"
	"encoding/json"

	"github.com/reverie-ai/reverie/llm"
)

// Tool is something the model can call.
type Tool interface {
	// Name is unique among the tools offered in one turn ([a-zA-Z0-9_-]{1,64}).
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Schema is the JSON Schema (an object schema) of the arguments.
	Schema() json.RawMessage
	// Call runs the tool with arguments that the tool loop has already
	// checked to be a JSON object valid against Schema. A returned error is
	// reported to the model as a failed call; it never ends the turn.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool returns to the model. Content is usually JSON.
type Result struct {
	Content string
	// Images are pictures the result shows (a screenshot), as references
	// to files in the workspace (llm.Image's Path and MediaType, no Data):
	// a model that accepts images sees them with the result, others a
	// note naming each file.
	Images []llm.Image
}
