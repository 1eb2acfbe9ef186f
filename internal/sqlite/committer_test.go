package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestCommitter: writes of concurrent callers queued while a batch is
// being written share the next transaction; each is committed once, a
// failing write is undone alone (its savepoint) and reported to its caller
// only, and the committed callbacks run in queue order, once committed.
func TestCommitter(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE w (v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	c := NewCommitter(db)
	insert := func(v int) func(ctx context.Context, tx *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO w (v) VALUES (?)`, v)
			return err
		}
	}
	var (
		mu    sync.Mutex
		order []int
	)
	committed := func(v int) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, v)
		}
	}
	// The first write holds the batch until the others are queued.
	release := make(chan struct{})
	first := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			close(first)
			<-release
			return insert(0)(ctx, tx)
		}, committed(0))
		if err != nil {
			t.Error(err)
		}
	})
	<-first
	const callers = 8
	errBad := errors.New("bad write")
	errs := make([]error, callers+1)
	for v := 1; v <= callers; v++ {
		wg.Go(func() {
			fn := insert(v)
			if v == 3 {
				fn = func(ctx context.Context, tx *sql.Tx) error {
					if err := insert(v)(ctx, tx); err != nil {
						return err
					}
					return errBad // after writing: undone with its savepoint
				}
			}
			errs[v] = c.Write(ctx, fn, committed(v))
		})
	}
	for c.gc.Queued() < callers {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for v := 1; v <= callers; v++ {
		if want := error(nil); v == 3 {
			if !errors.Is(errs[v], errBad) {
				t.Errorf("caller 3: %v, want its own error", errs[v])
			}
		} else if errs[v] != want {
			t.Errorf("caller %d: %v", v, errs[v])
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT v FROM w ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if want := []int{0, 1, 2, 4, 5, 6, 7, 8}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	// the callbacks of the committed writes, once each, in the order the
	// rows were written (the first alone, then the others as queued)
	if !slices.Equal(order, got) {
		t.Fatalf("committed callbacks %v, rows written %v", order, got)
	}
	if q := c.gc.Pending(); q != 0 {
		t.Fatalf("%d writes left pending", q)
	}
}

// A lone write that fails leaves nothing and says why; its callback is not
// called.
func TestCommitterLoneFailure(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	c := NewCommitter(db)
	called := false
	err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO missing (v) VALUES (1)`)
		return err
	}, func() { called = true })
	if err == nil || called {
		t.Fatalf("err %v, callback called %v", err, called)
	}
}
