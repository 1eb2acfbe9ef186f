package memory

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	vec "github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textclip"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the "memory" component's migrations to db through m
// (nil: on its own).
func migrate(ctx context.Context, m *sqlite.Migrations, db *sql.DB) error {
	if err := m.Migrate(ctx, db, "memory", migrationFiles, "migrations"); err != nil {
		return fmt.Errorf("memory store: %w", err)
	}
	return nil
}

// VectorStore is the local_vector backend: memories in SQLite with an FTS5
// index, embeddings stored as int8 BLOBs (vecblob.go), and an in-memory quantised
// vector index read by LoadIndex or at its first use, not by Open. See doc.go
// for scoring and concurrency.
type VectorStore struct {
	db    *sql.DB
	emb   vec.Embedder // the configured model: new vectors are made with it
	now   func() time.Time
	log   *slog.Logger
	tune  atomic.Pointer[Tuning]
	model string // emb.ID()
	// vecDir is the directory of the database file, where the index keeps
	// its vectors (vecSpace); "" for an in-memory database.
	vecDir string

	writeMu sync.Mutex // serialises write transactions with their index update
	// adds writes the AddBatch calls that wait for one another together
	// (writeAdditions).
	adds sqlite.GroupCommit[*addition]
	// commits, when set, is the group commit shared with the database's
	// other stores, through which writeAdditions writes (Options.Commits).
	commits *sqlite.Committer
	// fts is the full-text index (see newFTSIndex); writes to it are
	// guarded by writeMu.
	fts  sqlite.LaggingIndex
	mu   sync.RWMutex
	idx  *index
	text *textIndex
	// scratch holds recalls' candidate tables (*recallScratch) for the
	// next recall to reuse: ~20 KB a recall the collector would sweep.
	scratch sync.Pool
	// loadOnce starts, and loading runs, the index load (LoadIndex), which
	// releases mu, held since Open, once idx and text are set; loadErr
	// (under mu) is why the load failed.
	loadOnce sync.Once
	loading  sync.WaitGroup
	loadErr  error
	loaded   chan struct{} // closed when the load has finished (Loaded)
	// serve is the model whose vectors idx holds and queries are embedded
	// with: emb, or the previous model while Reembed migrates (reembed.go).
	serve      vec.Embedder
	serveModel string
	gen        uint64 // bumped when idx changes model

	access *accessQueue
	re     reembedState
	// stopCtx is cancelled by Shutdown (stop): it stops the conversion of
	// stored vectors to the compact format (convertStored), which the
	// index load's goroutine runs once the index is in place.
	stopCtx context.Context
	stop    context.CancelFunc
}

var _ Vectors = (*VectorStore)(nil)

// OpenVector migrates db and loads the vector index. The store starts a
// background goroutine that writes access statistics in batches; Shutdown
// stops it and flushes.
func OpenVector(ctx context.Context, db *sql.DB, e vec.Embedder, now func() time.Time, log *slog.Logger, tune Tuning) (*VectorStore, error) {
	return OpenVectorMigrating(ctx, db, e, nil, now, log, tune)
}

// OpenVectorMigrating is OpenVector for a store whose vectors may be of a
// previous embedding model: when most of them are and prev builds it,
// recall keeps using them until Reembed has re-embedded every memory with
// e (see Reembed).
func OpenVectorMigrating(ctx context.Context, db *sql.DB, e vec.Embedder, prev Previous, now func() time.Time, log *slog.Logger, tune Tuning) (*VectorStore, error) {
	return openVector(ctx, nil, nil, db, e, prev, now, log, tune)
}

// openVector is OpenVectorMigrating, migrating through m (nil: on its own)
// and writing through commits (Options.Commits; nil: on its own).
func openVector(ctx context.Context, m *sqlite.Migrations, commits *sqlite.Committer, db *sql.DB, e vec.Embedder, prev Previous, now func() time.Time, log *slog.Logger, tune Tuning) (*VectorStore, error) {
	if db == nil || e == nil || e.Dimensions() <= 0 {
		return nil, fmt.Errorf("open memory store: %w: database and embedder are required", ErrInvalid)
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := migrate(ctx, m, db); err != nil {
		return nil, err
	}
	s := &VectorStore{db: db, emb: e, now: now, log: log, model: e.ID(), loaded: make(chan struct{}), fts: newFTSIndex(), commits: commits}
	dir, err := databaseDir(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open memory store: %w", err)
	}
	s.vecDir = dir
	s.SetTuning(tune)
	if err := s.chooseServing(ctx, prev); err != nil {
		return nil, err
	}
	s.access = newAccessQueue(db, commits, log)
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	s.mu.Lock() // until the index is in place: see LoadIndex
	return s, nil
}

// LoadIndex starts reading the in-memory index from SQLite on a goroutine
// the store owns, unless that has started. Open does not read it, so that
// opening the store (and so starting the agent) does not wait for every
// memory: the index lock, held from Open until the index is in place, makes
// every reader and writer of the index wait for it, and the first of them
// starts the load if nobody did. The agent calls LoadIndex once it is
// ready, a one-shot process right after Open. A failed load leaves an
// empty index and makes every recall fail with its error (logged once).
// Once the index is in place the goroutine converts vectors stored in the
// float32 format of older versions to the compact one, if any are left
// (convertStored). Shutdown stops and waits for the goroutine.
func (s *VectorStore) LoadIndex() {
	s.loadOnce.Do(func() {
		s.loading.Go(func() {
			s.load()
			s.convertStored()
		})
	})
}

// Loaded is closed once the index load has finished (successfully or
// not): the load allocates and drops the rows it reads, so the agent hands
// freed memory back after it (see app's footprint keeper).
func (s *VectorStore) Loaded() <-chan struct{} { return s.loaded }

// TrimIndex drops the index's vector, sketch and metadata pages and the
// text index's term ids from the process's resident memory (they stay in
// the file cache, see vecSpace): an idle process hands back what its
// recalls read (384 bytes of vector and 80 of metadata a memory, each
// recall of a store below 8,192 memories reads them all). The next recall
// reads them again. It also packs the full-text index's posting lists and terms
// (textIndex.pack), so that the heap spans they were scattered over can be
// handed back by the collection that follows. It does nothing before the
// index has loaded, nor to vectors kept in the heap.
func (s *VectorStore) TrimIndex() {
	select {
	case <-s.loaded:
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.trim()
	s.text.pack()
	s.text.trim()
}

// load reads the index and releases the index lock taken by Open.
func (s *VectorStore) load() {
	defer close(s.loaded)
	defer s.mu.Unlock()
	model, dims := s.serveModel, s.serve.Dimensions()
	// Nobody waits on this context: the store outlives whoever opened it.
	idx, text, stale, err := s.loadIndex(context.Background(), model, dims)
	if err != nil {
		s.loadErr = err
		s.idx, s.text = newIndex(dims), newTextIndex() // empty: the heap will do
		s.log.Error("could not load the memory index: recall fails until the agent restarts", "err", err)
		return
	}
	s.idx, s.text = idx, text
	s.log.Debug("memory index loaded", "memories", idx.len(), "vectors_in", idx.space.kind())
	if stale > 0 {
		s.log.Info("memories need re-embedding", "count", stale, "model", s.model)
	}
}

// rlock and lock take the index lock, starting the index load first (see
// LoadIndex).
func (s *VectorStore) rlock() {
	s.LoadIndex()
	s.mu.RLock()
}

func (s *VectorStore) lock() {
	s.LoadIndex()
	s.mu.Lock()
}

// SetTuning replaces the retrieval parameters for the recalls that start
// after it (the evaluation tries several on one ingested store).
func (s *VectorStore) SetTuning(t Tuning) { s.tune.Store(&t) }

func (s *VectorStore) tuning() Tuning { return *s.tune.Load() }

const selectCols = `id, text, kind, source, created_at, updated_at, valid_from, valid_to, access_count, last_access, event_time, thread, superseded_by, session, speaker, role`

func ns(t time.Time) int64 { return t.UTC().UnixNano() }

func nullNS(t *time.Time) sql.NullInt64 {
	if t == nil || t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: ns(*t), Valid: true}
}

func fromNS(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromNull(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNS(n.Int64)
	return &t
}

// prepare validates and fills defaults of a memory to be added.
func prepare(m *Memory) error {
	t, err := clean(m.Text)
	if err != nil {
		return err
	}
	m.Text = t
	if m.Kind == "" {
		m.Kind = KindFact
	}
	if m.Source == "" {
		m.Source = SourceAgent
	}
	if !m.Kind.Valid() {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalid, m.Kind)
	}
	if !m.Source.Valid() {
		return fmt.Errorf("%w: unknown source %q", ErrInvalid, m.Source)
	}
	if !m.Role.Valid() {
		return fmt.Errorf("%w: unknown role %q", ErrInvalid, m.Role)
	}
	m.Speaker = strings.Join(strings.Fields(m.Speaker), " ")
	m.Session = strings.TrimSpace(m.Session)
	if utf8.RuneCountInString(m.Speaker) > MaxLabelLen || utf8.RuneCountInString(m.Session) > MaxLabelLen {
		return fmt.Errorf("%w: session or speaker longer than %d characters", ErrInvalid, MaxLabelLen)
	}
	return nil
}

// Add stores one memory; see Store.Add.
func (s *VectorStore) Add(ctx context.Context, m Memory) (int64, error) {
	ids, err := s.AddBatch(ctx, []Memory{m})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AddBatch stores memories in one transaction; see Store.AddBatch.
func (s *VectorStore) AddBatch(ctx context.Context, ms []Memory) ([]int64, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	ms = slices.Clone(ms)
	texts := make([]string, len(ms))
	for i := range ms {
		if err := prepare(&ms[i]); err != nil {
			return nil, fmt.Errorf("add memory %d: %w", i, err)
		}
		ms[i].AccessCount, ms[i].LastAccess = 0, nil
		texts[i] = ms[i].Text
	}
	vecs, err := s.embedForWrite(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("add memories: embed: %w", err)
	}
	a := &addition{ms: ms, vecs: vecs}
	// The batch holds other callers' additions: one caller's end must not
	// cut theirs short.
	wctx := context.WithoutCancel(ctx)
	s.adds.Write(a, func(batch []*addition) { s.writeAdditions(wctx, batch) })
	if a.err != nil {
		return nil, fmt.Errorf("add memories: %w", a.err)
	}
	return a.ids, nil
}

// addition is one AddBatch call's memories (prepared and embedded) waiting
// to be written, and then the outcome.
type addition struct {
	ms   []Memory
	vecs [][]float32
	ids  []int64
	err  error
	// fresh are the memories inserted (not twins of stored ones), for the
	// in-memory indexes once committed
	fresh []added
}

type added struct {
	id   int64
	m    meta
	vec  []float32
	text string
}

// writeAdditions writes the additions queued by concurrent AddBatch calls
// (s.adds) in one transaction, each in a savepoint of its own so that one's
// failure leaves the others' rows, then adds the new rows to the in-memory
// indexes. A turn's episodes are a transaction of a few rows whose commit
// writes every page the rows and their indexes touch to the WAL: under
// concurrent turns one commit now carries several turns' episodes, and
// with s.commits the same commit carries the other stores' concurrent
// writes too (a turn's log entry, its events, other turns' messages). Each
// caller still returns only once its rows are committed. writeMu is held
// from the write to the index update, so that the index changes in the
// order the database did whichever way the rows were committed.
func (s *VectorStore) writeAdditions(ctx context.Context, batch []*addition) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	now := s.now()
	var marked int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, insertSQL)
		if err != nil {
			return err
		}
		defer ins.Close()
		// Only a memory that is not an episode looks for a twin: a turn's
		// episodes (every utterance is its own) need neither statement.
		var find, bump *sql.Stmt
		if slices.ContainsFunc(batch, func(a *addition) bool {
			return slices.ContainsFunc(a.ms, func(m Memory) bool { return m.Kind != KindEpisode })
		}) {
			if find, err = tx.PrepareContext(ctx, `SELECT id FROM memories WHERE norm = ? AND valid_to IS NULL AND kind <> 'episode'`); err != nil {
				return err
			}
			defer find.Close()
			if bump, err = tx.PrepareContext(ctx, `UPDATE memories SET updated_at = ? WHERE id = ?`); err != nil {
				return err
			}
			defer bump.Close()
		}
		var last int64
		for _, a := range batch {
			write := func() error { return s.addRows(ctx, tx, a, ins, find, bump, now) }
			if len(batch) == 1 {
				// alone: its failure is the transaction's
				if a.err = write(); a.err != nil {
					return a.err
				}
			} else if a.err = sqlite.Savepoint(ctx, tx, write); a.err != nil {
				a.ids, a.fresh = nil, nil
				continue
			}
			if n := len(a.fresh); n > 0 {
				last = max(last, a.fresh[n-1].id)
			}
		}
		if last == 0 {
			return nil
		}
		marked, err = s.fts.IndexIfDue(ctx, tx, last)
		return err
	})
	if err == nil {
		s.fts.Committed(marked)
		s.lock()
		for _, a := range batch {
			for _, f := range a.fresh {
				s.idx.put(f.id, f.m, s.indexable(f.vec))
				s.text.put(f.id, f.text)
			}
		}
		s.mu.Unlock()
	}
	if err != nil {
		for _, a := range batch {
			a.ids, a.err = nil, cmp.Or(a.err, err)
		}
	}
}

// write runs fn in a transaction: the one shared through s.commits when
// set, else one of its own. It returns once that transaction is committed.
func (s *VectorStore) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if s.commits != nil {
		return s.commits.Write(ctx, fn, nil)
	}
	return sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error { return fn(ctx, tx) })
}

// addRows inserts a's memories (or bumps their current twins) within tx,
// the transaction of ins, find and bump (find and bump are nil when a
// holds only episodes).
func (s *VectorStore) addRows(ctx context.Context, tx *sql.Tx, a *addition, ins, find, bump *sql.Stmt, now time.Time) error {
	a.ids = make([]int64, len(a.ms))
	for i, m := range a.ms {
		var id int64
		err := sql.ErrNoRows // every utterance is its own episode
		if m.Kind != KindEpisode {
			err = find.QueryRowContext(ctx, normalise(m.Text)).Scan(&id)
		}
		switch {
		case err == nil:
			if _, err := bump.ExecContext(ctx, ns(now), id); err != nil {
				return err
			}
			a.ids[i] = id
			continue
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		id, mt, err := s.insert(ctx, tx, ins, m, a.vecs[i], now)
		if err != nil {
			return err
		}
		a.ids[i] = id
		a.fresh = append(a.fresh, added{id: id, vec: a.vecs[i], text: m.Text, m: mt})
	}
	return nil
}

// ftsBatch is how many memories the full-text index (memories_fts, read
// by TextSearch) may lag behind the inserts (see
// migrations/007_fts_batched.sql): the AddBatch that brings the backlog to
// it indexes the batch in its own transaction, and TextSearch indexes what
// is left first. Recall does not read that index (it has its own in
// memory, textIndex).
const ftsBatch = 32

// newFTSIndex is the full-text index memories_fts.
func newFTSIndex() sqlite.LaggingIndex {
	return sqlite.LaggingIndex{
		Table: "memories", Mark: "memories_fts_done", Batch: ftsBatch, What: "index memories for full-text search",
		Insert: `INSERT INTO memories_fts (rowid, text) SELECT id, text FROM memories WHERE id > (SELECT id FROM memories_fts_done)`,
	}
}

// catchUpIndex indexes the memories the full-text index has not taken in
// yet (see ftsBatch); nothing is written when there are none.
func (s *VectorStore) catchUpIndex(ctx context.Context) error {
	if pending, err := s.fts.Pending(ctx, s.db); err != nil || !pending {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error { return s.fts.Index(ctx, tx) })
}

const insertSQL = `INSERT INTO memories (text, norm, kind, source, created_at, updated_at, valid_from, event_time, thread,
	session, speaker, role, embedding, embed_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insert adds m (prepared) as a new row through ins (a prepared insertSQL
// of tx) created at now, valid from m.ValidFrom (now when zero), with
// vector v (nil: none yet; Reembed fills it in) and m's access statistics
// (a row of memory_access when there are any), and returns its id and
// index entry.
func (s *VectorStore) insert(ctx context.Context, tx *sql.Tx, ins *sql.Stmt, m Memory, v []float32, now time.Time) (int64, meta, error) {
	from := m.ValidFrom
	if from.IsZero() {
		from = now
	}
	var blob []byte
	if v != nil {
		blob = encodeVector(v)
	}
	res, err := ins.ExecContext(ctx, m.Text, normalise(m.Text), string(m.Kind), string(m.Source), ns(now), ns(now), ns(from),
		nullNS(m.EventTime), m.Thread, m.Session, m.Speaker, string(m.Role), blob, s.model)
	if err != nil {
		return 0, meta{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, meta{}, err
	}
	if m.AccessCount != 0 || m.LastAccess != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_access (memory_id, access_count, last_access) VALUES (?, ?, ?)`,
			id, m.AccessCount, nullNS(m.LastAccess)); err != nil {
			return 0, meta{}, err
		}
	}
	mt := meta{kind: m.Kind, createdAt: ns(now), validFrom: ns(from), eventTime: nullNS(m.EventTime).Int64,
		lastAccess: nullNS(m.LastAccess).Int64, accessCount: int32(m.AccessCount), thread: m.Thread,
		session: m.Session, speaker: normSpeaker(m.Speaker), role: m.Role}
	mt.setText(m.Text)
	return id, mt, nil
}

// scanMemory scans the selectCols columns followed by extra destinations.
func scanMemory(sc interface{ Scan(...any) error }, extra ...any) (Memory, error) {
	var (
		m                      Memory
		kind, source, role     string
		created, updated, from int64
		to, last, event, succ  sql.NullInt64
	)
	dest := append([]any{&m.ID, &m.Text, &kind, &source, &created, &updated, &from, &to, &m.AccessCount, &last, &event, &m.Thread, &succ, &m.Session, &m.Speaker, &role}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return Memory{}, err
	}
	m.Kind, m.Source, m.SupersededBy, m.Role = Kind(kind), Source(source), succ.Int64, Role(role)
	m.CreatedAt, m.UpdatedAt, m.ValidFrom = fromNS(created), fromNS(updated), fromNS(from)
	m.ValidTo, m.LastAccess, m.EventTime = fromNull(to), fromNull(last), fromNull(event)
	return m, nil
}

// Get returns one memory with its embedding.
func (s *VectorStore) Get(ctx context.Context, id int64) (Memory, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+selectCols+`, embedding FROM memories_read WHERE id = ?`, id)
	var blob []byte
	m, err := scanMemory(row, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, notFound(id)
	}
	if err != nil {
		return Memory{}, fmt.Errorf("get memory %d: %w", id, err)
	}
	if blob != nil {
		if m.Embedding, err = decodeFloats(blob); err != nil {
			return Memory{}, fmt.Errorf("get memory %d: %w", id, err)
		}
	}
	s.applyPendingAccess(&m)
	return m, nil
}

// Update edits a memory in place, or supersedes it when its text changed;
// see Store.Update.
func (s *VectorStore) Update(ctx context.Context, m Memory) (int64, error) {
	cur, err := s.Get(ctx, m.ID)
	if err != nil {
		return 0, fmt.Errorf("update memory: %w", err)
	}
	if m.Kind == "" {
		m.Kind = cur.Kind
	}
	if m.Source == "" {
		m.Source = cur.Source
	}
	if err := prepare(&m); err != nil {
		return 0, fmt.Errorf("update memory %d: %w", m.ID, err)
	}
	if cur.ValidTo != nil {
		return 0, fmt.Errorf("update memory %d: %w", m.ID, closedErr(cur))
	}
	if m.Text == cur.Text {
		return m.ID, s.updateInPlace(ctx, m)
	}
	vs, err := s.embedForWrite(ctx, []string{m.Text})
	if err != nil {
		return 0, fmt.Errorf("update memory %d: embed: %w", m.ID, err)
	}
	// The new version carries the old one's access statistics: it is the
	// same memory, corrected.
	m.AccessCount, m.LastAccess, m.ValidFrom = cur.AccessCount, cur.LastAccess, time.Time{}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	now := s.now()
	var (
		id int64
		mt meta
	)
	err = sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		if err := currentIn(ctx, tx, m.ID); err != nil {
			return err
		}
		var other int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM memories WHERE norm = ? AND valid_to IS NULL AND id <> ? AND kind <> 'episode'`, normalise(m.Text), m.ID).Scan(&other)
		if err == nil && m.Kind != KindEpisode {
			return fmt.Errorf("%w (memory %d)", ErrDuplicate, other)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// Close first: the new version may share the old one's
		// normalised text, and only one current memory may hold it.
		if _, err := tx.ExecContext(ctx, `UPDATE memories SET valid_to = ?, updated_at = ? WHERE id = ?`, ns(now), ns(now), m.ID); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, insertSQL)
		if err != nil {
			return err
		}
		defer ins.Close()
		if id, mt, err = s.insert(ctx, tx, ins, m, vs[0], now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE memories SET superseded_by = ? WHERE id = ?`, id, m.ID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("update memory %d: %w", m.ID, err)
	}
	s.lock()
	if sl, ok := s.idx.slotOf(m.ID); ok {
		s.idx.metas[sl].validTo = ns(now)
	}
	s.idx.put(id, mt, s.indexable(vs[0]))
	s.text.put(id, m.Text)
	s.mu.Unlock()
	return id, nil
}

// updateInPlace changes the kind, source, event time and thread of a
// current memory whose text stays the same.
func (s *VectorStore) updateInPlace(ctx context.Context, m Memory) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		if err := currentIn(ctx, tx, m.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE memories SET kind = ?, source = ?, event_time = ?, thread = ?, session = ?, speaker = ?, role = ?, updated_at = ? WHERE id = ?`,
			string(m.Kind), string(m.Source), nullNS(m.EventTime), m.Thread, m.Session, m.Speaker, string(m.Role), ns(s.now()), m.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("update memory %d: %w", m.ID, err)
	}
	s.lock()
	if sl, ok := s.idx.slotOf(m.ID); ok {
		mt := s.idx.metaAt(sl)
		mt.kind, mt.eventTime, mt.thread, mt.session, mt.speaker, mt.role = m.Kind, nullNS(m.EventTime).Int64, m.Thread, m.Session, normSpeaker(m.Speaker), m.Role
		s.idx.setMeta(sl, mt)
	}
	s.mu.Unlock()
	return nil
}

// currentIn checks, inside a write transaction, that memory id exists
// (ErrNotFound) and is current (ErrClosed): another writer may have
// changed it since it was read.
func currentIn(ctx context.Context, tx *sql.Tx, id int64) error {
	var (
		to   sql.NullInt64
		succ sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, `SELECT valid_to, superseded_by FROM memories WHERE id = ?`, id).Scan(&to, &succ)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	if to.Valid {
		return closedErr(Memory{SupersededBy: succ.Int64})
	}
	return nil
}

// closedErr is ErrClosed naming the successor, if any.
func closedErr(m Memory) error {
	if m.SupersededBy != 0 {
		return fmt.Errorf("%w by memory %d", ErrClosed, m.SupersededBy)
	}
	return ErrClosed
}

// Close ends a memory's validity at at (now when zero).
func (s *VectorStore) Close(ctx context.Context, id int64, at time.Time) error {
	if at.IsZero() {
		at = s.now()
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	res, err := s.db.ExecContext(ctx, `UPDATE memories SET valid_to = ?, updated_at = ? WHERE id = ? AND valid_to IS NULL`, ns(at), ns(s.now()), id)
	if err != nil {
		return fmt.Errorf("close memory %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var one int
		if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM memories WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		return nil
	}
	s.lock()
	if sl, ok := s.idx.slotOf(id); ok {
		s.idx.metas[sl].validTo = ns(at)
	}
	s.mu.Unlock()
	return nil
}

// Reopen makes a closed memory current again (undoing Close, for reverting
// a consolidation) and drops its link to a successor. Reopening a current
// memory is a no-op; ErrNotFound when absent. The caller makes sure no
// current memory has the same normalised text (the unique index refuses
// it).
func (s *VectorStore) Reopen(ctx context.Context, id int64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	res, err := s.db.ExecContext(ctx, `UPDATE memories SET valid_to = NULL, superseded_by = NULL, updated_at = ? WHERE id = ? AND valid_to IS NOT NULL`, ns(s.now()), id)
	if err != nil {
		return fmt.Errorf("reopen memory %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var one int
		if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM memories WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		return nil
	}
	s.lock()
	if sl, ok := s.idx.slotOf(id); ok {
		s.idx.metas[sl].validTo = 0
	}
	s.mu.Unlock()
	return nil
}

// Ensured says how EnsureCurrent made one memory current.
type Ensured struct {
	ID      int64
	Outcome EnsureOutcome
}

// EnsureOutcome is what EnsureCurrent did for one memory.
type EnsureOutcome string

// The outcomes of EnsureCurrent.
const (
	// EnsurePresent: a current memory already had that text (equal after
	// normalisation); nothing was written.
	EnsurePresent EnsureOutcome = "present"
	// EnsureReopened: a closed memory with exactly that text (white space
	// aside) was made current again (see Reopen).
	EnsureReopened EnsureOutcome = "reopened"
	// EnsureAdded: the memory was stored as a new one.
	EnsureAdded EnsureOutcome = "added"
)

// EnsureCurrent makes every memory of ms current, in one transaction: one
// whose text a current memory already holds is left alone, the most
// recently closed memory with exactly its text (case and punctuation
// included, white space collapsed) is reopened, anything else is added
// (one embedding call). Validation and errors as AddBatch; all-or-nothing.
// Nothing is closed or deleted. It is how MEMORIES.txt is re-applied to the
// store (Service.Reconcile).
func (s *VectorStore) EnsureCurrent(ctx context.Context, ms []Memory) ([]Ensured, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	ms = slices.Clone(ms)
	for i := range ms {
		if err := prepare(&ms[i]); err != nil {
			return nil, fmt.Errorf("ensure memory %d: %w", i, err)
		}
		ms[i].AccessCount, ms[i].LastAccess = 0, nil
	}
	// Plan without the write lock, embed only what will be added, then
	// redo the plan inside the transaction (another writer may have been
	// faster; a memory added by the plan's mistake gets its vector from
	// Reembed).
	var texts []string
	var need []int
	for i, m := range ms {
		_, out, err := lookupText(ctx, s.db, m.Text)
		if err != nil {
			return nil, fmt.Errorf("ensure memories: %w", err)
		}
		if out == EnsureAdded {
			texts = append(texts, m.Text)
			need = append(need, i)
		}
	}
	vecs := make([][]float32, len(ms))
	if len(texts) > 0 {
		vs, err := s.embedForWrite(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("ensure memories: embed: %w", err)
		}
		for j, i := range need {
			vecs[i] = vs[j]
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	now := s.now()
	out := make([]Ensured, len(ms))
	type added struct {
		id  int64
		m   meta
		vec []float32
		txt string
	}
	var fresh []added
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, insertSQL)
		if err != nil {
			return err
		}
		defer ins.Close()
		for i, m := range ms {
			id, what, err := lookupText(ctx, tx, m.Text)
			if err != nil {
				return err
			}
			switch what {
			case EnsureReopened:
				if _, err := tx.ExecContext(ctx, `UPDATE memories SET valid_to = NULL, superseded_by = NULL, updated_at = ? WHERE id = ?`, ns(now), id); err != nil {
					return err
				}
			case EnsureAdded:
				var mt meta
				if id, mt, err = s.insert(ctx, tx, ins, m, vecs[i], now); err != nil {
					return err
				}
				fresh = append(fresh, added{id: id, m: mt, vec: vecs[i], txt: m.Text})
			}
			out[i] = Ensured{ID: id, Outcome: what}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ensure memories: %w", err)
	}
	s.lock()
	for _, e := range out {
		if e.Outcome == EnsureReopened {
			if sl, ok := s.idx.slotOf(e.ID); ok {
				s.idx.metas[sl].validTo = 0
			}
		}
	}
	for _, a := range fresh {
		s.idx.put(a.id, a.m, s.indexable(a.vec))
		s.text.put(a.id, a.txt)
	}
	s.mu.Unlock()
	return out, nil
}

// queryer is what lookupText needs of a *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// lookupText finds how text stands in the store: held by a current memory
// (EnsurePresent with its id), held exactly by a closed one
// (EnsureReopened with the most recently closed one's id), or absent
// (EnsureAdded, id 0).
func lookupText(ctx context.Context, q queryer, text string) (int64, EnsureOutcome, error) {
	norm := normalise(text)
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM memories WHERE norm = ? AND valid_to IS NULL AND kind <> 'episode'`, norm).Scan(&id)
	if err == nil {
		return id, EnsurePresent, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, "", err
	}
	rows, err := q.QueryContext(ctx, `SELECT id, text FROM memories WHERE norm = ? AND valid_to IS NOT NULL AND kind <> 'episode' ORDER BY valid_to DESC, id DESC`, norm)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	want := textclip.OneLine(text)
	for rows.Next() {
		var t string
		if err := rows.Scan(&id, &t); err != nil {
			return 0, "", err
		}
		if textclip.OneLine(t) == want {
			return id, EnsureReopened, nil
		}
	}
	return 0, EnsureAdded, rows.Err()
}

// Delete removes a memory permanently.
func (s *VectorStore) Delete(ctx context.Context, id int64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	res, err := s.db.ExecContext(ctx, `DELETE FROM memories WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete memory %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound(id)
	}
	s.lock()
	s.idx.remove(id)
	s.text.remove(id)
	s.mu.Unlock()
	s.access.forget(id)
	return nil
}

// List returns memories matching f, newest first (or most accessed first).
func (s *VectorStore) List(ctx context.Context, f Filter) ([]Memory, error) {
	if err := s.access.flush(ctx); err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	var where []string
	var args []any
	if !f.IncludeClosed {
		where = append(where, `valid_to IS NULL`)
	}
	if len(f.Kinds) > 0 {
		where = append(where, `kind IN (?`+strings.Repeat(",?", len(f.Kinds)-1)+`)`)
		for _, k := range f.Kinds {
			args = append(args, string(k))
		}
	}
	if len(f.Sources) > 0 {
		where = append(where, `source IN (?`+strings.Repeat(",?", len(f.Sources)-1)+`)`)
		for _, k := range f.Sources {
			args = append(args, string(k))
		}
	}
	if f.Thread != "" {
		where = append(where, `thread = ?`)
		args = append(args, f.Thread)
	}
	if !f.Before.IsZero() {
		where = append(where, `created_at < ?`)
		args = append(args, ns(f.Before))
	}
	if !f.After.IsZero() {
		where = append(where, `created_at > ?`)
		args = append(args, ns(f.After))
	}
	q := `SELECT ` + selectCols + ` FROM memories_read`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	if f.OrderByAccess {
		q += ` ORDER BY access_count DESC, last_access DESC, id DESC`
	} else {
		q += ` ORDER BY created_at DESC, id DESC`
	}
	if f.Limit > 0 || f.Offset > 0 {
		limit := f.Limit
		if limit <= 0 {
			limit = -1
		}
		q += ` LIMIT ? OFFSET ?`
		args = append(args, limit, f.Offset)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("list memories: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	return out, nil
}

// Count returns the number of memories.
func (s *VectorStore) Count(ctx context.Context, includeClosed bool) (int, error) {
	s.rlock()
	defer s.mu.RUnlock()
	if includeClosed {
		return s.idx.len(), nil
	}
	n := 0
	for i := range s.idx.metas {
		if s.idx.metas[i].validTo == 0 {
			n++
		}
	}
	return n, nil
}

// AllVectors yields every stored embedding of the model recall uses (the
// serving model), in id order, streaming from the database.
func (s *VectorStore) AllVectors(ctx context.Context) iter.Seq2[Vector, error] {
	return func(yield func(Vector, error) bool) {
		s.rlock()
		model := s.serveModel
		s.mu.RUnlock()
		rows, err := s.db.QueryContext(ctx, `SELECT id, embedding FROM memories WHERE embedding IS NOT NULL AND embed_model = ? ORDER BY id`, model)
		if err != nil {
			yield(Vector{}, fmt.Errorf("read vectors: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var v Vector
			var blob []byte
			if err := rows.Scan(&v.ID, &blob); err != nil {
				yield(Vector{}, fmt.Errorf("read vectors: %w", err))
				return
			}
			if v.Vector, err = decodeFloats(blob); err != nil {
				yield(Vector{}, fmt.Errorf("read vector %d: %w", v.ID, err))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(Vector{}, fmt.Errorf("read vectors: %w", err))
		}
	}
}

// Neighbours returns current memories at least minCos similar to id (by the
// quantised index, exact to about ±0.01), most similar first.
func (s *VectorStore) Neighbours(ctx context.Context, id int64, minCos float32) ([]Neighbour, error) {
	s.rlock()
	defer s.mu.RUnlock()
	a, ok := s.idx.slotOf(id)
	if !ok {
		return nil, notFound(id)
	}
	if !s.idx.metas[a].hasVector {
		return nil, nil
	}
	var out []Neighbour
	for b := range s.idx.len() {
		if b == a || !s.idx.metas[b].hasVector || s.idx.metas[b].validTo != 0 {
			continue
		}
		if b%4096 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("neighbours of memory %d: %w", id, ctx.Err())
		}
		if c := s.idx.cosine(a, b); c >= minCos {
			out = append(out, Neighbour{ID: s.idx.ids[b], Cosine: c})
		}
	}
	slices.SortFunc(out, func(x, y Neighbour) int {
		if c := cmp.Compare(y.Cosine, x.Cosine); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	return out, nil
}
