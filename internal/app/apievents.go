package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/eventbus"
)

type apiEvents struct {
	bus *eventbus.Bus
	db  *sql.DB
}

func (e apiEvents) Watch(ctx context.Context, prefix string, buffer int) <-chan extension.Event {
	return e.bus.Watch(ctx, prefix, buffer)
}

func (e apiEvents) Recent(ctx context.Context, prefix string, afterID int64, limit int) ([]extension.Event, error) {
	evs, err := e.bus.Recent(ctx, prefix, afterID, limit)
	if errors.Is(err, eventbus.ErrInvalidTopic) {
		err = fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return evs, err
}

// Last finds the id before the limit-th newest matching event (reading the
// event log's table directly) and pages forward from it.
func (e apiEvents) Last(ctx context.Context, prefix string, limit int) ([]extension.Event, error) {
	var after sql.NullInt64
	err := e.db.QueryRowContext(ctx, `
		SELECT id FROM events WHERE (?1 = '' OR (topic >= ?1 AND topic < ?2))
		ORDER BY id DESC LIMIT 1 OFFSET ?3`, prefix, prefix+"\xff", limit-1).Scan(&after)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		after.Int64 = 0 // fewer than limit: all of them
	case err != nil:
		return nil, fmt.Errorf("read the newest events: %w", err)
	default:
		after.Int64--
	}
	return e.Recent(ctx, prefix, after.Int64, limit)
}
