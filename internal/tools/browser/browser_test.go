package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/tools/web"
	"github.com/reverie-ai/reverie/tool"
)

// chromium returns the Chromium to test with, skipping when there is
// none (CI installs it, and sets CI=true: there the test fails instead).
func chromium(t *testing.T) string {
	t.Helper()
	p, err := Find("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the browser tests: %v", err)
		}
		t.Skipf("no Chromium (%v): install it (apt-get install chromium) to run the browser tests; CI does", err)
	}
	return p
}

// recorder is an HTTP listener that records every request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		r.mu.Lock()
		r.hits = append(r.hits, q.Method+" "+q.URL.RequestURI())
		r.mu.Unlock()
		if h != nil {
			h(w, q)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.hits...)
}

func (r *recorder) hostPort() string { return strings.TrimPrefix(r.URL, "http://") }

// site serves the test pages.
func site(t *testing.T, other *recorder) *recorder {
	t.Helper()
	return newRecorder(t, func(w http.ResponseWriter, q *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch q.URL.Path {
		case "/js":
			fmt.Fprint(w, `<html><head><title>Rendered</title></head><body><h1>Weather</h1><p id="out">loading…</p>
<script>fetch("/data").then(r => r.text()).then(t => { document.getElementById("out").textContent = "Forecast: " + t; });</script></body></html>`)
		case "/data":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "sunny, 24 degrees")
		case "/form":
			fmt.Fprint(w, `<html><body><h1>Sign up</h1><form method="post" action="/submit">
<label for="name">Your name</label><input id="name" name="name">
<select name="colour"><option>red</option><option>blue</option></select>
<button type="submit">Send</button></form></body></html>`)
		case "/submit":
			if err := q.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, `<html><body><h1>Thanks</h1><p>Hello %s, you chose %s.</p><a href="/form">again</a></body></html>`,
				q.PostForm.Get("name"), q.PostForm.Get("colour"))
		case "/ssrf":
			fmt.Fprintf(w, `<html><body><h1>Innocent</h1>
<iframe src="http://169.254.169.254/latest/meta-data/"></iframe>
<iframe src="%[1]s/frame"></iframe>
<img src="%[1]s/pixel.png">
<script>
fetch("%[1]s/script?x=1").catch(() => {});
fetch("http://169.254.169.254/latest/meta-data/iam").catch(() => {});
fetch("http://localhost:%[2]s/named").catch(() => {});
</script></body></html>`, other.URL, other.URL[strings.LastIndex(other.URL, ":")+1:])
		case "/elsewhere":
			fmt.Fprintf(w, `<html><body><h1>Elsewhere</h1><img src="%s/tracker.png?d=hello"></body></html>`, other.URL)
		default:
			http.NotFound(w, q)
		}
	})
}

// manager starts a Manager allowed to reach only the given host:port
// pairs besides public addresses.
func manager(t *testing.T, clock Clock, allow ...string) *Manager {
	t.Helper()
	g, err := web.NewGuard(false, allow)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Config{Exec: chromium(t), Workspace: t.TempDir(), Guard: g, Timeout: 45 * time.Second, Clock: clock})
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func inThread(ctx context.Context, thread string) context.Context {
	return tool.WithCall(ctx, tool.Call{Thread: chat.ThreadID(thread), Agent: "main"})
}

// ref finds the reference of the element whose snapshot line contains
// marker.
func ref(t *testing.T, p Page, marker string) string {
	t.Helper()
	for _, line := range strings.Split(p.Content, "\n") {
		for _, part := range strings.Split(line, "[") {
			if strings.Contains(part, marker) {
				f := strings.Fields(part)
				if len(f) >= 2 {
					return f[1]
				}
			}
		}
	}
	t.Fatalf("no element with %q in the snapshot:\n%s", marker, p.Content)
	return ""
}

func TestBrowserReadsScriptsAndFillsForms(t *testing.T) {
	other := newRecorder(t, nil)
	srv := site(t, other)
	m := manager(t, nil, srv.hostPort())
	ctx := inThread(t.Context(), "web:a")

	p, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/js"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, "Forecast: sunny, 24 degrees") || p.Title != "Rendered" || !strings.Contains(p.Content, "# Weather") {
		t.Fatalf("the page rendered by its script is not in the snapshot: %+v", p)
	}

	p, err = m.Open(ctx, OpenArgs{URL: srv.URL + "/form"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Type(ctx, TypeArgs{Ref: ref(t, p, "select"), Text: "blue"}); err != nil {
		t.Fatal(err)
	}
	p, err = m.Type(ctx, TypeArgs{Ref: ref(t, p, `label="Your name"`), Text: "Ada", Submit: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, "Hello Ada, you chose blue.") {
		t.Fatalf("the form's result is not shown: %+v", p)
	}
	p, err = m.Click(ctx, ClickArgs{Ref: ref(t, p, `"again"`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, "# Sign up") {
		t.Fatalf("the link was not followed: %+v", p)
	}
	if _, err := m.Click(ctx, ClickArgs{Ref: "e999"}); err == nil || !strings.Contains(err.Error(), "take a new snapshot") {
		t.Fatalf("a stale reference gave %v", err)
	}
	shot, err := m.Screenshot(ctx, NoArgs{})
	if err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(m.cfg.Workspace + "/" + shot.Path)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %v (%d bytes)", shot.Path, err, len(png))
	}
	if len(other.requests()) != 0 {
		t.Errorf("another listener was reached: %v", other.requests())
	}
	if _, err := os.Stat(m.profileDir("web:a")); err != nil {
		t.Errorf("the profile is not in the workspace: %v", err)
	}
}

// A page that loads the metadata address and another loopback port, in
// frames, an image and scripts: every such request is refused, reported,
// and never reaches the other listener.
func TestBrowserRefusesWhatFetchCannotReach(t *testing.T) {
	other := newRecorder(t, nil)
	srv := site(t, other)
	m := manager(t, nil, srv.hostPort())
	p, err := m.Open(inThread(t.Context(), "web:ssrf"), OpenArgs{URL: srv.URL + "/ssrf"})
	if err != nil {
		t.Fatal(err)
	}
	refused := strings.Join(p.Refused, "\n")
	for _, want := range []string{"169.254.169.254", other.URL + "/frame", other.URL + "/script?x=1", other.URL + "/pixel.png", "localhost:"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the refusal of %s is not reported:\n%s", want, refused)
		}
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the loopback listener got requests: %v", got)
	}
	if _, err := m.Open(inThread(t.Context(), "web:ssrf"), OpenArgs{URL: "http://169.254.169.254/"}); !errors.Is(err, web.ErrBlockedAddress) {
		t.Errorf("opening the metadata address gave %v", err)
	}
}

// In a tainted conversation, a request of the page to a host not yet
// approved is put to the call's gate; a denied one never leaves.
func TestBrowserAsksTheGate(t *testing.T) {
	other := newRecorder(t, nil)
	srv := site(t, other)
	m := manager(t, nil, srv.hostPort(), other.hostPort())
	var mu sync.Mutex
	var asked []RequestArgs
	deny := errors.New("the user denied this call")
	gate := func(_ context.Context, args json.RawMessage) error {
		var a RequestArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return err
		}
		mu.Lock()
		asked = append(asked, a)
		mu.Unlock()
		if strings.Contains(a.URL, other.hostPort()) {
			return deny
		}
		return nil
	}
	ctx := tool.WithTaint(tool.WithGate(inThread(t.Context(), "web:gate"), gate), tool.Taint{Source: "a fetch_url result"})
	p, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, "# Elsewhere") {
		t.Fatalf("page: %+v", p)
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("a denied request reached its host: %v", got)
	}
	if !strings.Contains(strings.Join(p.Refused, "\n"), "denied") {
		t.Errorf("the denial is not reported: %v", p.Refused)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0].Request, "GET "+other.URL+"/tracker.png?d=hello") {
		t.Errorf("the gate was asked %+v; want once, about the tracker with its query", asked)
	}
}

// fakeClock runs AfterFunc callbacks when the test fires them.
type fakeClock struct {
	mu    sync.Mutex
	funcs []*fakeTimer
}

type fakeTimer struct {
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { t.stopped = true; return true }

func (c *fakeClock) AfterFunc(_ time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{f: f}
	c.funcs = append(c.funcs, t)
	return t
}

// fire runs the pending timers.
func (c *fakeClock) fire() {
	c.mu.Lock()
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for _, t := range funcs {
		if !t.stopped {
			t.f()
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

func TestBrowserClosesWhenIdle(t *testing.T) {
	srv := site(t, newRecorder(t, nil))
	clock := &fakeClock{}
	m := manager(t, clock, srv.hostPort())
	ctx := inThread(t.Context(), "web:idle")
	if _, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/form"}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	pid := m.sessions["web:idle"].pid()
	m.mu.Unlock()
	if got := m.Running(); len(got) != 1 || !alive(pid) {
		t.Fatalf("running %v, pid %d alive %v", got, pid, alive(pid))
	}
	clock.fire()
	if got := m.Running(); len(got) != 0 {
		t.Fatalf("still running after the idle time: %v", got)
	}
	if alive(pid) {
		t.Errorf("the browser process %d still runs", pid)
	}
	if _, err := m.Snapshot(ctx, NoArgs{}); err == nil || !strings.Contains(err.Error(), "browser_open") {
		t.Errorf("a snapshot after the close gave %v", err)
	}
}

func TestBrowserCrashIsAToolErrorAndTheNextCallStartsAnew(t *testing.T) {
	srv := site(t, newRecorder(t, nil))
	m := manager(t, nil, srv.hostPort())
	ctx := inThread(t.Context(), "web:crash")
	if _, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/form"}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	s := m.sessions["web:crash"]
	m.mu.Unlock()
	pid := s.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.tabCtx.Done() // chromedp notices the lost browser
	_, err := m.Snapshot(ctx, NoArgs{})
	if err == nil || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("a call after the crash gave %v; want a tool error saying the browser crashed", err)
	}
	p, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/js"})
	if err != nil {
		t.Fatalf("the next call did not start a new browser: %v", err)
	}
	if !strings.Contains(p.Content, "Forecast") {
		t.Errorf("page: %+v", p)
	}
	m.mu.Lock()
	s = m.sessions["web:crash"]
	m.mu.Unlock()
	npid := s.pid()
	if npid == pid || npid == 0 {
		t.Errorf("new pid %d, old %d", npid, pid)
	}

	// A crash in the middle of a call: that call fails, the next one
	// starts a new browser at once.
	if err := syscall.Kill(npid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.tabCtx.Done()
	if _, err := m.Click(ctx, ClickArgs{Ref: "e1"}); err == nil || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("a click in the crashed browser gave %v", err)
	}
	if _, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/form"}); err != nil {
		t.Fatalf("the call after a crash did not start a new browser: %v", err)
	}
}

// A page that allocates past tools.browser.max_memory is stopped while
// its call runs (the page never finishes loading: without the watch the
// call would end only at its timeout), the call is a tool error saying
// why, and the next call starts a new browser.
func TestBrowserMemoryLimitStopsAPageWhileItRuns(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, q *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch q.URL.Path {
		case "/hog":
			fmt.Fprint(w, `<html><body><h1>Hog</h1><script>
const keep = [];
for (let i = 0; i < 64; i++) keep.push(new Uint8Array(16 << 20).fill(i + 1));
for (;;) {}
</script></body></html>`)
		default:
			fmt.Fprint(w, `<html><body><h1>Small</h1></body></html>`)
		}
	})
	m := manager(t, nil, srv.hostPort())
	ctx := inThread(t.Context(), "web:hog")
	if _, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/small"}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	s := m.sessions["web:hog"]
	m.mu.Unlock()
	pid := s.pid()
	// The bound: what the browser uses now and 256 MiB more; the page
	// takes 1 GiB.
	m.cfg.MaxMemory = s.memory() + 256<<20
	_, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/hog"})
	if err == nil || !strings.Contains(err.Error(), "tools.browser.max_memory") || !strings.Contains(err.Error(), "stopped during the call") {
		t.Fatalf("opening the page that allocates gave %v; want a tool error naming the memory limit", err)
	}
	if got := m.Running(); len(got) != 0 || alive(pid) {
		t.Fatalf("after the stop: running %v, browser %d alive %v", got, pid, alive(pid))
	}
	m.cfg.MaxMemory = DefaultMaxMemory // a new browser's start is not measured against the old one's
	p, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/small"})
	if err != nil || !strings.Contains(p.Content, "Small") {
		t.Fatalf("the next call: %+v, %v", p, err)
	}
	m.mu.Lock()
	npid := m.sessions["web:hog"].pid()
	m.mu.Unlock()
	if npid == pid || npid == 0 {
		t.Errorf("new pid %d, old %d", npid, pid)
	}
}

// Downloads land in the workspace's downloads, bounded by MaxDownload: a
// small file is saved and the result says where; an endless one is
// stopped (its server sees the connection closed), its partial file
// removed, and the result says why.
func TestBrowserDownloadsAreBounded(t *testing.T) {
	bigGone := make(chan struct{})
	var once sync.Once
	srv := newRecorder(t, func(w http.ResponseWriter, q *http.Request) {
		switch q.URL.Path {
		case "/files":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><body><h1>Files</h1><a href="/small">the small file</a> <a href="/big">the endless file</a></body></html>`)
		case "/small":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="notes.txt"`)
			_, _ = w.Write([]byte(strings.Repeat("a", 20_000)))
		case "/big":
			defer once.Do(func() { close(bigGone) })
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="huge.bin"`)
			chunk := make([]byte, 64<<10)
			for q.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, q)
		}
	})
	g, err := web.NewGuard(false, []string{srv.hostPort()})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	m := New(Config{Exec: chromium(t), Workspace: ws, Guard: g, Timeout: 45 * time.Second, MaxDownload: 1 << 20})
	t.Cleanup(func() { _ = m.Close() })
	ctx := inThread(t.Context(), "web:files")
	p, err := m.Open(ctx, OpenArgs{URL: srv.URL + "/files"})
	if err != nil {
		t.Fatal(err)
	}
	// untilNote returns the notes of the click and of the snapshots after
	// it, until one contains want (the download's end may reach the
	// browser after the click's call).
	untilNote := func(first Page, want string) string {
		t.Helper()
		notes := first.Note
		for i := 0; i < 50 && !strings.Contains(notes, want); i++ {
			p, err := m.Snapshot(ctx, NoArgs{})
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			notes += " " + p.Note
		}
		if !strings.Contains(notes, want) {
			t.Fatalf("no note %q; notes: %s", want, notes)
		}
		return notes
	}
	clicked, err := m.Click(ctx, ClickArgs{Ref: ref(t, p, "the small file")})
	if err != nil {
		t.Fatal(err)
	}
	untilNote(clicked, "Downloaded notes.txt (20000 bytes) to downloads/notes.txt")
	if b, err := os.ReadFile(filepath.Join(ws, "downloads", "notes.txt")); err != nil || len(b) != 20_000 {
		t.Fatalf("the small download: %d bytes, %v", len(b), err)
	}

	clicked, err = m.Click(ctx, ClickArgs{Ref: ref(t, p, "the endless file")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-bigGone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the endless download was not stopped")
	}
	untilNote(clicked, "The download of huge.bin was stopped and its file removed: it is larger than the limit of 1 MiB (tools.browser.max_download)")
	err = filepath.WalkDir(filepath.Join(ws, "downloads"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil && info.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over the limit", path, info.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Opening a browser beyond MaxBrowsers closes the least recently used
// one; its conversation's next call finds none and browser_open starts a
// new one, fresh.
func TestBrowserEvictsTheLeastRecentlyUsed(t *testing.T) {
	srv := site(t, newRecorder(t, nil))
	m := manager(t, nil, srv.hostPort())
	pids := map[string]int{}
	open := func(thread, path string) Page {
		t.Helper()
		p, err := m.Open(inThread(t.Context(), thread), OpenArgs{URL: srv.URL + path})
		if err != nil {
			t.Fatalf("%s: %v", thread, err)
		}
		m.mu.Lock()
		pids[thread] = m.sessions[thread].pid()
		m.mu.Unlock()
		return p
	}
	open("web:a", "/form")
	open("web:b", "/js")
	if _, err := m.Snapshot(inThread(t.Context(), "web:a"), NoArgs{}); err != nil { // a is now the more recent
		t.Fatal(err)
	}
	old := pids["web:b"]
	open("web:c", "/form")
	if got := m.Running(); !slices.Equal(got, []string{"web:a", "web:c"}) {
		t.Fatalf("running %v, want web:a and web:c (web:b, the least recently used, closed)", got)
	}
	if alive(old) || !alive(pids["web:a"]) || !alive(pids["web:c"]) {
		t.Fatalf("processes: b %v, a %v, c %v", alive(old), alive(pids["web:a"]), alive(pids["web:c"]))
	}
	if _, err := m.Snapshot(inThread(t.Context(), "web:b"), NoArgs{}); err == nil || !strings.Contains(err.Error(), "browser_open") {
		t.Fatalf("a snapshot in the closed browser's conversation gave %v", err)
	}
	if p := open("web:b", "/form"); !strings.Contains(p.Content, "Sign up") || pids["web:b"] == old {
		t.Fatalf("reopened: pid %d (old %d), page %q", pids["web:b"], old, p.Content)
	}
	if got := m.Running(); !slices.Equal(got, []string{"web:b", "web:c"}) {
		t.Errorf("running %v after reopening web:b, want web:b and web:c", got)
	}
}

// A browser running a call is not taken from its conversation: with every
// browser busy, opening one more is a tool error; once the call ends, the
// idle browser makes room.
func TestBrowserDoesNotEvictABusyBrowser(t *testing.T) {
	spinning := make(chan struct{}, 1)
	srv := newRecorder(t, func(w http.ResponseWriter, q *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if q.URL.Path == "/spin" {
			select {
			case spinning <- struct{}{}:
			default:
			}
			fmt.Fprint(w, `<html><body><h1>Busy</h1><script>for (;;) {}</script></body></html>`)
			return
		}
		fmt.Fprint(w, `<html><body><h1>Small</h1></body></html>`)
	})
	g, err := web.NewGuard(false, []string{srv.hostPort()})
	if err != nil {
		t.Fatal(err)
	}
	m := New(Config{Exec: chromium(t), Workspace: t.TempDir(), Guard: g, Timeout: 10 * time.Minute, MaxBrowsers: 1})
	t.Cleanup(func() { _ = m.Close() })
	busyCtx, stop := context.WithCancel(inThread(t.Context(), "web:busy"))
	defer stop()
	ended := make(chan error, 1)
	go func() {
		_, err := m.Open(busyCtx, OpenArgs{URL: srv.URL + "/spin"})
		ended <- err
	}()
	<-spinning // the call runs: its page never finishes loading
	other := inThread(t.Context(), "web:other")
	if _, err := m.Open(other, OpenArgs{URL: srv.URL + "/small"}); err == nil || !strings.Contains(err.Error(), "tools.browser.max_browsers") {
		t.Fatalf("opening a browser while the only one is busy gave %v", err)
	}
	if got := m.Running(); !slices.Equal(got, []string{"web:busy"}) {
		t.Fatalf("running %v", got)
	}
	stop()
	if err := <-ended; err == nil {
		t.Fatal("the cancelled call reported no error")
	}
	p, err := m.Open(other, OpenArgs{URL: srv.URL + "/small"})
	if err != nil || !strings.Contains(p.Content, "Small") {
		t.Fatalf("after the busy call ended: %+v, %v", p, err)
	}
	if got := m.Running(); !slices.Equal(got, []string{"web:other"}) {
		t.Errorf("running %v, want web:other alone", got)
	}
}

// BenchmarkTreeRSS measures one memory check of a running call (a scan of
// /proc), here of the test process's tree.
func BenchmarkTreeRSS(b *testing.B) {
	for b.Loop() {
		if treeRSS(os.Getpid()) == 0 {
			b.Fatal("no memory read")
		}
	}
}
