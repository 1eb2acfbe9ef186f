package conversation

import (
	"context"
	"fmt"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
)

// BenchmarkPerTurnReads measures the store reads every turn makes (History,
// LastMessageID, CountUserMessagesSince) on a thread of 20 and of 2,000
// messages: none may grow with the thread.
func BenchmarkPerTurnReads(b *testing.B) {
	for _, n := range []int{20, 2000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, _, _ := newStore(b)
			const thread chat.ThreadID = "web:bench"
			msgs := make([]llm.Message, n)
			for i := range msgs {
				msgs[i] = llm.UserText(fmt.Sprintf("message %d about the garden", i))
			}
			if _, err := s.Append(ctx, thread, msgs...); err != nil {
				b.Fatal(err)
			}
			last, err := s.LastMessageID(ctx, thread)
			if err != nil {
				b.Fatal(err)
			}
			for _, read := range []struct {
				name string
				f    func() error
			}{
				{"History", func() error { _, err := s.History(ctx, thread); return err }},
				{"LastMessageID", func() error { _, err := s.LastMessageID(ctx, thread); return err }},
				{"CountUserMessagesSince", func() error { _, err := s.CountUserMessagesSince(ctx, thread, last-3); return err }},
			} {
				b.Run(read.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := read.f(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
