package memory

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/reverie-ai/reverie/internal/textcheck"
)

// Kind classifies a memory.
type Kind string

// The memory kinds.
const (
	KindFact       Kind = "fact"
	KindPreference Kind = "preference"
	KindEpisode    Kind = "episode"
	KindProcedure  Kind = "procedure"
	KindOpinion    Kind = "opinion"
)

// Kinds lists every valid Kind.
var Kinds = []Kind{KindFact, KindPreference, KindEpisode, KindProcedure, KindOpinion}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

// Source says who wrote a memory. Memories with SourceUserExplicit are
// protected from stale pruning by dreaming.
type Source string

// The memory sources.
const (
	SourceUserExplicit Source = "user_explicit"
	SourceAgent        Source = "agent"
	SourceHarvest      Source = "harvest"
	SourceDream        Source = "dream"
	SourceImport       Source = "import"
	// SourceConversation marks the episodes written automatically for
	// every exchange of a conversation (Ingest).
	SourceConversation Source = "conversation"
)

// Sources lists every valid Source.
var Sources = []Source{SourceUserExplicit, SourceAgent, SourceHarvest, SourceDream, SourceImport, SourceConversation}

// Valid reports whether s is one of Sources.
func (s Source) Valid() bool {
	for _, x := range Sources {
		if s == x {
			return true
		}
	}
	return false
}

// Role says who said an episode's text in its conversation.
type Role string

// The roles of an episode.
const (
	// RoleUser: the person the assistant talks to (the message of an
	// exchange).
	RoleUser Role = "user"
	// RoleAssistant: the one who replied (the assistant, or in an imported
	// conversation between two people, the other person).
	RoleAssistant Role = "assistant"
)

// Valid reports whether r is empty (not an utterance) or a known role.
func (r Role) Valid() bool { return r == "" || r == RoleUser || r == RoleAssistant }

// Memory is one long-term memory entry.
type Memory struct {
	ID           int64
	Text         string
	Kind         Kind
	Source       Source
	CreatedAt    time.Time
	UpdatedAt    time.Time
	ValidFrom    time.Time
	ValidTo      *time.Time // nil while current; set when superseded (closed, not deleted)
	SupersededBy int64      // the successor when an edit of the text closed it; 0 otherwise
	AccessCount  int
	LastAccess   *time.Time // nil when never recalled
	EventTime    *time.Time // when the remembered thing happened, if known
	Thread       string     // conversation thread it came from, if any
	// Session groups the episodes of one sitting of a thread (a day, a
	// chat session); "" when unknown. Recall spreads relevance between
	// neighbouring episodes of the same thread and session only.
	Session string
	// Speaker is who said an episode's text (a name as the channel gives
	// it, or the assistant's own name); Role is their part in the exchange. Both are
	// "" for memories that are not utterances. Recall boosts a memory
	// whose speaker the query names.
	Speaker   string
	Role      Role
	Embedding []float32 // unit vector; nil for backends without vectors
}

// Current reports whether m is valid at time at.
func (m *Memory) Current(at time.Time) bool {
	if m.ValidFrom.After(at) {
		return false
	}
	return m.ValidTo == nil || m.ValidTo.After(at)
}

// Scored is a recalled memory with its final score and the parts it was
// computed from (for debugging and the web debug panel).
type Scored struct {
	Memory
	Score    float64 // final score, higher is better
	Fused    float64 // reciprocal-rank-fusion score before re-scoring
	TextRank int     // 1-based rank in the full-text candidates, 0 if absent
	VecRank  int     // 1-based rank in the vector candidates, 0 if absent
	Cosine   float32 // similarity to the query vector (0 when not a vector candidate)
	// Match is the share, in [0,1], of the query's word weight (the idf
	// of its content words) the memory's text holds.
	Match float64
}

// Query is a recall request.
type Query struct {
	Text          string
	Limit         int       // results to return; DefaultLimit when ≤ 0
	Kinds         []Kind    // restrict to these kinds; all when empty
	At            time.Time // point in time for validity and decay; now when zero
	IncludeClosed bool      // include memories whose validity has ended
	Thread        string    // restrict to one thread when non-empty
	// Peek leaves access statistics untouched (evaluation, previews).
	Peek bool
}

// DefaultLimit is the number of memories Recall returns when Query.Limit is
// not set.
const DefaultLimit = 10

// Filter selects memories for List.
type Filter struct {
	Kinds         []Kind
	Sources       []Source
	Thread        string
	IncludeClosed bool
	Before        time.Time // created before, when non-zero
	After         time.Time // created after, when non-zero
	Limit         int       // 0 = no limit
	Offset        int
	// OrderByAccess sorts by access count (descending) instead of newest
	// first; dreaming uses it to export the working set.
	OrderByAccess bool
}

// Neighbour is a memory similar to another one.
type Neighbour struct {
	ID     int64
	Cosine float32
}

// Vector is one stored embedding, yielded by Vectors.AllVectors.
type Vector struct {
	ID     int64
	Vector []float32
}

// Store is a long-term memory backend. Implementations are safe for
// concurrent use.
type Store interface {
	// Add stores m (ID, timestamps and access stats are assigned) and returns
	// its id. Adding text equal, after normalisation, to a current memory
	// returns the existing id and bumps its UpdatedAt instead. Errors:
	// ErrEmpty, ErrTooLong, ErrSecret, ErrInvalid.
	Add(ctx context.Context, m Memory) (int64, error)
	// AddBatch adds several memories in one transaction and embedding call.
	// It is all-or-nothing: one bad memory fails the batch.
	AddBatch(ctx context.Context, ms []Memory) ([]int64, error)
	// Get returns one memory or ErrNotFound.
	Get(ctx context.Context, id int64) (Memory, error)
	// Update edits memory m.ID and returns the id of its current version.
	// An empty m.Kind or m.Source keeps the stored one. When the text is
	// unchanged, kind, source, event time and thread change in place and
	// m.ID is returned. When the text changed, backends with validity
	// history supersede the memory: the stored one is closed now (ValidTo,
	// SupersededBy) and kept, and a new memory with m's text and fields
	// (and the old access statistics) is inserted; its id is returned.
	// Backends without history replace the text. Errors as Add plus
	// ErrNotFound, ErrDuplicate (another current memory has that text) and
	// ErrClosed.
	Update(ctx context.Context, m Memory) (int64, error)
	// Close ends the validity of a memory at time at (superseded, kept for
	// history). Closing a closed memory is a no-op.
	Close(ctx context.Context, id int64, at time.Time) error
	// Delete removes a memory permanently; ErrNotFound if absent.
	Delete(ctx context.Context, id int64) error
	// List returns memories matching f, newest first.
	List(ctx context.Context, f Filter) ([]Memory, error)
	// Recall runs hybrid retrieval for q and records the accesses.
	Recall(ctx context.Context, q Query) ([]Scored, error)
	// RecordAccess counts an access to each id at time at.
	RecordAccess(ctx context.Context, ids []int64, at time.Time) error
	// Count returns the number of memories (current only, or all).
	Count(ctx context.Context, includeClosed bool) (int, error)
	// Shutdown flushes pending access statistics and stops background work.
	// The database handle is not closed: it belongs to the caller.
	Shutdown(ctx context.Context) error
}

// Vectors is the optional part of a Store that keeps embeddings and
// validity history (the local_vector backend): dreaming's similarity pass,
// the revert of a dream and the re-embedding after a model change need it.
// Backends without vectors (flat, mcp) do not implement it; VectorsOf is the
// one place that asks.
type Vectors interface {
	Store
	// AllVectors yields every stored vector of the embedding model recall
	// uses (current and closed memories), in id order; for dreaming's
	// similarity matrix.
	AllVectors(ctx context.Context) iter.Seq2[Vector, error]
	// Neighbours returns current memories whose cosine similarity to id is
	// at least minCos, most similar first.
	Neighbours(ctx context.Context, id int64, minCos float32) ([]Neighbour, error)
	// Reopen makes a closed memory current again (reverting a dream).
	Reopen(ctx context.Context, id int64) error
	// StaleEmbeddings counts memories that have no vector of the
	// configured embedding model yet.
	StaleEmbeddings(ctx context.Context) (int, error)
	// Reembed embeds the stale memories with the configured model, calling
	// progress after each batch; recall keeps using the previous model's
	// vectors until it is done. Resumable.
	Reembed(ctx context.Context, progress func(done, total int)) error
	// Embedding says which model recall uses, which one is configured and
	// how far re-embedding is.
	Embedding(ctx context.Context) (EmbeddingStatus, error)
}

// VectorsOf returns the vector part of s, if its backend keeps vectors.
func VectorsOf(s Store) (Vectors, bool) {
	v, ok := s.(Vectors)
	return v, ok
}

// Errors returned by stores.
var (
	// ErrEmpty: the memory text is empty or only white space.
	ErrEmpty = textcheck.ErrEmpty
	// ErrTooLong: the memory text exceeds MaxTextLen characters.
	ErrTooLong = textcheck.ErrTooLong
	// ErrSecret: the text looks like it contains a credential (API key,
	// token, private key, password); such text is never stored.
	ErrSecret = textcheck.ErrSecret
	// ErrNotFound: no memory has that id.
	ErrNotFound = errors.New("memory not found")
	// ErrDuplicate: an update would make a memory identical to another
	// current one.
	ErrDuplicate = errors.New("memory duplicates an existing one")
	// ErrClosed: the memory is closed (superseded or consolidated); it is
	// history and is not edited — edit its successor instead.
	ErrClosed = errors.New("memory is closed (superseded)")
	// ErrInvalid: an unknown kind or source.
	ErrInvalid = errors.New("invalid memory")
	// ErrUnsupported: the backend cannot do this (e.g. vectors on flat).
	ErrUnsupported = errors.New("not supported by this memory backend")
)

// ReplacedError is Forget's refusal of a memory a newer version replaced:
// forgetting the id the user was told of means the memory as it is now,
// which is Current. It wraps ErrClosed.
type ReplacedError struct {
	ID, Current int64
}

func (e *ReplacedError) Error() string {
	return fmt.Sprintf("memory %d was replaced by memory %d, its current version: forget %d to forget it (nothing was forgotten)",
		e.ID, e.Current, e.Current)
}

func (e *ReplacedError) Unwrap() error { return ErrClosed }

// NotFoundError is ErrNotFound for one id, read as a sentence: "memory 999
// not found". errors.Is(err, ErrNotFound) holds.
type NotFoundError struct {
	ID int64
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("memory %d not found", e.ID) }

// Is makes a NotFoundError an ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// notFound is the store's error for an unknown id. It names the memory, so
// callers add no "get memory N: " in front.
func notFound(id int64) error { return &NotFoundError{ID: id} }

// MaxTextLen is the longest memory text accepted, in characters (runes).
const MaxTextLen = 4000

// MaxLabelLen is the longest Session or Speaker accepted, in characters.
const MaxLabelLen = 200
