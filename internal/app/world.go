package app

import (
	"context"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/world"
)

// worldContextPriority places the world state first among the context
// blocks: it changes least from turn to turn (recalled memories follow).
const worldContextPriority = 5

// worldContext shows the world state in every prompt, in the Additional
// Context section, so the model knows who it talks to, the project, goals
// and standing rules (and can change them with world_apply_ops).
type worldContext struct{ store *world.Store }

func (worldContext) ContextPriority() int { return worldContextPriority }

func (w worldContext) PromptContext(context.Context, extension.ContextRequest) (string, error) {
	s := w.store.Get().Summary()
	if s == "" {
		return "", nil
	}
	return "## World state\n" + s, nil
}

var _ extension.ContextProvider = worldContext{}
