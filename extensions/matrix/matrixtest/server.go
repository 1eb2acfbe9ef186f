// Package matrixtest runs a real Matrix homeserver (Dendrite v0.15.2, built
// by extensions/matrix/testdata/build-dendrite.sh) on 127.0.0.1 for tests,
// and gives them Matrix users: mautrix clients with their own end-to-end
// encryption, acting as the people who talk to the assistant.
//
// Dendrite is AGPL and is never imported: the tests run its binaries. They
// are looked for in $REVERIE_DENDRITE_DIR, else in
// ${XDG_CACHE_HOME:-~/.cache}/reverie/dendrite-v0.15.2. Without them the
// tests are skipped with a message saying how to build them — except when
// CI=true, where they fail.
package matrixtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the Dendrite release the tests run.
const Version = "v0.15.2"

// SharedSecret is the registration secret of the generated CI config.
const SharedSecret = "complement"

// BinDir returns the directory with the Dendrite binaries and whether
// they are all there.
func BinDir() (string, bool) {
	dir := os.Getenv("REVERIE_DENDRITE_DIR")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", false
			}
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "reverie", "dendrite-"+Version)
	}
	for _, b := range []string{"dendrite", "create-account", "generate-keys", "generate-config"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return dir, false
		}
	}
	return dir, true
}

// Server is a Dendrite running for a test.
type Server struct {
	bin, dir, addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process and its restarts have ended
	log  *syncWriter
	// stopped is set by Stop: an exit after it is not a crash.
	stopped bool
	// crashes counts the restarts after Dendrite died on its own.
	crashes int
}

// maxCrashes bounds the restarts of a Dendrite that dies on its own.
// Dendrite v0.15.2 on SQLite now and then panics in its sync API's
// consumer ("write new event failure … cannot start a transaction within a
// transaction"); started again on the same data it takes the event up
// from its on-disk JetStream, as a homeserver restarted by its operator
// would, and the people and the bot reconnect.
const maxCrashes = 3

// Option adjusts the homeserver's configuration.
type Option func(*options)

type options struct {
	rateLimit bool
	threshold int
	cooloff   time.Duration
	exempt    []string
}

// WithRateLimit turns Dendrite's client API rate limiting on: each device
// (or, for /login and media downloads, each client address and port) may
// make threshold limited requests per cooloff; more are answered 429
// M_LIMIT_EXCEEDED with retry_after_ms = cooloff. The users in exempt
// (full ids) are never limited. Dendrite v0.15.2 limits join, leave,
// invite, typing, receipts, read markers, whoami, login, /messages,
// profile changes and media uploads and downloads; not /send, /state,
// /sync, /keys, /sendToDevice or createRoom.
func WithRateLimit(threshold int, cooloff time.Duration, exempt ...string) Option {
	return func(o *options) {
		o.rateLimit, o.threshold, o.cooloff, o.exempt = true, threshold, cooloff, exempt
	}
}

// Start starts a Dendrite with federation and registration off (and rate
// limiting off unless WithRateLimit) in a temporary directory; it is
// stopped when the test (or the package's TestMain, with tb from it) ends.
// Without the binaries the test is skipped, or fails when CI=true.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	bin, ok := BinDir()
	if !ok {
		msg := fmt.Sprintf("Dendrite %s is not built in %s: run extensions/matrix/testdata/build-dendrite.sh "+
			"(or set REVERIE_DENDRITE_DIR)", Version, bin)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "dendrite-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{bin: bin, dir: dir}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("dendrite's output:\n%s", s.Log())
		}
		s.Stop(tb)
		_ = os.RemoveAll(dir)
	})
	cfg, err := exec.Command(filepath.Join(bin, "generate-config"), "-ci", "-dir", dir).Output()
	if err != nil {
		tb.Fatalf("generate-config: %v", err)
	}
	text := string(cfg)
	replace := [][2]string{
		{"disable_federation: false", "disable_federation: true"},
		{"registration_disabled: false", "registration_disabled: true"},
		{"in_memory: true", "in_memory: false"}, // JetStream on disk: a restart keeps it
		{"level: trace", "level: warn"},
	}
	if o.rateLimit {
		exempt, _ := json.Marshal(o.exempt) // a YAML flow sequence
		if o.exempt == nil {
			exempt = []byte("[]")
		}
		replace = append(replace, [2]string{
			"rate_limiting:\n    enabled: false\n    threshold: 5\n    cooloff_ms: 500\n    exempt_user_ids: []",
			fmt.Sprintf("rate_limiting:\n    enabled: true\n    threshold: %d\n    cooloff_ms: %d\n    exempt_user_ids: %s",
				o.threshold, o.cooloff.Milliseconds(), exempt),
		})
	}
	for _, r := range replace {
		if !strings.Contains(text, r[0]) {
			tb.Fatalf("generated Dendrite config lacks %q", r[0])
		}
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	// Every SQLite database in WAL mode. In the default rollback journal a
	// commit waits for every reader; on a loaded machine it can wait out
	// Dendrite's 10 s busy timeout, and a COMMIT that fails busy leaves
	// its connection inside the transaction, holding the lock, back in
	// the pool: the database answers "database is locked" (HTTP 500 to
	// sends) and "cannot start a transaction within a transaction" (a
	// panic in the sync API) until the connection goes. In WAL readers do
	// not block the writer. Dendrite keeps only the path of the file: URI,
	// so the query is escaped into it (%3F), where the SQLite driver reads
	// it as the DSN's options.
	n, sqliteURI := 0, regexp.MustCompile(`(?m)connection_string: file:\S+\.db$`)
	text = sqliteURI.ReplaceAllStringFunc(text, func(m string) string { n++; return m + "%3F_pragma=journal_mode(WAL)" })
	if n == 0 {
		tb.Fatalf("generated Dendrite config has no SQLite database")
	}
	if err := os.WriteFile(filepath.Join(dir, "dendrite.yaml"), []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	keys := exec.Command(filepath.Join(bin, "generate-keys"), "-private-key", filepath.Join(dir, "matrix_key.pem"))
	keys.Dir = dir
	if out, err := keys.CombinedOutput(); err != nil {
		tb.Fatalf("generate-keys: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.addr = l.Addr().String()
	_ = l.Close()
	s.start(tb)
	return s
}

// URL is the homeserver's base URL.
func (s *Server) URL() string { return "http://" + s.addr }

func (s *Server) start(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
	if err := s.launch(); err != nil {
		tb.Fatalf("%v:\n%s", err, s.log.String())
	}
}

// launch starts Dendrite and waits until it answers. A watcher restarts it
// (at most maxCrashes times) when it dies without Stop; done is closed
// once the last process has exited.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	cmd := exec.Command(filepath.Join(s.bin, "dendrite"), "-config", filepath.Join(s.dir, "dendrite.yaml"),
		"-http-bind-address", s.addr)
	cmd.Dir = s.dir
	if s.log == nil {
		s.log = &syncWriter{}
	}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dendrite: %w", err)
	}
	exited := make(chan struct{})
	done := s.done
	if done == nil || s.cmd == nil {
		done = make(chan struct{})
	}
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(cmd.Stdout, "matrixtest: dendrite exited: %v\n", err) // after Stop too
		close(exited)
		s.mu.Lock()
		crashed := !s.stopped && s.cmd == cmd && s.crashes < maxCrashes
		if crashed {
			s.crashes++
		}
		s.mu.Unlock()
		if crashed {
			fmt.Fprintf(cmd.Stdout, "matrixtest: dendrite died on its own; starting it again\n")
			if err := s.launch(); err == nil {
				return // the new process's watcher closes done
			}
		}
		close(done)
	}()
	s.cmd, s.done = cmd, done
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(s.URL() + "/_matrix/client/versions")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("dendrite exited at start")
		case <-time.After(50 * time.Millisecond): // polling a child process's port: no event to wait on
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dendrite did not answer within 60s")
		}
	}
}

// Stop stops the homeserver (idempotent) and waits for it.
func (s *Server) Stop(tb testing.TB) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done, s.stopped = nil, nil, true
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart stops the homeserver and starts it again on the same address
// with the same data.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop(tb)
	s.start(tb)
}

// CreateUser makes an account with create-account.
func (s *Server) CreateUser(tb testing.TB, name, password string) string {
	tb.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "create-account"), "-config", filepath.Join(s.dir, "dendrite.yaml"),
		"-username", name, "-password", password, "-url", s.URL())
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("create-account %s: %v\n%s", name, err, out)
	}
	return "@" + name + ":localhost"
}

// Log returns what Dendrite printed.
func (s *Server) Log() string {
	s.mu.Lock()
	w := s.log
	s.mu.Unlock()
	if w == nil {
		return ""
	}
	return w.String()
}

// syncWriter is a buffer the child process's output goroutines write to.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
