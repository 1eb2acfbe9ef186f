package memory

import (
	"context"
	"testing"
)

// A split store writes episodes to one store and every other memory to the
// other, keeping the ids in the batch's order; recall interleaves the two
// rankings, the facts' first; listing is the episodes' store's.
func TestSplitStore(t *testing.T) {
	ctx := context.Background()
	facts, _, _ := newStore(t)
	eps, _, _ := newStore(t)
	s := NewSplit(facts, eps)
	ids, err := s.AddBatch(ctx, []Memory{
		{Text: "The user's sister Ana lives in Porto.", Kind: KindFact},
		{Text: "Ana called from Porto today", Kind: KindEpisode, Role: RoleUser, Thread: "web:1"},
		{Text: "The user prefers green tea.", Kind: KindPreference},
		{Text: "How lovely, say hi to Ana", Kind: KindEpisode, Role: RoleAssistant, Thread: "web:1"},
	})
	if err != nil || len(ids) != 4 {
		t.Fatalf("ids %v, %v", ids, err)
	}
	for i, tc := range []struct {
		store Store
		text  string
	}{{facts, "The user's sister Ana lives in Porto."}, {eps, "Ana called from Porto today"}, {facts, "The user prefers green tea."}, {eps, "How lovely, say hi to Ana"}} {
		m, err := tc.store.Get(ctx, ids[i])
		if err != nil || m.Text != tc.text {
			t.Errorf("memory %d (#%d): %q, %v; want %q in its store", i, ids[i], m.Text, err, tc.text)
		}
	}
	if n, _ := facts.Count(ctx, false); n != 2 {
		t.Errorf("%d memories in the facts' store, want 2", n)
	}
	if n, _ := eps.Count(ctx, false); n != 2 {
		t.Errorf("%d memories in the episodes' store, want 2", n)
	}

	res, err := s.Recall(ctx, Query{Text: "Ana Porto", Limit: 3, Peek: true})
	if err != nil || len(res) != 3 {
		t.Fatalf("recall: %+v, %v", res, err)
	}
	if res[0].Kind != KindFact || res[1].Kind != KindEpisode {
		t.Errorf("recall order: %q, %q; want a fact, then an episode", res[0].Text, res[1].Text)
	}
	if only, err := s.Recall(ctx, Query{Text: "Ana Porto", Kinds: []Kind{KindEpisode}, Peek: true}); err != nil || len(only) != 2 ||
		only[0].Kind != KindEpisode || only[1].Kind != KindEpisode {
		t.Errorf("recall of episodes only: %+v, %v", only, err)
	}
	listed, err := s.List(ctx, Filter{})
	if err != nil || len(listed) != 2 || listed[0].Kind != KindEpisode {
		t.Errorf("list: %+v, %v; want the two episodes", listed, err)
	}
}
