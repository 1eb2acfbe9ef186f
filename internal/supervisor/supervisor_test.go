package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/internal/logtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Environment of the helper child process.
const (
	envHelper     = "SUPERVISOR_TEST_HELPER"      // "1" selects helper mode
	envMarkerDir  = "SUPERVISOR_TEST_MARKERS"     // a marker file per start goes here
	envExitCode   = "SUPERVISOR_TEST_EXIT_CODE"   // exit with this code right after starting…
	envExitRuns   = "SUPERVISOR_TEST_EXIT_RUNS"   // …on the first N runs only (unset: every run)
	envIgnoreTerm = "SUPERVISOR_TEST_IGNORE_TERM" // "1": ignore SIGTERM and never exit
	envSpawn      = "SUPERVISOR_TEST_SPAWN"       // start a grandchild connected to this unix socket
	envGrandchild = "SUPERVISOR_TEST_GRANDCHILD"  // "1": act as that grandchild
)

// TestHelperProcess is the child the supervisor runs in these tests (the
// test binary re-executed). It records its start with a marker file and a
// "start N PID" line on stdout, then behaves as the environment says: exit
// at once with a code, ignore SIGTERM, or run until SIGTERM (prints "term N",
// exits 0) or SIGUSR1 (exits 1, a crash).
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) != "1" {
		t.Skip("helper process for the supervisor tests")
	}
	os.Exit(helperMain())
}

func helperMain() int {
	if os.Getenv(envGrandchild) == "1" {
		// Connect to the test and block: the test sees EOF when we die.
		conn, err := net.Dial("unix", os.Getenv(envSpawn))
		if err != nil {
			return 97
		}
		_, _ = conn.Read(make([]byte, 1))
		return 0
	}
	dir := os.Getenv(envMarkerDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 99
	}
	run := len(entries) + 1
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("start-%03d", run)), nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 99
	}
	sigs := make(chan os.Signal, 1)
	if os.Getenv(envIgnoreTerm) == "1" {
		signal.Ignore(syscall.SIGTERM)
		signal.Notify(sigs, syscall.SIGUSR2) // never sent: keeps a receiver to block on
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGUSR1)
	}
	if sock := os.Getenv(envSpawn); sock != "" {
		gc := exec.Command(os.Args[0], os.Args[1:]...)
		gc.Env = append(os.Environ(), envGrandchild+"=1")
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 99
		}
	}
	fmt.Printf("start %d %d %s\n", run, os.Getpid(), os.Getenv(InstanceEnv))

	if code := os.Getenv(envExitCode); code != "" {
		n, _ := strconv.Atoi(code)
		limit, _ := strconv.Atoi(os.Getenv(envExitRuns))
		if limit == 0 || run <= limit {
			return n
		}
	}
	for sig := range sigs {
		switch sig {
		case syscall.SIGTERM:
			fmt.Printf("term %d\n", run)
			return 0
		case syscall.SIGUSR1:
			return 1
		}
	}
	return 98
}

// lineEvents is the child's stdout, split into lines delivered on a channel
// (a pipe from the child: the tests wait on it instead of polling).
type lineEvents struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (e *lineEvents) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf = append(e.buf, p...)
	for {
		i := bytes.IndexByte(e.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		e.lines <- string(e.buf[:i])
		e.buf = e.buf[i+1:]
	}
}

// harness runs Run in the background against the helper child.
type harness struct {
	t         *testing.T
	ctx       context.Context // bounds every wait of the test
	clock     *fakeClock
	markers   string
	events    *lineEvents
	logs      *logtest.Buffer
	opts      Options
	cancelRun context.CancelFunc
	done      chan error
}

// newHarness prepares a supervisor for the helper child with env; configure
// adjusts the options before start is called.
func newHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	h := &harness{
		t:       t,
		ctx:     ctx,
		clock:   newFakeClock(),
		markers: t.TempDir(),
		events:  &lineEvents{lines: make(chan string, 100)},
		logs:    &logtest.Buffer{},
	}
	childEnv := append(os.Environ(), envHelper+"=1", envMarkerDir+"="+h.markers,
		// A race-enabled child otherwise lingers 1 s after exiting 0.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	for k, v := range env {
		childEnv = append(childEnv, k+"="+v)
	}
	h.opts = Options{
		Command:        []string{os.Args[0], "-test.run=^TestHelperProcess$"},
		Env:            childEnv,
		Stdout:         h.events,
		Stderr:         h.logs,
		CrashLoopLimit: -1,
		Logger:         slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:          h.clock,
	}
	return h
}

func (h *harness) start() {
	runCtx, cancel := context.WithCancel(context.Background())
	h.cancelRun = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- Run(runCtx, h.opts) }()
	h.t.Cleanup(func() {
		// Make sure Run has returned even if the test failed half-way:
		// cancel it and keep firing its timers (grace) until it does.
		cancel()
		for {
			_, changed := h.clock.pending()
			select {
			case <-h.done:
				return
			case <-changed:
				h.clock.Advance(time.Hour)
			case <-time.After(20 * time.Second):
				h.t.Error("Run did not return after cancellation")
				return
			}
		}
	})
}

// expect waits for the child's next stdout line and checks its first word
// and run number; it returns the remaining fields.
func (h *harness) expect(word string, run int) []string {
	h.t.Helper()
	select {
	case line := <-h.events.lines:
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != word || f[1] != strconv.Itoa(run) {
			h.t.Fatalf("child said %q, want %q for run %d\nlogs:\n%s", line, word, run, h.logs)
		}
		return f[2:]
	case err := <-h.done:
		h.done <- err
		h.t.Fatalf("Run returned %v while waiting for %q %d\nlogs:\n%s", err, word, run, h.logs)
	case <-h.ctx.Done():
		h.t.Fatalf("timed out waiting for %q %d\nlogs:\n%s", word, run, h.logs)
	}
	return nil
}

// result waits for Run to return.
func (h *harness) result() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-h.ctx.Done():
		h.t.Fatalf("timed out waiting for Run to return\nlogs:\n%s", h.logs)
		return nil
	}
}

// starts counts the child's marker files.
func (h *harness) starts() int {
	h.t.Helper()
	entries, err := os.ReadDir(h.markers)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(entries)
}

func (h *harness) waitPending(want ...time.Duration) {
	h.t.Helper()
	h.clock.waitPending(h.ctx, h.t, want...)
}

func TestCleanStopOnCancel(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.expect("start", 1)
	h.cancelRun()
	h.expect("term", 1) // the child got SIGTERM…
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v, want nil after a clean stop", err)
	}
	if n := h.starts(); n != 1 {
		t.Errorf("child started %d times, want 1", n)
	}
}

func TestChildExitsOnItsOwn(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		wantErr error
		wantMsg string
	}{
		{name: "exit 0 ends supervision", code: 0},
		{name: "exit 2 is a configuration error", code: ExitConfigError, wantErr: ErrConfigInvalid, wantMsg: "fix the configuration"},
		{name: "exit 3 is another agent on the data dir", code: ExitLocked, wantErr: ErrLocked, wantMsg: "stop the other agent"},
		{name: "exit 4 is an unusable data dir", code: ExitDataDir, wantErr: ErrDataDir, wantMsg: "free disk space"},
		{name: "exit 5 is an environment that prevents the start", code: ExitEnvironment, wantErr: ErrEnvironment, wantMsg: "another program on its port"},
	}
	// Every code NoRestartExitCodes promises (for a systemd unit) is one
	// of the cases below.
	checked := map[int]bool{}
	for _, tt := range tests {
		checked[tt.code] = tt.wantErr != nil
	}
	for _, code := range NoRestartExitCodes {
		if !checked[code] {
			t.Errorf("NoRestartExitCodes has %d, which no case checks", code)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{envExitCode: strconv.Itoa(tt.code)})
			h.start()
			h.expect("start", 1)
			err := h.result()
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Run = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q should say %q", err, tt.wantMsg)
			}
			if n := h.starts(); n != 1 {
				t.Errorf("child started %d times, want 1 (no restart)", n)
			}
		})
	}
}

func TestCrashRestartsWithCappedBackoff(t *testing.T) {
	h := newHarness(t, map[string]string{envExitCode: "1", envExitRuns: "3"})
	h.opts.BackoffMin = time.Second
	h.opts.BackoffMax = 3 * time.Second
	h.opts.StableAfter = time.Minute
	h.start()

	// Runs 1–3 crash at once: the delays double up to the cap.
	delays := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	for i, delay := range delays {
		h.expect("start", i+1)
		h.waitPending(delay)
		h.clock.Advance(delay)
	}
	pid := h.expect("start", 4)

	// Run 4 stays up longer than StableAfter, then crashes: the backoff is
	// back to the minimum.
	h.clock.Advance(time.Minute)
	p, _ := strconv.Atoi(pid[0])
	if err := syscall.Kill(p, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	h.waitPending(time.Second)
	h.clock.Advance(time.Second)
	h.expect("start", 5)

	h.cancelRun()
	h.expect("term", 5)
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "agent crashed; restarting after backoff") {
		t.Errorf("crashes not logged:\n%s", logs)
	}
}

func TestCrashLoopGivesUp(t *testing.T) {
	h := newHarness(t, map[string]string{envExitCode: "1"})
	h.opts.CrashLoopLimit = 3
	h.opts.CrashLoopWindow = time.Minute
	h.start()
	h.expect("start", 1)
	h.waitPending(time.Second)
	h.clock.Advance(time.Second)
	h.expect("start", 2)
	h.waitPending(2 * time.Second)
	h.clock.Advance(2 * time.Second)
	h.expect("start", 3)

	err := h.result()
	if !errors.Is(err, ErrCrashLoop) {
		t.Fatalf("Run = %v, want ErrCrashLoop", err)
	}
	want := "agent is crash-looping: it crashed 3 times within 1m0s (last: exit status 1); giving up"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if n := h.starts(); n != 3 {
		t.Errorf("child started %d times, want 3", n)
	}
}

func TestCrashesOutsideWindowDoNotCount(t *testing.T) {
	h := newHarness(t, map[string]string{envExitCode: "1", envExitRuns: "3"})
	h.opts.CrashLoopLimit = 2
	h.opts.CrashLoopWindow = 10 * time.Second
	h.opts.BackoffMin = 20 * time.Second
	h.opts.BackoffMax = 20 * time.Second
	h.start()
	for run := 1; run <= 3; run++ {
		h.expect("start", run)
		h.waitPending(20 * time.Second) // each crash is 20 s after the previous one
		h.clock.Advance(20 * time.Second)
	}
	h.expect("start", 4)
	h.cancelRun()
	h.expect("term", 4)
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v, want nil: crashes 20 s apart never make 2 within 10 s", err)
	}
}

func TestExitRestartIsImmediateAndNotACrash(t *testing.T) {
	h := newHarness(t, map[string]string{envExitCode: strconv.Itoa(ExitRestart), envExitRuns: "3"})
	h.opts.CrashLoopLimit = 1 // a single counted crash would end Run
	h.start()
	for run := 1; run <= 4; run++ { // no clock advance: no backoff
		h.expect("start", run)
	}
	h.cancelRun()
	h.expect("term", 4)
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestRestartFile(t *testing.T) {
	h := newHarness(t, nil)
	restart := filepath.Join(t.TempDir(), "restart")
	if err := os.WriteFile(restart, []byte("stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.opts.RestartFile = restart
	h.opts.CrashLoopLimit = 1
	h.start()
	h.expect("start", 1)
	if _, err := os.Stat(restart); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale restart file not removed at start: %v", err)
	}

	// Nothing requested: a poll changes nothing.
	h.waitPending(RestartPollInterval)
	h.clock.Advance(RestartPollInterval)
	h.waitPending(RestartPollInterval)

	if err := os.WriteFile(restart, []byte("upgrade to v2\nmore detail\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(RestartPollInterval)
	h.expect("term", 1)
	h.expect("start", 2)
	if _, err := os.Stat(restart); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("restart file not removed: %v", err)
	}
	h.cancelRun()
	h.expect("term", 2)
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "restart requested: upgrade to v2") {
		t.Errorf("reason not logged:\n%s", logs)
	}
}

func TestChildIgnoringSIGTERMIsKilledAfterGrace(t *testing.T) {
	h := newHarness(t, map[string]string{envIgnoreTerm: "1"})
	h.opts.ShutdownGrace = 30 * time.Second
	h.start()
	h.expect("start", 1)
	h.cancelRun()
	h.waitPending(30 * time.Second)
	h.clock.Advance(30 * time.Second)
	err := h.result()
	if !errors.Is(err, ErrKilled) {
		t.Fatalf("Run = %v, want ErrKilled", err)
	}
	if !strings.Contains(err.Error(), "30s") {
		t.Errorf("error %q should name the grace period", err)
	}
}

func TestLeftoverProcessesInGroupAreKilled(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := newHarness(t, map[string]string{envSpawn: sock})
	h.start()
	h.expect("start", 1)
	deadline, _ := h.ctx.Deadline()
	ln.(*net.UnixListener).SetDeadline(deadline)
	conn, err := ln.Accept() // the grandchild is up
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	h.cancelRun()
	h.expect("term", 1) // the child exits 0 and leaves its grandchild behind
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	conn.SetReadDeadline(deadline)
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("grandchild connection: %v, want EOF (grandchild killed with the group)", err)
	}
}

// healthServer answers /healthz with 200 while healthy, else 503.
func healthServer(t *testing.T, healthy *atomic.Bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || !healthy.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/healthz"
}

func TestFailingHealthProbeRestartsChild(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	h := newHarness(t, nil)
	h.opts.HealthURL = healthServer(t, &healthy)
	h.opts.HealthInterval = 5 * time.Second
	h.opts.HealthFailures = 2
	h.opts.ShutdownGrace = 7 * time.Second
	h.start()
	h.expect("start", 1)

	h.waitPending(5 * time.Second)
	h.clock.Advance(5 * time.Second) // healthy
	h.waitPending(5 * time.Second)
	healthy.Store(false)
	h.clock.Advance(5 * time.Second) // failure 1
	h.waitPending(5 * time.Second)
	h.clock.Advance(5 * time.Second) // failure 2: stop and restart with backoff
	h.expect("term", 1)
	h.waitPending(time.Second)
	healthy.Store(true)
	h.clock.Advance(time.Second)
	h.expect("start", 2)

	h.cancelRun()
	h.expect("term", 2)
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	logs := h.logs.String()
	for _, want := range []string{"health check failed", "2 consecutive failed health checks", "agent was unhealthy"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

// With Instance, a probe answered by another process (a different or no
// instance id) fails even with 200, and the child's own answer passes.
func TestHealthProbeChecksInstance(t *testing.T) {
	var answer atomic.Value // the instance id the health server echoes
	answer.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"status":"ok","instance":%q}`, answer.Load().(string))
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t, nil)
	h.opts.HealthURL = srv.URL + "/healthz"
	h.opts.HealthInterval = 5 * time.Second
	h.opts.HealthFailures = 2
	h.opts.HealthStartPeriod = 5 * time.Second
	h.opts.Instance = true
	h.start()
	first := h.expect("start", 1)
	if len(first) != 2 || len(first[1]) != 32 {
		t.Fatalf("child got no instance id: %q", first)
	}

	// Another process answers: two failures restart the child.
	answer.Store("someone-else")
	for range 2 {
		h.waitPending(5 * time.Second)
		h.clock.Advance(5 * time.Second)
	}
	h.expect("term", 1)
	h.waitPending(time.Second)
	h.clock.Advance(time.Second)
	second := h.expect("start", 2)
	if len(second) != 2 || second[1] == first[1] {
		t.Fatalf("second child's instance %q, first %q: want a fresh id", second, first)
	}

	// The child's own answer passes.
	answer.Store(second[1])
	h.waitPending(5 * time.Second)
	h.clock.Advance(5 * time.Second)
	h.waitPending(5 * time.Second)
	h.cancelRun()
	h.expect("term", 2)
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	logs := h.logs.String()
	for _, want := range []string{"answered by another process", "someone-else", "agent is healthy"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

func TestHealthStartPeriod(t *testing.T) {
	var healthy atomic.Bool // never healthy
	h := newHarness(t, nil)
	h.opts.HealthURL = healthServer(t, &healthy)
	h.opts.HealthInterval = 5 * time.Second
	h.opts.HealthFailures = 2
	h.opts.HealthStartPeriod = 20 * time.Second
	h.start()
	h.expect("start", 1)

	// Probes at 5, 10, 15 s fall in the start period; 20 s and 25 s count.
	for probe := 1; probe <= 4; probe++ {
		h.waitPending(5 * time.Second)
		h.clock.Advance(5 * time.Second)
	}
	h.waitPending(5 * time.Second)
	h.clock.Advance(5 * time.Second)
	h.expect("term", 1)
	h.waitPending(time.Second)

	h.cancelRun()
	if err := h.result(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := h.starts(); n != 1 {
		t.Errorf("child started %d times, want 1", n)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no command", Options{}, "no command"},
		{"backoff range", Options{Command: []string{"x"}, BackoffMin: time.Minute, BackoffMax: time.Second}, "BackoffMax 1s is below BackoffMin 1m0s"},
		{"negative grace", Options{Command: []string{"x"}, ShutdownGrace: -time.Second}, "ShutdownGrace is negative"},
		{"bad health URL", Options{Command: []string{"x"}, HealthURL: "localhost:8420/healthz"}, "not an absolute http(s) URL"},
		{"missing binary", Options{Command: []string{filepath.Join(t.TempDir(), "no-such-reverie")}}, "start agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestReadReason(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"first line", "new skill installed\nsecond", "new skill installed"},
		{"empty", "", "unspecified"},
		{"control characters dropped", "a\x1b[31mb\r\n", "a[31mb"},
		{"long line capped", strings.Repeat("é", 300), strings.Repeat("é", 200) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "restart")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := readReason(path); got != tt.want {
				t.Errorf("readReason = %q, want %q", got, tt.want)
			}
		})
	}
}
