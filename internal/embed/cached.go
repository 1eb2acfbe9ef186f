package embed

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/sqlite"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// cacheChunk bounds the number of keys per lookup query (SQLite's variable
// limit is far higher; this keeps statements small).
const cacheChunk = 200

// Cached wraps an Embedder with a persistent cache keyed by
// sha256(model id + text), so a text is embedded once per model. Misses of a
// call are sent to the wrapped embedder as one batch. Safe for concurrent
// use.
type Cached struct {
	inner Embedder
	db    *sql.DB
	now   func() time.Time
}

// NewCached migrates the "embed" component in db (through m, the start's
// shared record of applied migrations; nil: on its own) and returns the
// caching embedder.
func NewCached(ctx context.Context, e Embedder, db *sql.DB, m *sqlite.Migrations) (*Cached, error) {
	sub, err := fsSub()
	if err != nil {
		return nil, err
	}
	if err := m.Migrate(ctx, db, "embed", sub, "."); err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	return &Cached{inner: e, db: db, now: time.Now}, nil
}

// Dimensions returns the wrapped embedder's dimensions.
func (c *Cached) Dimensions() int { return c.inner.Dimensions() }

// ID returns the wrapped embedder's identity (the cache is transparent).
func (c *Cached) ID() string { return c.inner.ID() }

func cacheKey(model, text string) []byte {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return h.Sum(nil)
}

// Embed returns cached vectors where present and embeds the misses (each
// distinct text once) in one call to the wrapped embedder, storing them.
func (c *Cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := c.inner.ID()
	dims := c.inner.Dimensions()
	keys := make([][]byte, len(texts))
	for i, t := range texts {
		keys[i] = cacheKey(model, t)
	}
	found := make(map[string][]float32, len(texts))
	for start := 0; start < len(keys); start += cacheChunk {
		end := min(start+cacheChunk, len(keys))
		args := make([]any, 0, end-start)
		for _, k := range keys[start:end] {
			args = append(args, k)
		}
		q := `SELECT key, vector FROM embed_cache WHERE key IN (?` + strings.Repeat(",?", end-start-1) + `)`
		rows, err := c.db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("read embedding cache: %w", err)
		}
		for rows.Next() {
			var k, blob []byte
			if err := rows.Scan(&k, &blob); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read embedding cache: %w", err)
			}
			v, err := Decode(blob)
			if err != nil || len(v) != dims {
				continue // stale or corrupt entry: re-embed it
			}
			found[string(k)] = v
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read embedding cache: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read embedding cache: %w", err)
		}
	}
	var missTexts []string
	var missKeys [][]byte
	seen := map[string]bool{}
	for i, k := range keys {
		if _, ok := found[string(k)]; ok || seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		missTexts = append(missTexts, texts[i])
		missKeys = append(missKeys, k)
	}
	if len(missTexts) > 0 {
		vecs, err := c.inner.Embed(ctx, missTexts)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(missTexts) {
			return nil, fmt.Errorf("embed with %s: got %d vectors for %d texts", model, len(vecs), len(missTexts))
		}
		now := c.now().UnixMilli()
		err = sqlite.Tx(ctx, c.db, func(tx *sql.Tx) error {
			stmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO embed_cache (key, model, vector, created_at) VALUES (?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer stmt.Close()
			for i, v := range vecs {
				if len(v) != dims {
					return fmt.Errorf("vector %d has %d dimensions, want %d: %w", i, len(v), dims, ErrDimensions)
				}
				if _, err := stmt.ExecContext(ctx, missKeys[i], model, Encode(v), now); err != nil {
					return err
				}
				found[string(missKeys[i])] = v
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("write embedding cache: %w", err)
		}
	}
	out := make([][]float32, len(texts))
	for i, k := range keys {
		v := found[string(k)]
		cp := make([]float32, len(v))
		copy(cp, v)
		out[i] = cp
	}
	return out, nil
}

// Prune deletes cached vectors of every model other than the current one and
// returns how many rows were removed.
func (c *Cached) Prune(ctx context.Context) (int64, error) {
	res, err := c.db.ExecContext(ctx, `DELETE FROM embed_cache WHERE model <> ?`, c.inner.ID())
	if err != nil {
		return 0, fmt.Errorf("prune embedding cache: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
