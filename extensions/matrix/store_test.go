package matrix

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

// An existing install's handled events move to the router's table of seen
// message ids (so a batch fetched again after the upgrade is not answered
// twice), and the channel's own table goes; the store still tells them.
func TestHandledEventsMoveToTheRouter(t *testing.T) {
	h := extensiontest.NewHost(t)
	ctx := t.Context()
	db := h.DB()
	// The schema before the move: migrations 001 and 002.
	old := fstest.MapFS{}
	for _, name := range []string{"001_matrix.sql", "002_matrix_pending.sql"} {
		b, err := fs.ReadFile(migrationFiles, "migrations/"+name)
		if err != nil {
			t.Fatal(err)
		}
		old[name] = &fstest.MapFile{Data: b}
	}
	if err := extension.Migrate(ctx, db, component, old, "."); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO matrix_handled (event_id, room_id, handled_at) VALUES ('$a', '!r:hs', 1000), ('$b', '!r:hs', 2000)`); err != nil {
		t.Fatal(err)
	}
	if err := h.Migrate(ctx, component, migrationFiles, "migrations"); err != nil {
		t.Fatal(err)
	}
	rows, err := extension.Rows(ctx, db, extension.Scan1[string],
		`SELECT channel || ' ' || message_id || ' ' || seen_at FROM router_seen ORDER BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != "matrix $a 1000" || rows[1] != "matrix $b 2000" {
		t.Errorf("router_seen = %q", rows)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'matrix_handled'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("matrix_handled still there (%d, %v)", n, err)
	}
	s := &store{db: db, now: h.Now}
	for id, want := range map[string]bool{"$a": true, "$c": false} {
		if got, err := s.handled(ctx, id); err != nil || got != want {
			t.Errorf("handled(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
}
