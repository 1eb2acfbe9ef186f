package cli

import (
	"context"
	"fmt"

	"github.com/reverie-ai/reverie/api"
)

// messagePage is how many messages LastUserMessage reads at a time.
const messagePage = 1000

// lastUserMessage pages through a conversation (read returns the messages
// after an id, oldest first, at most messagePage) and returns the last
// message the user wrote: not a system event, not archived.
func lastUserMessage(ctx context.Context, read func(ctx context.Context, afterID int64) ([]api.Message, error)) (api.Message, bool, error) {
	var (
		last  api.Message
		found bool
		after int64
	)
	for {
		page, err := read(ctx, after)
		if err != nil {
			return api.Message{}, false, fmt.Errorf("read the conversation: %w", err)
		}
		for _, m := range page {
			if m.Role == "user" && !m.SystemEvent && !m.Archived {
				last, found = m, true
			}
		}
		if len(page) < messagePage || page[len(page)-1].ID <= after {
			return last, found, nil
		}
		after = page[len(page)-1].ID
	}
}
