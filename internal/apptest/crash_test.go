package apptest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/logtest"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// The crash child is this test binary re-executed with crashChildEnv set:
// it runs the whole agent (web channel only) on the data dir the parent
// names, prints "READY" once the agent takes messages, and runs until it is
// killed or receives SIGTERM.
const (
	crashChildEnv = "REVERIE_CRASH_CHILD_DATA"
	crashSeedEnv  = "REVERIE_CRASH_SEED"
)

// TestCrashChild is not a test: it is the agent process of
// TestCrashInjection.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("the agent process of TestCrashInjection")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	info, ok := extension.Lookup("web")
	if !ok {
		fmt.Fprintln(os.Stderr, "crash child: the web extension is not registered")
		os.Exit(1)
	}
	a, err := app.New(ctx, app.Options{DataDir: dir, Env: os.Environ(), Console: os.Stderr, Registry: []extension.Info{info}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(1)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
		fmt.Println("READY")
	case err := <-done:
		fmt.Fprintln(os.Stderr, "crash child: stopped before ready:", err)
		os.Exit(1)
	}
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// crashMessage is one message the test sends: "m<N> <kind>".
type crashMessage struct {
	n      int
	thread string
	kind   string // plain, read (a read-only tool), shell (a side effect)
	// status is the HTTP status of its POST (0: the connection broke).
	status int
}

var messageRE = regexp.MustCompile(`^m(\d+) (plain|read|shell)$`)

// TestCrashInjection runs a real agent process, kills it with SIGKILL at
// random points of many turns (the fake model answers after random delays;
// some turns run a read-only tool, some a shell command with a side
// effect), restarts it each time, and finally checks the history in the
// database: every message the agent accepted was answered, or marked
// interrupted, exactly once; no side effect ran twice; the database is
// intact. Set REVERIE_CRASH_SEED to replay a run.
func TestCrashInjection(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", crashSeedEnv, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var rngMu sync.Mutex
	random := func(n int) int {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.IntN(n)
	}

	const (
		kills     = 20
		perCycle  = 3
		threads   = 3
		shellWait = "0.05"
	)
	dir := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	base := "http://" + addr

	// The model: the first call of a turn answers plain messages and asks
	// for the tool of the others; the call after a tool result answers.
	// Seeds and anything else get a short text. Each reply waits a random
	// 0–25 ms. Every call counts toward the cycle's kill point.
	var calls atomic.Int64
	var killAt atomic.Int64
	kill := make(chan struct{}, 1)
	model := llmtest.NewOpenAIServer(t)
	model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		if calls.Add(1) == killAt.Load() {
			select {
			case kill <- struct{}{}:
			default:
			}
		}
		delay := time.Duration(random(25)) * time.Millisecond
		n, kind, afterTool := lastTurn(req.Messages)
		switch {
		case n < 0:
			return llmtest.ServerReply{Text: "hello", FirstByteDelay: delay}
		case afterTool || kind == "plain":
			return llmtest.ServerReply{Text: fmt.Sprintf("answer m%d", n), FirstByteDelay: delay}
		case kind == "read":
			return llmtest.ServerReply{FirstByteDelay: delay, ToolCalls: []llm.ToolCall{{
				Name: "read_file", Arguments: json.RawMessage(`{"path":"notes.txt"}`)}}}
		default:
			cmd := fmt.Sprintf("echo m%d >> shell.log; sleep %s", n, shellWait)
			args, _ := json.Marshal(map[string]string{"command": cmd})
			return llmtest.ServerReply{FirstByteDelay: delay, ToolCalls: []llm.ToolCall{{Name: "execute_shell", Arguments: args}}}
		}
	})
	env := append(os.Environ(),
		crashChildEnv+"="+dir,
		"OPENAI_BASE_URL="+model.BaseURL(),
		"OPENAI_API_KEY=sk-test",
		"REVERIE_MODEL=gpt-test",
		"REVERIE_LOG__FILE=false",
		"REVERIE_TOOLS__SHELL__SANDBOX=off",
		// Unsandboxed, the shell can reach the network, and after its
		// first output a conversation holds untrusted input: every later
		// command would wait for an approval nobody gives here.
		"REVERIE_TOOLS__APPROVAL__EXECUTE_SHELL=never",
		"REVERIE_WEB__LISTEN="+addr,
		"REVERIE_WEB__TOKEN="+WebToken,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
	)
	client := &http.Client{Timeout: 60 * time.Second}

	var (
		msgs    []*crashMessage
		next    int
		start   = time.Now()
		resumed int // turns carried on after a restart (from the agents' logs)
		startup time.Duration
		allLogs strings.Builder
	)
	defer func() {
		if t.Failed() {
			t.Logf("the agents' logs:\n%s", allLogs.String())
		}
	}()
	for cycle := 0; cycle <= kills; cycle++ {
		final := cycle == kills
		t0 := time.Now()
		child := startCrashChild(t, env)
		startup += time.Since(t0)
		calls.Store(0)
		// A kill point: one of the model calls this cycle may make.
		killAt.Store(int64(1 + random(2*perCycle)))
		var wg sync.WaitGroup
		var batch []*crashMessage
		if !final {
			for range perCycle {
				kinds := []string{"plain", "read", "shell"}
				m := &crashMessage{n: next, thread: fmt.Sprintf("web:crash%d", random(threads)), kind: kinds[random(3)]}
				next++
				batch = append(batch, m)
			}
		} else {
			// One last message per thread: its reply comes after every item
			// queued before it in that thread.
			for i := range threads {
				batch = append(batch, &crashMessage{n: next, thread: fmt.Sprintf("web:crash%d", i), kind: "plain"})
				next++
			}
		}
		msgs = append(msgs, batch...)
		for _, m := range batch {
			wg.Go(func() { m.status = postMessage(client, base, m) })
		}
		posted := make(chan struct{})
		go func() { wg.Wait(); close(posted) }()
		if final {
			<-posted
			child.stop(t)
			resumed += strings.Count(child.logs.String(), "resuming a turn a restart interrupted")
			allLogs.WriteString(child.logs.String())
			break
		}
		select {
		case <-kill:
		case <-posted: // every turn ended first: killed while idle
		}
		child.kill(t)
		<-posted
		resumed += strings.Count(child.logs.String(), "resuming a turn a restart interrupted")
		allLogs.WriteString(child.logs.String())
	}
	elapsed := time.Since(start)

	// The history, read from the database itself.
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var integrity string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check = %q, %v", integrity, err)
	}
	var inbox int
	if err := db.QueryRow(`SELECT count(*) FROM router_inbox`).Scan(&inbox); err != nil || inbox != 0 {
		t.Errorf("inbox rows left: %d (%v)", inbox, err)
	}
	hist := readCrashHistory(t, db)
	counts := map[string]int{}
	for _, m := range msgs {
		h := hist[m.n]
		if h == nil {
			h = &crashHistory{}
		}
		switch {
		case h.asked == 0 && m.status == http.StatusOK:
			t.Errorf("m%d: answered over HTTP but not in the history", m.n)
		case h.asked == 0:
			counts["never accepted (the connection broke first)"]++
			continue
		case h.asked > 1:
			t.Errorf("m%d: stored %d times", m.n, h.asked)
		}
		switch {
		case h.answers+h.notes == 0:
			t.Errorf("m%d (%s, %s): neither answered nor marked interrupted; the thread:\n%s", m.n, m.kind, m.thread, dumpThread(db, m.thread))
		case h.answers+h.notes > 1:
			t.Errorf("m%d: %d answers and %d interruption notes", m.n, h.answers, h.notes)
		case h.notes == 1 && h.tools:
			counts["marked interrupted after a side effect"]++
		case h.notes == 1:
			counts["marked interrupted after 2 starts"]++
		default:
			counts["answered"]++
		}
		if m.status == http.StatusOK {
			counts["answered before a kill"]++
		}
		if m.status == 0 {
			counts["accepted, then the agent was killed"]++
		}
	}
	// A side effect never runs twice: every shell line appears at most once.
	lines := map[string]int{}
	if data, err := os.ReadFile(filepath.Join(dir, "workspace", "shell.log")); err == nil {
		for _, l := range strings.Fields(string(data)) {
			lines[l]++
		}
	}
	for l, n := range lines {
		if n > 1 {
			t.Errorf("shell side effect %s ran %d times", l, n)
		}
	}
	t.Logf("agent start-ups took %s in all", startup.Round(time.Millisecond))
	t.Logf("%d kills in %s; %d messages sent: %v; %d turns resumed after a restart; %d shell side effects, none repeated",
		kills, elapsed.Round(time.Millisecond), len(msgs), counts, resumed, len(lines))
}

// lastTurn finds what the model is asked: the number and kind of the last
// test message, and whether a tool result follows it; n is -1 for a
// request that is not about a test message (a seed).
func lastTurn(msgs []llmtest.ChatMessage) (n int, kind string, afterTool bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "tool" {
			afterTool = true
			continue
		}
		if m.Role != "user" {
			continue
		}
		if sub := messageRE.FindStringSubmatch(strings.TrimSpace(m.Text())); sub != nil {
			n, _ = strconv.Atoi(sub[1])
			return n, sub[2], afterTool
		}
		return -1, "", false
	}
	return -1, "", false
}

type crashHistory struct {
	asked   int // times the message is stored
	answers int // "answer m<N>" replies
	notes   int // interruption notes answering it
	// tools: the note lists tool calls with side effects (else the turn
	// was interrupted too often)
	tools bool
}

// readCrashHistory walks every thread's messages in order and attributes
// each final assistant text to the test message before it.
func readCrashHistory(t *testing.T, db *sql.DB) map[int]*crashHistory {
	t.Helper()
	rows, err := db.Query(`SELECT thread_id, role, parts, source FROM messages ORDER BY thread_id, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]*crashHistory{}
	get := func(n int) *crashHistory {
		if out[n] == nil {
			out[n] = &crashHistory{}
		}
		return out[n]
	}
	thread, current := "", -1
	for rows.Next() {
		var th, role, parts, source string
		if err := rows.Scan(&th, &role, &parts, &source); err != nil {
			t.Fatal(err)
		}
		if th != thread {
			thread, current = th, -1
		}
		var ps []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(parts), &ps); err != nil {
			t.Fatalf("parts of a message: %v", err)
		}
		text, calls := "", false
		for _, p := range ps {
			switch p.Type {
			case "text":
				text += p.Text
			case "tool_call":
				calls = true
			}
		}
		switch {
		case role == "user" && source == "":
			sub := messageRE.FindStringSubmatch(strings.TrimSpace(text))
			if sub == nil {
				t.Errorf("unexpected user message %q", text)
				continue
			}
			current, _ = strconv.Atoi(sub[1])
			get(current).asked++
		case role == "assistant" && !calls && current >= 0:
			switch {
			case text == fmt.Sprintf("answer m%d", current):
				get(current).answers++
			case strings.HasPrefix(text, router.InterruptedPrefix):
				get(current).notes++
				get(current).tools = strings.Contains(text, "What was done:")
			default:
				t.Errorf("m%d answered with %q", current, text)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// postMessage sends m and returns the HTTP status (0 when the connection
// broke: the agent was killed).
func postMessage(c *http.Client, base string, m *crashMessage) int {
	body, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("m%d %s", m.n, m.kind)})
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/threads/"+m.thread+"/messages", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+WebToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// crashChild is a running agent process.
type crashChild struct {
	cmd  *exec.Cmd
	done chan error
	logs *logtest.Buffer
}

// startCrashChild starts the agent and waits until it says READY.
func startCrashChild(t *testing.T, env []string) *crashChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = env
	logs := &logtest.Buffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &crashChild{cmd: cmd, done: make(chan error, 1), logs: logs}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled && sc.Text() == "READY" {
				signalled = true
				close(ready)
			}
		}
		c.done <- cmd.Wait()
	}()
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case <-ready:
	case err := <-c.done:
		t.Fatalf("the agent exited before it was ready: %v\n%s", err, logs)
	case <-timer.C:
		_ = cmd.Process.Kill()
		t.Fatalf("the agent did not get ready within a minute\n%s", logs)
	}
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *crashChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-c.done
}

// stop asks the agent to stop (SIGTERM) and waits for a clean exit.
func (c *crashChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := <-c.done; err != nil {
		t.Fatalf("the agent did not stop cleanly: %v\n%s", err, c.logs)
	}
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func dumpThread(db *sql.DB, thread string) string {
	rows, err := db.Query(`SELECT id, role, source, substr(parts, 1, 200) FROM messages WHERE thread_id = ? ORDER BY id`, thread)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var role, source, parts string
		_ = rows.Scan(&id, &role, &source, &parts)
		fmt.Fprintf(&b, "%d %s %s %s\n", id, role, source, parts)
	}
	return b.String()
}
