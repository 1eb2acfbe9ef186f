package apptest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/logtest"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// TestProviderErrorEchoingTheKeyLeaksNowhere is issue 15's leak: a model
// server that answers with an error quoting the request's Authorization
// header. The key must appear in no log (file or console), no row of any
// table of reverie.db, no API response (the 502 body, the interaction log,
// recent events), no SSE event and no WebSocket error frame — while each of
// them does carry the (redacted) error, so the check is not vacuous.
func TestProviderErrorEchoingTheKeyLeaksNowhere(t *testing.T) {
	const key = "sk-proj-LEAKCHECK-7f3a9b2c4d5e6f708192a3b4"
	console := &logtest.Buffer{}
	w := StartWeb(t, WithConsole(console), WithEnv("OPENAI_API_KEY="+key, "REVERIE_LOG__FILE=true", "REVERIE_LOG__LEVEL=debug"))
	w.Model.Handle(func(llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Status: http.StatusUnauthorized, ErrorType: "invalid_request_error",
			ErrorMessage: "Incorrect API key provided. You sent: Authorization: Bearer " + key}
	})

	// The web extension registered its token through the host.
	if got := w.App.Secrets.Redact("token=" + w.Token); got != "token="+redact.Marker {
		t.Errorf("the web token is not a registered secret: %q", got)
	}

	sse, stopSSE := rawSSE(t, w)
	defer stopSSE()

	// A WebSocket turn: its error frame.
	ws := dialWS(t, w, "")
	writeFrame(t, ws, map[string]string{"type": "message", "thread": "web:leak-ws", "text": "hello"})
	frames := readReply(t, ws)
	last := frames[len(frames)-1]
	if last.Type != api.FrameError || !strings.Contains(last.Error, "refused the API key") {
		t.Fatalf("WebSocket frames %s, last %+v: want an error frame", frameTypes(frames), last)
	}
	for _, f := range frames {
		assertNoKey(t, "WebSocket frame", fmt.Sprintf("%+v", f), key)
	}

	// A synchronous turn: the 502 body.
	code, body := w.Do(t, "POST", "/threads/web:leak-post/messages", map[string]string{"text": "hello"})
	if code != http.StatusBadGateway || !strings.Contains(string(body), redact.Marker) {
		t.Fatalf("POST messages: %d %s, want 502 with the redacted provider error", code, body)
	}
	assertNoKey(t, "502 body", string(body), key)

	// The key really went out, and the server echoed it.
	if reqs := w.Model.Requests(); len(reqs) == 0 || reqs[0].Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("the model server did not receive the key")
	}

	code, body = w.Do(t, "GET", "/interactions?limit=1000", nil)
	if code != http.StatusOK || !strings.Contains(string(body), redact.Marker) {
		t.Fatalf("interactions: %d %s, want the failed turns with the redacted error", code, body)
	}
	assertNoKey(t, "GET /interactions", string(body), key)
	code, body = w.Do(t, "GET", "/events/recent?limit=1000", nil)
	if code != http.StatusOK || !strings.Contains(string(body), agent.TopicTurnFailed) {
		t.Fatalf("events/recent: %d %s, want the turn.failed events", code, body)
	}
	assertNoKey(t, "GET /events/recent", string(body), key)

	// Both turn.failed events reach the SSE stream.
	var streamed []string
	failed := 0
	deadline := time.After(patience)
	for failed < 2 {
		select {
		case line, ok := <-sse:
			if !ok {
				t.Fatalf("event stream ended after %q", streamed)
			}
			streamed = append(streamed, line)
			if strings.Contains(line, agent.TopicTurnFailed) {
				failed++
			}
		case <-deadline:
			t.Fatalf("2 turn.failed events not streamed within %v: %q", patience, streamed)
		}
	}
	assertNoKey(t, "SSE stream", strings.Join(streamed, "\n"), key)

	stopSSE()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.ReadFile(filepath.Join(w.DataDir, "logs", "reverie.log"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"log file": string(logFile), "console": console.String()} {
		if !strings.Contains(text, "model call failed") || !strings.Contains(text, redact.Marker) {
			t.Errorf("%s lacks the redacted model failure:\n%s", name, text)
		}
		assertNoKey(t, name, text, key)
	}
	scanDatabase(t, filepath.Join(w.DataDir, app.DatabaseFile), key)
}

// rawSSE streams the raw lines of GET /api/v1/events.
func rawSSE(t *testing.T, w *WebHarness) (<-chan string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", w.Base+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("events: %v %v", resp, err)
	}
	out := make(chan string, 256)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case out <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	})
	var once sync.Once
	return out, func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// scanDatabase fails the test if any text or blob in any table holds key,
// and requires the failed turns to be recorded in the interaction log and
// the event log.
func scanDatabase(t *testing.T, path, key string) {
	t.Helper()
	redacted := scanDatabaseFor(t, path, key)
	for _, table := range []string{"interactions", "events"} {
		if !redacted[table] {
			t.Errorf("table %s holds no redacted error: the failed turns were not recorded", table)
		}
	}
}

// scanDatabaseFor fails the test if any text or blob in any table holds
// key, and returns the tables that hold a redaction marker.
func scanDatabaseFor(t *testing.T, path, key string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := queryStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if len(tables) < 5 {
		t.Fatalf("tables %q", tables)
	}
	redacted := map[string]bool{}
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Errorf("scan %s: %v", table, err)
			continue
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			for i, v := range vals {
				var s string
				switch v := v.(type) {
				case string:
					s = v
				case []byte:
					s = string(v)
				default:
					continue
				}
				if strings.Contains(s, key) {
					t.Errorf("table %s, column %s holds the key: %s", table, cols[i], s)
				}
				if strings.Contains(s, redact.Marker) {
					redacted[table] = true
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Errorf("scan %s: %v", table, err)
		}
		rows.Close()
	}
	return redacted
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func assertNoKey(t *testing.T, where, text, key string) {
	t.Helper()
	if strings.Contains(text, key) {
		t.Errorf("%s holds the API key:\n%s", where, text)
	}
}
