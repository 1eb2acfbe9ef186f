package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/voice"
)

// apiModels serves the model picker: the router's roles and backends, the
// speech roles (stt, tts: audio models, not choosable for a conversation),
// and the model chosen per conversation.
type apiModels struct {
	m *modelrouter.Router
	v *voice.Service
}

func (s apiModels) List(context.Context) (api.ModelList, error) {
	out := api.ModelList{Backends: []api.ModelBackend{}, Roles: []api.ModelRole{}}
	for _, b := range s.m.Backends() {
		out.Backends = append(out.Backends, modelBackendOf(b))
	}
	for _, r := range s.m.Roles() {
		bs := r.Backends
		if bs == nil {
			bs = []string{}
		}
		out.Roles = append(out.Roles, api.ModelRole{Role: r.Role, Backends: bs, FallsBackTo: r.FallsBackTo})
	}
	for _, role := range config.SpeechRoles {
		bs := s.v.Backends(role)
		if bs == nil {
			bs = []string{}
		}
		out.Roles = append(out.Roles, api.ModelRole{Role: role, Backends: bs})
	}
	return out, nil
}

func modelBackendOf(b modelrouter.BackendInfo) api.ModelBackend {
	return api.ModelBackend{Name: b.Name, Model: b.Model, ContextSize: b.Limits.ContextSize,
		MaxTokens: b.Limits.MaxTokens, Vision: b.Limits.Vision}
}

func (s apiModels) Thread(ctx context.Context, thread chat.ThreadID) (api.ThreadModel, error) {
	u, err := s.m.Thread(ctx, string(thread))
	if err != nil {
		return api.ThreadModel{}, err
	}
	out := api.ThreadModel{Thread: thread, Backend: u.Backend, ContextTokens: u.LastInputTokens,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Calls: u.Calls}
	first := u.Backend
	if first == "" {
		for _, r := range s.m.Roles() {
			if r.Role == modelrouter.RoleMain && len(r.Backends) > 0 {
				first = r.Backends[0]
			}
		}
	}
	for _, b := range s.m.Backends() {
		if b.Name == first {
			mb := modelBackendOf(b)
			out.Effective = &mb
		}
	}
	return out, nil
}

func (s apiModels) SetThread(ctx context.Context, thread chat.ThreadID, backend string) (api.ThreadModel, error) {
	if err := s.m.SetThreadBackend(ctx, string(thread), backend); errors.Is(err, modelrouter.ErrUnknownBackend) {
		return api.ThreadModel{}, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	} else if err != nil {
		return api.ThreadModel{}, err
	}
	return s.Thread(ctx, thread)
}
