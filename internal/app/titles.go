package app

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/llm"
)

// titleTimeout bounds the model call that writes a title.
const titleTimeout = 20 * time.Second

// titleGenerator is router.Titler for conversations.titles: model: after
// the first reply of a conversation whose title came from its first
// message, one call of the configured role writes a short title. A title
// the user chose is never replaced; a failed call keeps the first-message
// title.
type titleGenerator struct {
	store *conversation.Store
	model interface {
		Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
	}
	log *slog.Logger
}

const titleInstruction = "Write a title of at most six words for the conversation that starts below, in its language. Answer with the title only: no quotes, no final punctuation."

func (g titleGenerator) Title(ctx context.Context, thread chat.ThreadID, message, reply string) {
	th, ok, err := g.store.Thread(ctx, thread)
	if err != nil || !ok || th.TitleSource != conversation.TitleFromMessage {
		return
	}
	hist, err := g.store.History(ctx, thread)
	if err != nil {
		return
	}
	users := 0
	for _, m := range hist {
		if m.Message.Role == llm.RoleUser && m.Source == conversation.SourceConversation {
			users++
		}
	}
	if users != 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), titleTimeout)
	defer cancel()
	text := "User: " + prompt.MidTruncate(cmp.Or(conversation.UserWords(message), message), 1500) + "\n\nAssistant: " + prompt.MidTruncate(reply, 1500)
	resp, err := g.model.Generate(ctx, llm.Request{System: titleInstruction, Messages: []llm.Message{llm.UserText(text)}, ToolChoice: llm.ToolChoiceNone}, nil)
	if err != nil {
		g.log.Warn("could not write a title for the conversation; it keeps its first message as title", "thread", thread, "err", err)
		return
	}
	title := strings.TrimSpace(resp.Message.Text())
	if i := strings.IndexByte(title, '\n'); i >= 0 {
		title = title[:i]
	}
	if _, err := g.store.SetGeneratedTitle(ctx, thread, title); err != nil {
		g.log.Warn("could not store the conversation's title", "thread", thread, "err", err)
	}
}

// titler returns the router's Titler for the configuration: nil (titles
// from the first message, no model call) unless conversations.titles is
// model.
func (a *App) titler(cfg config.ConversationsConfig, store *conversation.Store, models *modelrouter.Router) router.Titler {
	if cfg.Titles != config.TitlesModel {
		return nil
	}
	return titleGenerator{store: store, model: models.Model(cfg.TitleRole), log: a.Logger.With("component", "titles")}
}
