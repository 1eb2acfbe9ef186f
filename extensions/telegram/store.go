package telegram

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// component names this extension's migrations in schema_migrations.
const component = "telegram"

// Pairing limits.
const (
	// codeAlphabet has no 0/O or 1/I: codes are read aloud and typed.
	codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	codeLen      = 8
	// maxPending bounds the codes waiting at once (strangers cannot fill
	// the table).
	maxPending = 50
	// remindEvery spaces the "still waiting" answers to one stranger.
	remindEvery = time.Minute
	// dbTimeout bounds every statement.
	dbTimeout = 10 * time.Second
)

// store is the channel's tables in the shared database.
type store struct {
	db  *sql.DB
	now func() time.Time
	ttl time.Duration // of new pairing codes
}

// OpenStore migrates the channel's tables in db (the data dir's
// reverie.db) and returns the pairing store `reverie telegram` uses.
func OpenStore(ctx context.Context, db *sql.DB, now func() time.Time) (*Store, error) {
	if err := migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{s: &store{db: db, now: now, ttl: time.Hour}}, nil
}

// Store is the pairing store for the command line (`reverie telegram`).
type Store struct{ s *store }

// Approve lets in the person who was given code (see Telegram.ApprovePairing);
// the running channel tells them at its next poll.
func (s *Store) Approve(ctx context.Context, code string) (extension.Paired, error) {
	return s.s.approve(ctx, code)
}

// Clear removes every waiting pairing code and returns how many there
// were (a flood of strangers: see Telegram's notice).
func (s *Store) Clear(ctx context.Context) (int64, error) {
	ctx, cancel := s.s.ctx(ctx)
	defer cancel()
	res, err := s.s.db.ExecContext(ctx, `DELETE FROM telegram_pairing`)
	if err != nil {
		return 0, fmt.Errorf("pairing: clear the waiting codes: %w", err)
	}
	return res.RowsAffected()
}

// Pending lists the pairing requests waiting for the owner.
func (s *Store) Pending(ctx context.Context) ([]PairingRequest, error) { return s.s.pending(ctx) }

// PairingRequest is a person waiting for the owner's approval (the code
// itself is not kept).
type PairingRequest struct {
	UserID  int64
	Name    string
	Created time.Time
	Expires time.Time
}

func (s *store) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
}

// offset is the next update id to ask for (0: none stored).
func (s *store) offset(ctx context.Context) (int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT value FROM telegram_state WHERE key = 'offset'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the telegram offset: %w", err)
	}
	return v, nil
}

func (s *store) setOffset(ctx context.Context, v int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx,
		`INSERT INTO telegram_state (key, value) VALUES ('offset', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, v); err != nil {
		return fmt.Errorf("store the telegram offset: %w", err)
	}
	return nil
}

// approved reports whether user was let in by pairing.
func (s *store) approved(ctx context.Context, user int64) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM telegram_users WHERE user_id = ?`, user).Scan(&n); err != nil {
		return false, fmt.Errorf("check telegram user %d: %w", user, err)
	}
	return n > 0, nil
}

func hashCode(code string) string {
	sum := sha256.Sum256([]byte(normaliseCode(code)))
	return hex.EncodeToString(sum[:])
}

// normaliseCode accepts a code typed with spaces, dashes or lower case.
func normaliseCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, code)
}

func newCode() (string, error) {
	var raw [codeLen]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	b := make([]byte, codeLen)
	for i, v := range raw {
		b[i] = codeAlphabet[int(v)%len(codeAlphabet)]
	}
	return string(b), nil
}

// pairingAnswer is what to tell a stranger.
type pairingAnswer struct {
	code    string    // a new code ("" when one is pending)
	expires time.Time // of the new or pending code
	remind  bool      // a code is pending and it is time to say so again
	full    bool      // too many codes pending: none was made
}

// request gives user a pairing code, or reports the pending one.
func (s *store) request(ctx context.Context, user, chatID int64, name string) (pairingAnswer, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return pairingAnswer{}, fmt.Errorf("pairing: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `DELETE FROM telegram_pairing WHERE expires_at <= ?`, now.UnixNano()); err != nil {
		return pairingAnswer{}, fmt.Errorf("pairing: prune expired codes: %w", err)
	}
	var expires, lastSent int64
	err = tx.QueryRowContext(ctx, `SELECT expires_at, last_sent_at FROM telegram_pairing WHERE user_id = ?`, user).Scan(&expires, &lastSent)
	switch {
	case err == nil:
		ans := pairingAnswer{expires: time.Unix(0, expires)}
		if now.Sub(time.Unix(0, lastSent)) >= remindEvery {
			ans.remind = true
			if _, err := tx.ExecContext(ctx, `UPDATE telegram_pairing SET last_sent_at = ? WHERE user_id = ?`, now.UnixNano(), user); err != nil {
				return pairingAnswer{}, fmt.Errorf("pairing: %w", err)
			}
		}
		return ans, tx.Commit()
	case !errors.Is(err, sql.ErrNoRows):
		return pairingAnswer{}, fmt.Errorf("pairing: %w", err)
	}
	var pending int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM telegram_pairing`).Scan(&pending); err != nil {
		return pairingAnswer{}, fmt.Errorf("pairing: %w", err)
	}
	if pending >= maxPending {
		return pairingAnswer{full: true}, nil
	}
	code, err := newCode()
	if err != nil {
		return pairingAnswer{}, fmt.Errorf("pairing: make a code: %w", err)
	}
	exp := now.Add(s.ttl)
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO telegram_pairing (code_hash, user_id, chat_id, name, created_at, expires_at, last_sent_at) VALUES (?,?,?,?,?,?,?)`,
		hashCode(code), user, chatID, name, now.UnixNano(), exp.UnixNano(), now.UnixNano()); err != nil {
		return pairingAnswer{}, fmt.Errorf("pairing: store the code: %w", err)
	}
	return pairingAnswer{code: code, expires: exp}, tx.Commit()
}

// codeRefused is approve's refusal of a code that says why in its own
// words (an extension.ErrPairingCode, without that error's "unknown, used
// or expired pairing code" in front). Whoever shows it adds how the person
// gets a new code.
type codeRefused string

func (e codeRefused) Error() string { return string(e) }
func (e codeRefused) Unwrap() error { return extension.ErrPairingCode }

// approve consumes code and lets its person in.
func (s *store) approve(ctx context.Context, code string) (extension.Paired, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	code = normaliseCode(code)
	if len(code) != codeLen || strings.Trim(code, codeAlphabet) != "" {
		return extension.Paired{}, codeRefused(fmt.Sprintf("%q is not a pairing code (%d letters and digits)", code, codeLen))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return extension.Paired{}, fmt.Errorf("approve: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var (
		user, chatID, expires int64
		name                  string
	)
	err = tx.QueryRowContext(ctx, `SELECT user_id, chat_id, name, expires_at FROM telegram_pairing WHERE code_hash = ?`, hashCode(code)).
		Scan(&user, &chatID, &name, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return extension.Paired{}, fmt.Errorf("%w: %s", extension.ErrPairingCode, code)
	}
	if err != nil {
		return extension.Paired{}, fmt.Errorf("approve: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM telegram_pairing WHERE code_hash = ?`, hashCode(code)); err != nil {
		return extension.Paired{}, fmt.Errorf("approve: %w", err)
	}
	if !s.now().Before(time.Unix(0, expires)) {
		if err := tx.Commit(); err != nil {
			return extension.Paired{}, fmt.Errorf("approve: %w", err)
		}
		return extension.Paired{}, codeRefused("pairing code " + code + " has expired")
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO telegram_users (user_id, chat_id, name, approved_at) VALUES (?,?,?,?)
		 ON CONFLICT (user_id) DO UPDATE SET chat_id = excluded.chat_id, name = excluded.name, approved_at = excluded.approved_at, notified = 0`,
		user, chatID, name, s.now().UnixNano()); err != nil {
		return extension.Paired{}, fmt.Errorf("approve: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return extension.Paired{}, fmt.Errorf("approve: %w", err)
	}
	return extension.Paired{Channel: ChannelName, UserID: strconv.FormatInt(user, 10), Name: name}, nil
}

// unnotified returns approved people not yet told, as user → chat.
func (s *store) unnotified(ctx context.Context) (map[int64]int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out := map[int64]int64{}
	err := extension.Each(ctx, s.db, func(rows *sql.Rows) error {
		var u, c int64
		if err := rows.Scan(&u, &c); err != nil {
			return err
		}
		out[u] = c
		return nil
	}, `SELECT user_id, chat_id FROM telegram_users WHERE notified = 0`)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return out, nil
}

func (s *store) markNotified(ctx context.Context, user int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, `UPDATE telegram_users SET notified = 1 WHERE user_id = ?`, user)
	return err
}

func (s *store) pending(ctx context.Context) ([]PairingRequest, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	out, err := extension.Rows(ctx, s.db, func(row extension.Scanner) (PairingRequest, error) {
		var r PairingRequest
		var c, e int64
		err := row.Scan(&r.UserID, &r.Name, &c, &e)
		r.Created, r.Expires = time.Unix(0, c), time.Unix(0, e)
		return r, err
	}, `SELECT user_id, name, created_at, expires_at FROM telegram_pairing WHERE expires_at > ? ORDER BY created_at`, s.now().UnixNano())
	if err != nil {
		return nil, fmt.Errorf("read pairing requests: %w", err)
	}
	return out, nil
}

// migrate applies the embedded migrations (extension.Migrate).
func migrate(ctx context.Context, db *sql.DB) error {
	return extension.Migrate(ctx, db, component, migrationFiles, "migrations")
}
