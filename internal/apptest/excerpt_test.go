package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// sandalsReply is a long reply with one sentence about the sneakers among
// many about sandals.
var sandalsReply = strings.Join([]string{
	"Great question about sandals!",
	"Teva and Merrell both make durable straps that last for years, and their latest collections are worth a look.",
	"Chaco is another brand known for adjustable straps and a lifetime repair programme.",
	"For stores, REI and Zappos carry all three and have generous return policies.",
	"As for your old sneakers, a shoe rack in the closet keeps them aired out and stops the smell.",
	"Baking soda overnight helps too.",
	"When you shop, try sandals on in the afternoon, when your feet are at their largest.",
	"Look for a contoured footbed and a heel strap if you plan to hike.",
	"Check the stitching where the straps meet the sole, since that is where cheap pairs fail first.",
	"Finally, break new sandals in gradually over a week or two.",
}, " ")

// A long reply the assistant gave reaches a later turn's prompt as an
// excerpt (the sentences about the new message, labelled so), while the
// memory itself, as the API serves it, is whole.
func TestRecallExcerptEndToEnd(t *testing.T) {
	h := StartWeb(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := h.App.Bus.Watch(ctx, agent.TopicTurnCompleted, 4)
	var mu sync.Mutex
	var reqs []llmtest.ChatRequest
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
		if len(reqs) == 1 {
			return llmtest.ServerReply{Text: sandalsReply}
		}
		return llmtest.ServerReply{Text: "Noted."}
	})
	h.Send(t, "shop", "Can you recommend durable sandals? Also my old sneakers smell.")
	h.Channel.WaitFor(t, "shop", 1)
	waitUserTurn(ctx, t, done) // the episodes are stored
	h.Send(t, "later", "Where did you say I should keep my old sneakers?")
	h.Channel.WaitFor(t, "later", 1)

	mu.Lock()
	var p evidence.Packet
	found := false
	for _, r := range reqs[1:] {
		if p, found = recallPacket(t, r); found {
			break
		}
	}
	mu.Unlock()
	if !found {
		t.Fatal("the second turn's prompt has no recalled memories")
	}
	var line *evidence.Item
	for i, it := range p.Items {
		if strings.Contains(it.Text, "shoe rack") {
			line = &p.Items[i]
		}
	}
	if line == nil {
		t.Fatalf("the prompt lacks the reply's sentence about the sneakers: %+v", p.Items)
	}
	if line.Label != "episode, "+memory.ExcerptLabel || strings.Contains(line.Text, "Teva") || !strings.Contains(line.Text, memory.ExcerptGap) {
		t.Errorf("the reply's line is not an excerpt: %+v", *line)
	}
	if p.Title != memory.RecallTitle+memory.RecallExcerptNote {
		t.Errorf("packet title %q does not say what an excerpt is", p.Title)
	}

	// The stored memory, as GET /api/v1/memories/{id} serves it, is whole.
	eps, err := h.App.Memory.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	for _, e := range eps {
		if e.Role == memory.RoleAssistant && strings.Contains(e.Text, "shoe rack") {
			id = e.ID
		}
	}
	if id == 0 {
		t.Fatalf("no stored reply episode: %+v", eps)
	}
	var got api.Memory
	h.JSON(t, http.MethodGet, fmt.Sprintf("/memories/%d", id), nil, http.StatusOK, &got)
	if got.Text != sandalsReply {
		t.Errorf("GET /memories/%d text = %q, want the whole reply", id, got.Text)
	}
}

// waitUserTurn waits for the turn.completed event of a user's turn.
func waitUserTurn(ctx context.Context, t *testing.T, done <-chan extension.Event) {
	t.Helper()
	for {
		select {
		case ev := <-done:
			var p struct {
				Kind agent.Kind `json:"kind"`
			}
			if json.Unmarshal(ev.Payload, &p) == nil && p.Kind == agent.KindUser {
				return
			}
		case <-ctx.Done():
			t.Fatal("the turn did not complete")
		}
	}
}
