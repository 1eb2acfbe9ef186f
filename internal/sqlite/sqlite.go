// Package sqlite opens Reverie's SQLite database (pure Go, modernc.org/sqlite)
// with the settings every component relies on — WAL journal, a busy timeout,
// foreign keys — and runs each component's embedded, versioned migrations.
//
// Components own their schema: each embeds its migration files
// ("001_create_events.sql", "002_…") and applies them under its own name
// through the start's Migrations (extension.Migrations, which reads what is
// applied once for every component). Versions are tracked per component in
// the schema_migrations table, so packages never have to agree on a global
// numbering.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/extension"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// BusyTimeout is how long a connection waits for a lock held by another
// connection before failing with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// Open opens (creating if needed) the database file at path with WAL,
// busy_timeout, foreign_keys and synchronous=NORMAL, and checks that it
// answers. Write transactions begun through Tx take the write lock
// immediately (BEGIN IMMEDIATE), which avoids lock-upgrade deadlocks.
// Use ":memory:" only in tests that need a throwaway database.
//
// The database holds conversations and memories: the file and its -wal
// and -shm companions are made mode 0600 whatever the umask (SQLite gives
// the companions the database file's mode; files left broader by an older
// version are narrowed).
func Open(ctx context.Context, file string) (*sql.DB, error) {
	return OpenWith(ctx, file, Options{})
}

// Options change how OpenWith sets a database up.
type Options struct {
	// ManualCheckpoint turns SQLite's automatic WAL checkpoint off
	// (wal_autocheckpoint 0): a Committer's Run checkpoints instead, off
	// the commit path. With it on, the commit that takes the WAL past 1,000
	// pages copies them into the database and syncs both files before it
	// returns, and under a Committer every write waiting for the shared
	// transaction waits for that too (most of a turn's waiting under 20
	// clients). Without a Run the WAL is checkpointed only when the last
	// connection closes.
	ManualCheckpoint bool
	// CloseIdleAfter closes a pooled connection once it has been unused
	// this long (0: idle connections stay open until the pool is
	// trimmed or closed; ignored for ":memory:", where closing the only
	// connection would drop the database). An open connection keeps its
	// parse of the schema, its lookaside memory and its cached
	// statements in SQLite's C heap (~250 KiB for Reverie's); a long-
	// running process that goes quiet hands that back without waiting
	// for a release, at the price of parsing the schema again (~1.5 ms)
	// when it next needs a connection.
	CloseIdleAfter time.Duration
	// WALLimit is the size in bytes the write-ahead log file is cut back
	// to when the log restarts (journal_size_limit), and the size past
	// which a Committer's Run makes it restart (0: DefaultWALLimit). The
	// log restarts from its start only when a write begins after a
	// checkpoint that copied every frame, and the file keeps its largest
	// size until the last connection closes: without a limit, writes that
	// never pause leave it at tens of megabytes.
	WALLimit int64
}

// DefaultWALLimit is Options.WALLimit's default: about what SQLite's
// automatic checkpoint lets the log reach (1,000 pages of 4 KiB).
const DefaultWALLimit = 4 << 20

// OpenWith is Open with o.
func OpenWith(ctx context.Context, file string, o Options) (*sql.DB, error) {
	if file != ":memory:" {
		if err := private(file); err != nil {
			return nil, fmt.Errorf("open database %s: %w", file, err)
		}
	}
	connector, err := newCachingConnector(dsnOf(file, o))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	db := sql.OpenDB(connector)
	if file == ":memory:" {
		// Every connection to :memory: is a separate database.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(maxConns)
		db.SetMaxIdleConns(maxConns)
		db.SetConnMaxIdleTime(max(o.CloseIdleAfter, 0))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	if file != ":memory:" {
		for _, companion := range []string{file + "-wal", file + "-shm"} {
			if err := narrow(companion); err != nil && !errors.Is(err, fs.ErrNotExist) {
				db.Close()
				return nil, fmt.Errorf("open database %s: %w", file, err)
			}
		}
	}
	return db, nil
}

// dsnOf is the driver's data source name for file opened with o.
func dsnOf(file string, o Options) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if file != ":memory:" {
		q.Add("_pragma", "journal_mode(WAL)")
		if o.ManualCheckpoint {
			q.Add("_pragma", "wal_autocheckpoint(0)")
		}
		limit := o.WALLimit
		if limit <= 0 {
			limit = DefaultWALLimit
		}
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", limit))
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + file + "?" + q.Encode()
}

// Ready opens connections in db's pool until it holds n idle ones with the
// schema read, so that callers running at once later do not each pay for
// opening one (a new connection parses the whole schema: ~1.5 ms for
// Reverie's). It gives up quietly at the first error: callers then open
// connections as usual.
func Ready(ctx context.Context, db *sql.DB, n int) {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return
		}
		conns = append(conns, c)
		var one int
		if err := c.QueryRowContext(ctx, `SELECT 1 FROM sqlite_schema LIMIT 1`).Scan(&one); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return
		}
	}
}

// maxConns is the size of a database's connection pool.
const maxConns = 8

// FileMode is the mode of the database file and its -wal and -shm files.
const FileMode fs.FileMode = 0o600

// private creates file with FileMode when it does not exist (so SQLite
// never creates it under the umask), else narrows its mode.
func private(file string) error {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	switch {
	case err == nil:
		return f.Close()
	case errors.Is(err, fs.ErrExist):
		return narrow(file)
	}
	return err
}

// narrow takes group and other permissions away from path.
func narrow(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&^FileMode == 0 {
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&FileMode); err != nil {
		return fmt.Errorf("make %s private: %w", path, err)
	}
	return nil
}

// Tx runs fn inside a transaction, committing when fn returns nil and rolling
// back otherwise (also when fn panics, after which the panic continues).
func Tx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// ErrBadMigration is returned by Migrations.Migrate for a migration file whose name does
// not start with a positive version number, or for two files with the same
// version.
var ErrBadMigration = extension.ErrBadMigration

// Migrations is extension.Migrations: the components of one start migrate
// through one, which reads the record of applied migrations once for all
// of them.
type Migrations = extension.Migrations

// NewMigrations is extension.NewMigrations.
func NewMigrations(db *sql.DB) *Migrations { return extension.NewMigrations(db) }

// Version returns the highest applied migration version of component, 0 when
// none has been applied.
func Version(ctx context.Context, db *sql.DB, component string) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx,
		`SELECT MAX(version) FROM schema_migrations WHERE component = ?`, component).Scan(&v)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0, nil
		}
		return 0, fmt.Errorf("read %s schema version: %w", component, err)
	}
	return int(v.Int64), nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns nil when SQLite
// answers "ok", otherwise an error listing the problems it reported.
func IntegrityCheck(ctx context.Context, db *sql.DB) error {
	answers, err := Rows(ctx, db, Scan1[string], `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	problems := slices.DeleteFunc(answers, func(s string) bool { return s == "ok" })
	if len(problems) > 0 {
		return fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	return nil
}
