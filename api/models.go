package api

import (
	"context"

	"github.com/reverie-ai/reverie/chat"
)

// Models reads the model router's roles and backends and the model chosen
// per conversation (the web page's model picker).
type Models interface {
	// List returns every configured backend and every role with the
	// backends it resolves to.
	List(ctx context.Context) (ModelList, error)
	// Thread returns the conversation's model and token use.
	Thread(ctx context.Context, thread chat.ThreadID) (ThreadModel, error)
	// SetThread chooses backend for the conversation's replies ("" goes
	// back to the main role's). ErrInvalid for an unknown backend.
	SetThread(ctx context.Context, thread chat.ThreadID, backend string) (ThreadModel, error)
}

// ModelBackend is one configured backend: GET /api/v1/models.
type ModelBackend struct {
	// Name is the backend's configured name ("openrouter", "setup/gpt-4.1").
	Name string `json:"name"`
	// Model is the model it calls.
	Model string `json:"model"`
	// ContextSize is the context window in tokens, MaxTokens the part of
	// it kept for the reply.
	ContextSize int `json:"context_size"`
	MaxTokens   int `json:"max_tokens"`
	// Vision: the model accepts images.
	Vision bool `json:"vision"`
}

// ModelRole is one role of the model router and the backends it uses, in
// the order they are tried.
type ModelRole struct {
	Role     string   `json:"role"`
	Backends []string `json:"backends"`
	// FallsBackTo names the role whose backends this one uses because it
	// has none of its own ("" when it has).
	FallsBackTo string `json:"falls_back_to,omitempty"`
}

// ModelList is GET /api/v1/models.
type ModelList struct {
	Backends []ModelBackend `json:"backends"`
	Roles    []ModelRole    `json:"roles"`
}

// ThreadModel is GET and PUT /api/v1/threads/{thread}/model.
type ThreadModel struct {
	Thread chat.ThreadID `json:"thread"`
	// Backend is the backend chosen for the conversation; "" means the
	// main role's.
	Backend string `json:"backend"`
	// Effective is the backend the next reply tries first (null when no
	// model is configured).
	Effective *ModelBackend `json:"effective"`
	// ContextTokens is the input of the conversation's newest model call:
	// how much of Effective's context window it fills.
	ContextTokens int `json:"context_tokens"`
	// InputTokens and OutputTokens add up the conversation's replies.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	Calls        int `json:"calls"`
}

// ThreadModelRequest is the body of PUT /api/v1/threads/{thread}/model.
type ThreadModelRequest struct {
	Backend string `json:"backend"`
}
