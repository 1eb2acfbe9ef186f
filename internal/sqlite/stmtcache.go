package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"
	"strings"

	msqlite "modernc.org/sqlite"
)

// stmtCacheSize is how many prepared statements each connection keeps.
const stmtCacheSize = 32

// cachingConnector opens the driver's connections with a statement cache
// each (stmtConn).
type cachingConnector struct{ base driver.Connector }

var _ driver.Connector = cachingConnector{}

func newCachingConnector(dsn string) (driver.Connector, error) {
	base, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{base}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newStmtConn(conn)
}

func (c cachingConnector) Driver() driver.Driver { return c.base.Driver() }

// conn is what stmtConn needs of the driver's connection.
type conn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmt is what stmtConn needs of the driver's statements.
type stmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// stmtConn is a connection that keeps the statements run through
// ExecContext and QueryContext, or prepared with PrepareContext, prepared:
// the stmtCacheSize most recently used, so that running a statement again does not parse it again: the
// pure-Go SQLite spends ~60 µs parsing a typical statement, and a turn runs
// dozens (parsing was ~15 % of the agent's CPU time under concurrent turns).
// A statement is cached only when its text is one statement (no ';' but a
// trailing one), and used only by one caller at a time: a second caller of
// the same text while rows of the first are open, as a nested query would
// be, runs it unprepared. database/sql uses a connection from one goroutine
// at a time, so the cache needs no lock.
type stmtConn struct {
	conn
	cache map[string]*cachedStmt
	clock uint64 // use counter, for least-recently-used eviction
}

type cachedStmt struct {
	s    stmt
	used uint64
	busy bool // rows of it are open
	gone bool // evicted or failed while busy: close it when the rows close
}

var (
	_ conn        = (*stmtConn)(nil)
	_ driver.Rows = (*cachedRows)(nil)
	_ driver.Stmt = (*heldStmt)(nil)
)

func newStmtConn(c driver.Conn) (driver.Conn, error) {
	cc, ok := c.(conn)
	if !ok {
		c.Close()
		return nil, errors.New("sqlite driver connection lacks a context method")
	}
	return &stmtConn{conn: cc, cache: map[string]*cachedStmt{}}, nil
}

// cacheable reports whether query is a single statement.
func cacheable(query string) bool {
	q := strings.TrimRight(query, " \t\r\n;")
	return q != "" && !strings.Contains(q, ";")
}

// get returns the idle cached statement for query, preparing it on first
// use; nil when query is not cached or its statement is in use.
func (c *stmtConn) get(ctx context.Context, query string) (*cachedStmt, error) {
	if !cacheable(query) {
		return nil, nil
	}
	c.clock++
	if cs, ok := c.cache[query]; ok {
		if cs.busy {
			return nil, nil
		}
		cs.used = c.clock
		return cs, nil
	}
	ds, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s, ok := ds.(stmt)
	if !ok {
		ds.Close()
		return nil, nil
	}
	if len(c.cache) >= stmtCacheSize {
		c.evict()
	}
	cs := &cachedStmt{s: s, used: c.clock}
	c.cache[query] = cs
	return cs, nil
}

// evict drops the least recently used statement.
func (c *stmtConn) evict() {
	var (
		oldest string
		min    uint64
	)
	for q, cs := range c.cache {
		if oldest == "" || cs.used < min {
			oldest, min = q, cs.used
		}
	}
	c.drop(oldest)
}

// drop removes query's statement from the cache, closing it now or, when
// rows of it are open, when they close.
func (c *stmtConn) drop(query string) {
	cs, ok := c.cache[query]
	if !ok {
		return
	}
	delete(c.cache, query)
	if cs.busy {
		cs.gone = true
		return
	}
	cs.s.Close()
}

// ExecContext runs query through its cached statement.
func (c *stmtConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.conn.ExecContext(ctx, query, args)
	}
	res, err := cs.s.ExecContext(ctx, args)
	if err != nil {
		c.drop(query) // prepared afresh next time, whatever went wrong
	}
	return res, err
}

// QueryContext runs query through its cached statement; the statement is
// in use until the rows are closed.
func (c *stmtConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.conn.QueryContext(ctx, query, args)
	}
	rows, err := cs.s.QueryContext(ctx, args)
	if err != nil {
		c.drop(query)
		return nil, err
	}
	cs.busy = true
	return &cachedRows{Rows: rows, cs: cs}, nil
}

// PrepareContext hands out query's cached statement for the caller to use
// until it closes it (database/sql's Prepare, in a transaction or on the
// pool); while it is held, or when query is not cached, the statement is
// prepared for the caller alone.
func (c *stmtConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.conn.PrepareContext(ctx, query)
	}
	cs.busy = true
	return &heldStmt{stmt: cs.s, cs: cs}, nil
}

// Prepare is PrepareContext without a context.
func (c *stmtConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Close closes the cached statements, then the connection.
func (c *stmtConn) Close() error {
	for q := range c.cache {
		c.drop(q)
	}
	return c.conn.Close()
}

// heldStmt is a cached statement handed out by PrepareContext: closing it
// gives it back to the cache.
type heldStmt struct {
	stmt
	cs     *cachedStmt
	closed bool
}

func (h *heldStmt) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	h.cs.busy = false
	if h.cs.gone {
		return h.cs.s.Close()
	}
	return nil
}

// cachedRows are rows of a cached statement: closing them frees the
// statement for its next use (the driver resets it).
type cachedRows struct {
	driver.Rows
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.cs.busy = false
	if r.cs.gone {
		r.cs.s.Close()
	}
	return err
}

// The column type methods of the driver's rows, passed on.

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// Status passes the driver's per-connection counters on (msqlite.DBStatus:
// what a caller of sql.Conn.Raw reads of a connection).
func (c *stmtConn) Status(op msqlite.DBStatusOp, reset bool) (current, high int, err error) {
	st, ok := c.conn.(msqlite.DBStatus)
	if !ok {
		return 0, 0, errors.New("sqlite driver connection keeps no status")
	}
	return st.Status(op, reset)
}

var _ msqlite.DBStatus = (*stmtConn)(nil)
