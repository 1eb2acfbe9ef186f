package eventbus

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// The helper process is this test binary re-executed with these variables.
const (
	helperModeEnv = "EVENTBUS_HELPER_MODE"
	helperDBEnv   = "EVENTBUS_HELPER_DB"
	helperNEnv    = "EVENTBUS_HELPER_N"
)

// Helper modes.
const (
	// modePublishThenDeliver publishes N events (singles and batches), then
	// delivers them until killed.
	modePublishThenDeliver = "publish-then-deliver"
	// modePublishForever publishes until killed, delivering meanwhile.
	modePublishForever = "publish-forever"
	// modeFinish delivers everything in the log, prints "DONE" and exits.
	modeFinish = "finish"
)

// TestHelperProcess is not a test: it is the child process of TestKill9.
// Output protocol on stdout, one line each: "P <id>" after a Publish of id
// returned, "H <id>" after the handler recorded id, "DONE" when finished.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		t.Skip("helper process of TestKill9")
	}
	n, _ := strconv.Atoi(os.Getenv(helperNEnv))
	if err := runHelper(mode, os.Getenv(helperDBEnv), n); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// lineWriter serialises protocol lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  *os.File
}

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

func runHelper(mode, file string, n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := sqlite.Open(ctx, file)
	if err != nil {
		return err
	}
	defer db.Close()
	// The test's own record of handled events, outside the bus's schema.
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS handled (event_id INTEGER NOT NULL)`); err != nil {
		return err
	}
	b, err := Open(ctx, db, Options{BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	out := &lineWriter{w: os.Stdout}

	var target int64 // modeFinish: the last event to deliver
	if mode == modeFinish {
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM events`).Scan(&target); err != nil {
			return err
		}
	}
	handler := func(hctx context.Context, ev extension.Event) error {
		if ev.ID%10 == 0 { // a slow handler
			select {
			case <-time.After(3 * time.Millisecond):
			case <-hctx.Done():
				return hctx.Err()
			}
		}
		if _, err := db.ExecContext(hctx, `INSERT INTO handled (event_id) VALUES (?)`, ev.ID); err != nil {
			return err
		}
		out.printf("H %d", ev.ID)
		if ev.ID == target {
			out.printf("DONE")
			cancel()
		}
		return nil
	}
	if err := b.Subscribe("recorder", "", handler); err != nil {
		return err
	}
	if mode == modeFinish {
		st, err := b.Stats(ctx)
		if err != nil {
			return err
		}
		if st.Subscribers[0].Cursor >= target {
			out.printf("DONE")
			return nil
		}
	}

	publish := func(limit int) error {
		for i := 0; i < limit; {
			if i%50 == 25 { // now and then a batch of 10
				msgs := make([]Message, 10)
				for j := range msgs {
					msgs[j] = Message{Topic: "kill.batch", Payload: i + j}
				}
				if err := b.PublishBatch(ctx, msgs); err != nil {
					return err
				}
				// Ids of a batch are consecutive and this loop is the
				// only publisher: read them back.
				var last int64
				if err := db.QueryRowContext(ctx, `SELECT MAX(id) FROM events`).Scan(&last); err != nil {
					return err
				}
				for id := last - 9; id <= last; id++ {
					out.printf("P %d", id)
				}
				i += 10
				continue
			}
			id, err := b.PublishID(ctx, "kill.single", i)
			if err != nil {
				return err
			}
			out.printf("P %d", id)
			i++
		}
		out.printf("PUBLISHED")
		return nil
	}
	if mode == modePublishThenDeliver {
		// Everything is in the log before delivery starts.
		if err := publish(n); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- b.Run(ctx) })
	if mode == modePublishForever {
		if err := publish(1 << 30); err != nil {
			return err
		}
	}
	wg.Wait()
	return <-runErr
}

// helperRun is a running child process.
type helperRun struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	stderr *strings.Builder
}

func startHelper(t *testing.T, ctx context.Context, mode, file string, n int) *helperRun {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperDBEnv+"="+file, helperNEnv+"="+strconv.Itoa(n))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helperRun{cmd: cmd, lines: bufio.NewScanner(stdout), stderr: new(strings.Builder)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// killRecord is what the parent learned from a child's output.
type killRecord struct {
	published map[int64]bool
	handled   int
	done      bool
}

// follow reads protocol lines until stop says to kill (then SIGKILLs the
// child and drains its output) or the output ends.
func (h *helperRun) follow(t *testing.T, rec *killRecord, stop func(*killRecord) bool) (killed bool) {
	t.Helper()
	for h.lines.Scan() {
		line := h.lines.Text()
		switch {
		case strings.HasPrefix(line, "P "):
			id, err := strconv.ParseInt(line[2:], 10, 64)
			if err != nil {
				t.Fatalf("bad line %q", line)
			}
			rec.published[id] = true
		case strings.HasPrefix(line, "H "):
			rec.handled++
		case line == "DONE":
			rec.done = true
		}
		if !killed && stop != nil && stop(rec) {
			if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	err := h.cmd.Wait()
	if killed {
		if ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child did not die of SIGKILL: %v (stderr: %s)", err, h.stderr)
		}
	} else if err != nil {
		t.Fatalf("child failed: %v (stderr: %s)", err, h.stderr)
	}
	return killed
}

// Test 6: a real kill -9, during delivery and during publishing; after a
// restart every event is delivered at least once and every Publish that had
// returned is in the log.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	tests := []struct {
		name string
		mode string
		n    int
		// kill decides when to SIGKILL the first child.
		kill func(*killRecord) bool
	}{
		{
			name: "during delivery",
			mode: modePublishThenDeliver,
			n:    2000,
			kill: func(r *killRecord) bool { return r.handled >= 300 },
		},
		{
			name: "during publishing",
			mode: modePublishForever,
			kill: func(r *killRecord) bool { return len(r.published) >= 1500 && r.handled >= 100 },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			file := filepath.Join(t.TempDir(), "reverie.db")

			rec := &killRecord{published: map[int64]bool{}}
			first := startHelper(t, ctx, tc.mode, file, tc.n)
			if !first.follow(t, rec, tc.kill) {
				t.Fatalf("first child exited before it was killed (stderr: %s)", first.stderr)
			}
			handledBeforeKill := rec.handled
			if tc.n > 0 && len(rec.published) != tc.n {
				t.Fatalf("first child confirmed %d publishes before the kill, want all %d", len(rec.published), tc.n)
			}

			fin := startHelper(t, ctx, modeFinish, file, 0)
			finRec := &killRecord{published: map[int64]bool{}}
			fin.follow(t, finRec, nil)
			if !finRec.done {
				t.Fatalf("restarted child did not finish (stderr: %s)", fin.stderr)
			}

			db := openDB(t, file)
			logged := map[int64]bool{}
			rows, err := db.Query(`SELECT id FROM events ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				logged[id] = true
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			for id := range rec.published {
				if !logged[id] {
					t.Errorf("event %d was published (Publish returned) before the kill but is missing", id)
				}
			}
			counts := handledCounts(t, db)
			var missing []int64
			dups := 0
			for id := range logged {
				switch c := counts[id]; {
				case c == 0:
					missing = append(missing, id)
				case c > 1:
					dups += c - 1
				}
			}
			if len(missing) > 0 {
				t.Fatalf("%d events never delivered, e.g. %v", len(missing), missing[:min(len(missing), 10)])
			}
			if handledBeforeKill >= len(logged) {
				t.Fatalf("killed after %d of %d events were handled: the kill did not interrupt delivery", handledBeforeKill, len(logged))
			}
			t.Logf("%s: %d events logged, %d confirmed published before the kill, %d handled before the kill, all delivered; %d duplicate deliveries",
				tc.name, len(logged), len(rec.published), handledBeforeKill, dups)
		})
	}
}

func handledCounts(t *testing.T, db *sql.DB) map[int64]int {
	t.Helper()
	rows, err := db.Query(`SELECT event_id, COUNT(*) FROM handled GROUP BY event_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
