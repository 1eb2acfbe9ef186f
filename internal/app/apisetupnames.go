package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/world"
)

// namesFormID is the setup form of the names: the user's and the
// assistant's, kept in the world state's identity. Memory stores them as
// the speakers of what is said on the web and of the assistant's replies.
const namesFormID = "names"

// namesForm describes the names form with the current names as defaults.
func (s apiSetup) namesForm() api.SetupForm {
	id := s.a.World.Get().Identity
	return api.SetupForm{
		ID:    namesFormID,
		Title: "Names",
		Description: "How Reverie calls you and itself (the world state's identity; the assistant can change them " +
			"when you tell it). Its memory of your conversations says who said what with these names.",
		Configured: id.UserName != "",
		Fields: []api.SetupField{
			{Key: "user_name", Label: "Your name", Kind: string(extension.FieldText), Default: id.UserName,
				Help: "what you are called on the web page and in `reverie send` (Telegram and Matrix give their own names)"},
			{Key: "agent_name", Label: "Assistant's name", Kind: string(extension.FieldText), Default: id.AgentName,
				Help: "empty: " + world.DefaultAgentName},
		},
	}
}

// applyNames saves the names in the world state.
func (s apiSetup) applyNames(ctx context.Context, values map[string]string) (string, error) {
	ops := []world.Op{world.SetUserName{UserName: strings.TrimSpace(values["user_name"])},
		world.SetAgentName{AgentName: strings.TrimSpace(values["agent_name"])}}
	if _, err := s.a.World.Apply(ctx, ops); err != nil {
		return "", fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return "Saved.", nil
}
