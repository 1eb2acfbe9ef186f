package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	vec "github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Previous builds the embedder of a model whose vectors are stored, from the
// ID they were stored under (embed.Embedder.ID), so that recall keeps using
// those vectors while Reembed makes the new model's; ok is false when that
// model cannot be built (its backend is no longer configured). The
// embedder's ID must equal id.
type Previous func(id string) (e vec.Embedder, ok bool)

// EmbeddingStatus is where the store's vectors stand (Vectors.Embedding).
type EmbeddingStatus struct {
	// Model is the configured embedding model (embed.Embedder.ID): new
	// memories and the re-embedding use it.
	Model string `json:"model"`
	// Serving is the model whose vectors recall uses: Model, or the
	// previous one while the memories are re-embedded with Model.
	Serving string `json:"serving"`
	// Dimensions of the serving model's vectors.
	Dimensions int `json:"dimensions"`
	// Pending counts the memories that have no vector of Model yet.
	Pending int `json:"pending"`
	// Running is true while Reembed runs; Done and Total are its progress.
	Running bool `json:"running"`
	Done    int  `json:"done"`
	Total   int  `json:"total"`
	// Error is the last failure of the embedding model (re-embedding, a
	// write or a query), "" after a success.
	Error string `json:"error,omitempty"`
}

// reembedState is the progress of Reembed and the last embedding failure.
type reembedState struct {
	mu          sync.Mutex
	running     bool
	done, total int
	err         string
	warned      time.Time // last warning of a failed query or write
}

// failWarnEvery bounds the warnings about a failing embedding model.
const failWarnEvery = time.Minute

// failed records an embedding failure, logging it at most once per
// failWarnEvery.
func (s *VectorStore) failed(what string, err error) {
	now := s.now()
	s.re.mu.Lock()
	s.re.err = what + ": " + err.Error()
	warn := s.re.warned.IsZero() || now.Sub(s.re.warned) >= failWarnEvery
	if warn {
		s.re.warned = now
	}
	s.re.mu.Unlock()
	if warn {
		s.log.Warn("the embedding model failed; "+what, "model", s.model, "err", err)
	}
}

func (s *VectorStore) succeeded() {
	s.re.mu.Lock()
	s.re.err = ""
	s.re.mu.Unlock()
}

// queryVector embeds a query with the serving model. It returns nil (recall
// by words only) when the model fails, and the index generation the vector
// belongs to.
func (s *VectorStore) queryVector(ctx context.Context, text string) ([]float32, uint64) {
	s.rlock()
	e, model, gen := s.serve, s.serveModel, s.gen
	s.mu.RUnlock()
	vs, err := e.Embed(ctx, []string{text})
	if err == nil && len(vs) != 1 {
		err = fmt.Errorf("%d vectors for 1 text", len(vs))
	}
	if err != nil {
		if ctx.Err() == nil {
			s.failed("recall uses words only until it answers", err)
		}
		return nil, gen
	}
	keepQueryVector(ctx, model, text, vs[0])
	return vs[0], gen
}

// embedForWrite embeds texts with the configured model for a write. When
// the model fails, the memories are stored without vectors (nil entries):
// they are found by their words, and Reembed embeds them later. Only a
// cancelled ctx is an error. A text whose vector a recall left in ctx
// (ShareQueryVector) is not embedded again.
func (s *VectorStore) embedForWrite(ctx context.Context, texts []string) ([][]float32, error) {
	at, kept := takeQueryVector(ctx, s.model, texts)
	rest := texts
	if at >= 0 {
		rest = append(texts[:at:at], texts[at+1:]...)
	}
	var vs [][]float32
	var err error
	if len(rest) > 0 {
		vs, err = s.emb.Embed(ctx, rest)
	}
	if err == nil && len(vs) != len(rest) {
		err = fmt.Errorf("%d vectors for %d texts", len(vs), len(rest))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.failed("memories are stored without a vector and re-embedded later", err)
		vs = make([][]float32, len(rest))
	}
	if at >= 0 {
		vs = slices.Insert(vs, at, kept)
	}
	return vs, nil
}

// indexable is v when the index holds the configured model's vectors, nil
// while it serves the previous model's (a new model's vector never enters
// an index of another model). s.mu is held.
func (s *VectorStore) indexable(v []float32) []float32 {
	if s.serveModel != s.model {
		return nil
	}
	return v
}

// migrating reports whether recall uses the previous model's vectors while
// the memories are re-embedded.
func (s *VectorStore) migrating() bool {
	s.rlock()
	defer s.mu.RUnlock()
	return s.serveModel != s.model
}

// chooseServing decides, at open, which model's vectors recall uses: the
// previous model's while most stored vectors are of it and prev can build
// it, else the configured one. Pending vectors of another model than the
// configured one are dropped; with no migration, pending vectors of the
// configured one are moved into place.
func (s *VectorStore) chooseServing(ctx context.Context, prev Previous) error {
	// Pending vectors are rare (a re-embedding stopped midway): a read
	// spares every other open its two write transactions.
	var pending bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM memory_pending_embeddings)`).Scan(&pending); err != nil {
		return fmt.Errorf("open memory store: look for pending vectors: %w", err)
	}
	if pending {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM memory_pending_embeddings WHERE model <> ?`, s.model); err != nil {
			return fmt.Errorf("open memory store: drop stale pending vectors: %w", err)
		}
	}
	s.serve, s.serveModel = s.emb, s.model
	var (
		old       string
		nOld, nCu int
	)
	err := s.db.QueryRowContext(ctx, `SELECT embed_model, COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embed_model <> ?
		GROUP BY embed_model ORDER BY 2 DESC, 1 LIMIT 1`, s.model).Scan(&old, &nOld)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("open memory store: count vectors by model: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embed_model = ?`, s.model).Scan(&nCu); err != nil {
		return fmt.Errorf("open memory store: count vectors by model: %w", err)
	}
	if old != "" && nOld > nCu && prev != nil {
		if pe, ok := prev(old); ok && pe.ID() == old && pe.Dimensions() > 0 {
			s.serve, s.serveModel = pe, old
			s.log.Info("embedding model changed: recall uses the previous model's vectors until the memories are re-embedded",
				"previous", old, "model", s.model, "memories", nOld)
			return nil
		}
		s.log.Warn("embedding model changed and the previous one cannot be used: memories without a vector of the new model are found by their words until re-embedded",
			"previous", old, "model", s.model, "memories", nOld)
	}
	if !pending {
		return nil
	}
	return s.applyPending(ctx)
}

// applyPending moves the pending vectors of the configured model into the
// memories.
func (s *VectorStore) applyPending(ctx context.Context) error {
	return sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE memories SET
			embedding = (SELECT p.embedding FROM memory_pending_embeddings p WHERE p.id = memories.id),
			embed_model = ?1
			WHERE id IN (SELECT id FROM memory_pending_embeddings WHERE model = ?1)`, s.model); err != nil {
			return fmt.Errorf("apply re-embedded vectors: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_pending_embeddings`); err != nil {
			return fmt.Errorf("apply re-embedded vectors: %w", err)
		}
		return nil
	})
}

// staleWhere selects the memories without a vector of the configured model
// (?1), stored or pending.
const staleWhere = `(m.embed_model <> ?1 OR m.embedding IS NULL)
	AND NOT EXISTS (SELECT 1 FROM memory_pending_embeddings p WHERE p.id = m.id AND p.model = ?1)`

// StoredModels returns the embedding models of the vectors stored in db,
// the most used first (migrating the memory tables first, through m; nil:
// on their own).
func StoredModels(ctx context.Context, m *sqlite.Migrations, db *sql.DB) ([]string, error) {
	if err := migrate(ctx, m, db); err != nil {
		return nil, err
	}
	out, err := sqlite.Rows(ctx, db, sqlite.Scan1[string],
		`SELECT embed_model FROM memories WHERE embedding IS NOT NULL GROUP BY embed_model ORDER BY COUNT(*) DESC, embed_model`)
	if err != nil {
		return nil, fmt.Errorf("list embedding models: %w", err)
	}
	return out, nil
}

// StaleEmbeddings returns how many memories have no vector of the
// configured model yet (made by another model, or none at all).
func (s *VectorStore) StaleEmbeddings(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memories m WHERE `+staleWhere, s.model).Scan(&n); err != nil {
		return 0, fmt.Errorf("count stale embeddings: %w", err)
	}
	return n, nil
}

// Embedding returns where the store's vectors stand.
func (s *VectorStore) Embedding(ctx context.Context) (EmbeddingStatus, error) {
	n, err := s.StaleEmbeddings(ctx)
	s.rlock()
	st := EmbeddingStatus{Model: s.model, Serving: s.serveModel, Dimensions: s.idx.dims, Pending: n}
	s.mu.RUnlock()
	s.re.mu.Lock()
	st.Running, st.Done, st.Total, st.Error = s.re.running, s.re.done, s.re.total, s.re.err
	s.re.mu.Unlock()
	return st, err
}

// ReembedBatch is the number of memories embedded per call during Reembed.
const ReembedBatch = 64

// Reembed embeds, in batches of ReembedBatch, every memory that has no
// vector of the configured model, calling progress (when non-nil) after
// each batch. It is safe to run concurrently with reads and writes, and
// resumable: an interrupted run continues where it stopped.
//
// While the store serves the previous model's vectors (see Previous), the
// new vectors are kept aside and recall goes on with the old ones; when
// every memory has a new vector they replace the old ones in one
// transaction and the index switches model at once. Otherwise each new
// vector enters the index as it is made.
func (s *VectorStore) Reembed(ctx context.Context, progress func(done, total int)) (err error) {
	total, err := s.StaleEmbeddings(ctx)
	if err != nil {
		return err
	}
	s.re.mu.Lock()
	if s.re.running {
		s.re.mu.Unlock()
		return errors.New("re-embed memories: already running")
	}
	s.re.running, s.re.done, s.re.total = true, 0, total
	s.re.mu.Unlock()
	defer func() {
		s.re.mu.Lock()
		s.re.running = false
		if err != nil && ctx.Err() == nil {
			s.re.err = err.Error()
		}
		s.re.mu.Unlock()
	}()
	done := 0
	var after int64
	for {
		var ids []int64
		var texts []string
		err := sqlite.Each(ctx, s.db, func(rows *sql.Rows) error {
			var id int64
			var t string
			if err := rows.Scan(&id, &t); err != nil {
				return err
			}
			ids, texts = append(ids, id), append(texts, t)
			return nil
		}, `SELECT m.id, m.text FROM memories m WHERE `+staleWhere+` AND m.id > ?2 ORDER BY m.id LIMIT ?3`, s.model, after, ReembedBatch)
		if err != nil {
			return fmt.Errorf("re-embed memories: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		after = ids[len(ids)-1]
		vecs, err := s.emb.Embed(ctx, texts)
		if err == nil && len(vecs) != len(ids) {
			err = fmt.Errorf("%d vectors for %d texts", len(vecs), len(ids))
		}
		if err != nil {
			return fmt.Errorf("re-embed memories with %s: %w", s.model, err)
		}
		s.succeeded()
		if err := s.storeVectors(ctx, ids, texts, vecs); err != nil {
			return err
		}
		done += len(ids)
		total = max(total, done)
		s.re.mu.Lock()
		s.re.done, s.re.total = done, total
		s.re.mu.Unlock()
		if progress != nil {
			progress(done, total)
		}
	}
	if s.migrating() {
		return s.switchModel(ctx)
	}
	return nil
}

// storeVectors saves re-embedded vectors of memories whose text is
// unchanged since it was read: aside while migrating, else in place (and in
// the index).
func (s *VectorStore) storeVectors(ctx context.Context, ids []int64, texts []string, vecs [][]float32) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	aside := s.migrating()
	var changed []int
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		changed = changed[:0]
		for i, id := range ids {
			var res sql.Result
			var err error
			if aside {
				res, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO memory_pending_embeddings (id, model, embedding)
					SELECT id, ?, ? FROM memories WHERE id = ? AND text = ?`, s.model, encodeVector(vecs[i]), id, texts[i])
			} else {
				res, err = tx.ExecContext(ctx, `UPDATE memories SET embedding = ?, embed_model = ? WHERE id = ? AND text = ?`,
					encodeVector(vecs[i]), s.model, id, texts[i])
			}
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				changed = append(changed, i)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("re-embed memories: store vectors: %w", err)
	}
	if aside {
		return nil
	}
	s.lock()
	for _, i := range changed {
		if sl, ok := s.idx.slotOf(ids[i]); ok {
			s.idx.put(ids[i], s.idx.metaAt(sl), s.indexable(vecs[i]))
		}
	}
	s.mu.Unlock()
	return nil
}

// switchModel ends a migration: the pending vectors replace the old ones in
// one transaction, the index is rebuilt with the configured model's vectors
// and recall switches to it. Writes wait meanwhile.
func (s *VectorStore) switchModel(ctx context.Context) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.applyPending(ctx); err != nil {
		return err
	}
	idx, text, _, err := s.loadIndex(ctx, s.model, s.emb.Dimensions())
	if err != nil {
		return err
	}
	s.lock()
	prev := s.serveModel
	s.idx, s.text, s.serve, s.serveModel = idx, text, s.emb, s.model
	s.gen++
	s.mu.Unlock()
	s.log.Info("re-embedding done: recall uses the new embedding model", "model", s.model, "previous", prev)
	return nil
}

// loadIndex reads every memory into a new index holding the vectors of
// model (dims long) and a new text index. stale counts the memories without
// such a vector.
func (s *VectorStore) loadIndex(ctx context.Context, model string, dims int) (*index, *textIndex, int, error) {
	idx, text := s.newIndex(dims), s.newTextIndex()
	// The count sizes the index: an estimate (a writer may add memories
	// before the read below), so a failure to count only costs the growth.
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n); err == nil {
		idx.reserve(n)
		text.reserve(n)
	}
	// in id order, so each thread's episodes are linked in the order told
	stale, wrongDims := 0, 0
	// Every row's vector is read in place (RawBytes): a compact one's codes
	// are copied into the index as they are, a legacy float32 one (not
	// converted yet, compact.go) is decoded into one buffer and quantised.
	// At 100k memories a copy and a decoded vector per row were ~300 MB of
	// garbage, which the heap grew to hold before the footprint keeper's
	// next release.
	var buf []float32
	err := sqlite.Each(ctx, s.db, func(rows *sql.Rows) error {
		var (
			id                     int64
			txt, kind, thr, mmodel string
			session, speaker, role string
			created, from          int64
			to, last, event        sql.NullInt64
			count                  int32
			blob                   sql.RawBytes
		)
		if err := rows.Scan(&id, &txt, &kind, &created, &from, &to, &count, &last, &event, &thr, &session, &speaker, &role, &blob, &mmodel); err != nil {
			return err
		}
		m := meta{kind: Kind(kind), createdAt: created, validFrom: from, validTo: to.Int64, eventTime: event.Int64,
			lastAccess: last.Int64, accessCount: count, thread: thr, session: session, speaker: normSpeaker(speaker), role: Role(role)}
		m.setText(txt)
		var sv storedVector
		if mmodel == model && blob != nil {
			var err error
			if sv, err = decodeVector(blob, buf); err != nil {
				return fmt.Errorf("memory %d: %w", id, err)
			}
			if sv.floats != nil {
				buf = sv.floats
			}
			if sv.dims() != dims {
				wrongDims++
				sv = storedVector{}
			}
		}
		switch {
		case sv.floats != nil:
			idx.put(id, m, sv.floats)
		case sv.codes != nil:
			idx.putCodes(id, m, sv.codes, sv.scale)
		default:
			stale++
			idx.put(id, m, nil)
		}
		text.put(id, txt)
		return nil
	}, `SELECT id, text, kind, created_at, valid_from, valid_to, access_count, last_access, event_time, thread, session, speaker, role, embedding, embed_model FROM memories_read ORDER BY id`)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("load memory index: %w", err)
	}
	// The load wrote every vector through the mapping: hand the pages to
	// the file cache, recalls read back the ones they use.
	idx.trim()
	if wrongDims > 0 {
		s.log.Warn("stored vectors have the wrong size for their model; those memories are found by their words",
			"model", model, "dimensions", dims, "memories", wrongDims)
	}
	return idx, text, stale, nil
}
