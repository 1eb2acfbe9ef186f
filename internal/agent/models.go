package agent

import (
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/toolloop"
)

// Models gives the agent a model and its limits per role
// (modelrouter.RoleMain, modelrouter.RoleCompaction).
type Models interface {
	Model(role string) toolloop.Model
	Limits(role string) modelrouter.Limits
}

// RouterModels adapts a *modelrouter.Router to Models.
func RouterModels(r *modelrouter.Router) Models { return routerModels{r} }

type routerModels struct{ r *modelrouter.Router }

func (m routerModels) Model(role string) toolloop.Model      { return m.r.Model(role) }
func (m routerModels) Limits(role string) modelrouter.Limits { return m.r.Limits(role) }
