package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// maxSessions bounds the signed-in browsers; signing in beyond it ends the
// oldest session.
const maxSessions = 1000

// sessions is the server-side list of browser sessions (the cookie set by
// POST /login): each is a random 256-bit id of which only the SHA-256 sum
// is kept, in memory and in the table web_sessions of reverie.db, so a
// session survives a restart and POST /logout ends it for good. Sessions
// are bound to the token: changing web.token ends them all. Safe for
// concurrent use.
type sessions struct {
	db  *sql.DB // nil: memory only
	tag string  // identifies the token the sessions were opened with
	now func() time.Time

	mu      sync.Mutex
	expires map[[32]byte]session
	seq     uint64 // orders sessions opened in the same second
}

type session struct {
	expires time.Time
	seq     uint64
	ended   chan struct{} // closed when the session is revoked or dropped
}

// sessionSchema is the table (created here: one table needs no migration
// history; a future change adds a column with ALTER TABLE … ADD COLUMN).
const sessionSchema = `CREATE TABLE IF NOT EXISTS web_sessions (
	id_sum     BLOB    PRIMARY KEY,
	token_tag  TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
)`

// openSessions loads the live sessions of token from db (nil keeps them
// in memory only) and deletes the others.
func openSessions(ctx context.Context, db *sql.DB, token string, now func() time.Time) (*sessions, error) {
	tag := sha256.Sum256([]byte("reverie web session tag v1\x00" + token))
	s := &sessions{db: db, tag: hex.EncodeToString(tag[:8]), now: now, expires: map[[32]byte]session{}}
	if db == nil {
		return s, nil
	}
	if _, err := db.ExecContext(ctx, sessionSchema); err != nil {
		return nil, fmt.Errorf("create the web session table: %w", err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM web_sessions WHERE token_tag <> ? OR expires_at <= ?`,
		s.tag, now().Unix()); err != nil {
		return nil, fmt.Errorf("drop ended web sessions: %w", err)
	}
	err := extension.Each(ctx, db, func(rows *sql.Rows) error {
		var (
			sum []byte
			exp int64
		)
		if err := rows.Scan(&sum, &exp); err != nil {
			return err
		}
		if len(sum) == 32 {
			s.seq++
			s.expires[[32]byte(sum)] = session{time.Unix(exp, 0), s.seq, make(chan struct{})}
		}
		return nil
	}, `SELECT id_sum, expires_at FROM web_sessions`)
	if err != nil {
		return nil, fmt.Errorf("load web sessions: %w", err)
	}
	return s, nil
}

// create opens a session and returns the cookie value.
func (s *sessions) create(ctx context.Context) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("open a session: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	sum := sessionSum(id)
	now := s.now()
	exp := now.Add(sessionMaxAge)
	s.mu.Lock()
	defer s.mu.Unlock()
	var drop [][32]byte
	for k, e := range s.expires {
		if !e.expires.After(now) {
			drop = append(drop, k)
		}
	}
	if len(s.expires)-len(drop) >= maxSessions {
		// The session closest to its end is the oldest.
		var oldest [32]byte
		var at *session
		for k, e := range s.expires {
			if at == nil || e.expires.Before(at.expires) || (e.expires.Equal(at.expires) && e.seq < at.seq) {
				oldest, at = k, &e
			}
		}
		drop = append(drop, oldest)
	}
	if s.db != nil {
		err := s.tx(ctx, func(tx *sql.Tx) error {
			for _, k := range drop {
				if _, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE id_sum = ?`, k[:]); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (id_sum, token_tag, created_at, expires_at) VALUES (?, ?, ?, ?)`,
				sum[:], s.tag, now.Unix(), exp.Unix())
			return err
		})
		if err != nil {
			return "", fmt.Errorf("store the session: %w", err)
		}
	}
	for _, k := range drop {
		close(s.expires[k].ended)
		delete(s.expires, k)
	}
	s.seq++
	s.expires[sum] = session{exp, s.seq, make(chan struct{})}
	return id, nil
}

func (s *sessions) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// count is the number of live sessions.
func (s *sessions) count() int {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.expires {
		if e.expires.After(now) {
			n++
		}
	}
	return n
}

// sessionSum is what is kept of a session id.
func sessionSum(id string) [32]byte { return sha256.Sum256([]byte(id)) }

// valid reports whether id is a live session.
func (s *sessions) valid(id string) bool {
	if id == "" {
		return false
	}
	sum := sessionSum(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.expires[sum]
	return ok && e.expires.After(s.now())
}

// revoke ends session id (an unknown id is not an error).
func (s *sessions) revoke(ctx context.Context, id string) error {
	sum := sessionSum(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.expires[sum]
	if !ok {
		return nil
	}
	if s.db != nil {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM web_sessions WHERE id_sum = ?`, sum[:]); err != nil {
			return fmt.Errorf("end the session: %w", err)
		}
	}
	close(e.ended)
	delete(s.expires, sum)
	return nil
}

// ended returns a channel closed when session id ends (revoked, or
// dropped to make room); nil (never ready) for an unknown id.
func (s *sessions) ended(id string) <-chan struct{} {
	sum := sessionSum(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.expires[sum]; ok {
		return e.ended
	}
	return nil
}
