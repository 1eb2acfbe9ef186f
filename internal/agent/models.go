package agent

import (
	"context"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/toolloop"
)

// Models gives the agent a model and its limits per role
// (modelrouter.RoleMain, modelrouter.RoleCompaction).
type Models interface {
	Model(role string) toolloop.Model
	Limits(role string) modelrouter.Limits
}

// ThreadModels is the optional interface of Models that chooses a model
// per conversation (the web page's model picker): the model for role on
// thread and the limits of the backend it tries first.
type ThreadModels interface {
	ForThread(ctx context.Context, role string, thread chat.ThreadID) (toolloop.Model, modelrouter.Limits)
}

// mainModel is the main role's model for thread, and its limits.
func (a *Agent) mainModel(ctx context.Context, thread chat.ThreadID) (toolloop.Model, modelrouter.Limits) {
	if tm, ok := a.o.Models.(ThreadModels); ok {
		return tm.ForThread(ctx, modelrouter.RoleMain, thread)
	}
	return a.o.Models.Model(modelrouter.RoleMain), a.o.Models.Limits(modelrouter.RoleMain)
}

// RouterModels adapts a *modelrouter.Router to Models.
func RouterModels(r *modelrouter.Router) Models { return routerModels{r} }

type routerModels struct{ r *modelrouter.Router }

func (m routerModels) Model(role string) toolloop.Model      { return m.r.Model(role) }
func (m routerModels) Limits(role string) modelrouter.Limits { return m.r.Limits(role) }

func (m routerModels) ForThread(ctx context.Context, role string, thread chat.ThreadID) (toolloop.Model, modelrouter.Limits) {
	return m.r.ForThread(ctx, role, string(thread))
}

var _ ThreadModels = routerModels{}
