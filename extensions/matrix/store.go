package matrix

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// component names this extension's migrations in schema_migrations.
const component = "matrix"

// dbTimeout bounds every statement.
const dbTimeout = 10 * time.Second

// store is the channel's tables in the shared database.
type store struct {
	db  *sql.DB
	now func() time.Time
}

func (s *store) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
}

// value reads a matrix_state key ("" when absent).
func (s *store) value(ctx context.Context, key string) (string, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM matrix_state WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read matrix %s: %w", key, err)
	}
	return v, nil
}

func (s *store) setValue(ctx context.Context, key, v string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx,
		`INSERT INTO matrix_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, v); err != nil {
		return fmt.Errorf("store matrix %s: %w", key, err)
	}
	return nil
}

// handled reports whether the router accepted the event already: it
// records the id of every message a channel hands it (chat.Inbound.ID) in
// router_seen, which migration 003 made sure exists. Only read here: a
// batch fetched again skips the events it accepted (no second download),
// and an event that can no longer be decrypted, but was answered, is not
// reported to its sender.
func (s *store) handled(ctx context.Context, eventID string) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM router_seen WHERE channel = ? AND message_id = ?`, ChannelName, eventID).Scan(&n); err != nil {
		return false, fmt.Errorf("check matrix event %s: %w", eventID, err)
	}
	return n > 0, nil
}

// floor returns the time (Unix ms) before which a room's messages are not
// answered, and whether one is set.
func (s *store) floor(ctx context.Context, roomID string) (int64, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT floor_ms FROM matrix_rooms WHERE room_id = ?`, roomID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read matrix room %s: %w", roomID, err)
	}
	return v, true, nil
}

// setFloor sets a room's floor unless it has one.
func (s *store) setFloor(ctx context.Context, roomID string, ms int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO matrix_rooms (room_id, floor_ms) VALUES (?, ?)`, roomID, ms); err != nil {
		return fmt.Errorf("store matrix room %s: %w", roomID, err)
	}
	return nil
}

// storedPending is a row of matrix_pending.
type storedPending struct {
	id    string
	event []byte
}

// addPending keeps an encrypted event waiting for its key.
func (s *store) addPending(ctx context.Context, eventID, roomID string, event []byte, since time.Time) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO matrix_pending (event_id, room_id, event, since_ms) VALUES (?, ?, ?, ?)`,
		eventID, roomID, string(event), since.UnixMilli()); err != nil {
		return fmt.Errorf("keep matrix event %s for a retry: %w", eventID, err)
	}
	return nil
}

// removePending forgets a waiting event (read, or given up on).
func (s *store) removePending(ctx context.Context, eventID string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM matrix_pending WHERE event_id = ?`, eventID); err != nil {
		return fmt.Errorf("forget matrix event %s: %w", eventID, err)
	}
	return nil
}

// pendingEvents returns the waiting events, oldest first.
func (s *store) pendingEvents(ctx context.Context) ([]storedPending, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := extension.Rows(ctx, s.db, func(row extension.Scanner) (storedPending, error) {
		var evID, ev string
		err := row.Scan(&evID, &ev)
		return storedPending{id: evID, event: []byte(ev)}, err
	}, `SELECT event_id, event FROM matrix_pending ORDER BY since_ms`)
	if err != nil {
		return nil, fmt.Errorf("read the waiting matrix events: %w", err)
	}
	return out, nil
}
