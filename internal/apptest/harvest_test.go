package apptest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// After the configured number of user messages, the memory harvest starts a
// worker with the transcript; the worker stores the fact it finds with
// harvest_memory (a tool the main agent is never offered), the fact is
// labelled source harvest (GET /api/v1/memories?source=harvest lists it),
// and the harvest is in the interaction log.
func TestMemoryHarvestEndToEnd(t *testing.T) {
	app := StartWeb(t, WithEnv("REVERIE_HARVEST__MESSAGE_THRESHOLD=3"))
	h := app.Harness
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := h.App.Bus.Watch(ctx, workflow.TopicCompleted, 4)
	var prompt string
	var mu sync.Mutex
	offered := map[string]bool{} // harvest_memory offered: worker / main agent
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		sys := systemText(req)
		worker := strings.Contains(sys, "store every durable personal fact")
		for _, tl := range req.Tools {
			if tl.Function.Name == memory.HarvestToolName {
				mu.Lock()
				offered[map[bool]string{true: "worker", false: "main"}[worker]] = true
				mu.Unlock()
			}
		}
		if worker {
			prompt = sys
			tools := 0
			for _, m := range req.Messages {
				if m.Role == "tool" {
					tools++
				}
			}
			switch tools {
			case 1: // the same call keeps the world state's topics
				args, _ := json.Marshal(map[string]any{"ops": []map[string]string{{"op": "add_topic", "value": "Ana's move to Porto"}}})
				return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "c2", Name: world.ToolName, Arguments: args}}}
			case 2:
				return llmtest.ServerReply{Text: "Stored 1 fact and updated the topics."}
			}
			args, _ := json.Marshal(map[string]any{"text": "The user's sister Ana lives in Porto.", "keep_in_view": false})
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: memory.HarvestToolName, Arguments: args}}}
		}
		return llmtest.ServerReply{Text: "ok"}
	})
	for _, m := range []string{"hi", "my sister Ana moved to Porto last year", "anyway, what's the weather like?"} {
		h.Send(t, "bob", m)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("no harvest worker completed")
	}
	if !strings.Contains(prompt, "User: my sister Ana moved to Porto last year") || strings.Contains(prompt, "SYSTEM EVENT") ||
		!strings.Contains(prompt, "World state now:") || !strings.Contains(prompt, "bring the world state's topics up to date") {
		t.Errorf("worker prompt:\n%s", prompt)
	}
	mu.Lock()
	if !offered["worker"] || offered["main"] {
		t.Errorf("harvest_memory offered to %v; want the harvest worker only", offered)
	}
	mu.Unlock()
	var listed api.MemoryList
	app.JSON(t, http.MethodGet, "/memories?source=harvest", nil, http.StatusOK, &listed)
	if len(listed.Memories) != 1 || listed.Memories[0].Text != "The user's sister Ana lives in Porto." || listed.Memories[0].Source != "harvest" {
		t.Errorf("GET /memories?source=harvest: %+v", listed.Memories)
	}
	res, err := h.App.Memory.Search(ctx, memory.Query{Text: "where does Ana live", Peek: true})
	if err != nil || len(res) == 0 || !strings.Contains(res[0].Memory.Text, "Porto") {
		t.Fatalf("memory after harvest: %+v, %v", res, err)
	}
	if topics := h.App.World.Get().Topics; !slices.Contains(topics, "Ana's move to Porto") {
		t.Errorf("world state topics after the harvest: %q", topics)
	}
	entries, err := h.App.Interactions.List(ctx, interactions.Filter{Action: interactions.ActionMemoryHarvest})
	if err != nil || len(entries) != 1 || entries[0].Thread != "test:bob" {
		t.Fatalf("harvest log: %+v, %v", entries, err)
	}
}
