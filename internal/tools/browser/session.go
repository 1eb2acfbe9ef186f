package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/tool"
)

// session is one conversation's browser: a Chromium process with one tab,
// its proxy, and what has been approved in it. Calls on a session run one
// at a time.
type session struct {
	m    *Manager
	key  string
	attr string // the attribute snapshots mark elements with

	// The browser's contexts: chromedp keeps the browser in a context,
	// which therefore lives as long as the session, not as one call.
	allocCtx    context.Context
	allocCancel context.CancelFunc
	tabCtx      context.Context
	tabCancel   context.CancelFunc
	proxy       *proxy

	calls sync.Mutex // one call at a time

	mu        sync.Mutex
	cur       *call           // the running call, nil between calls
	cleared   map[string]bool // hosts ("host:port") the user approved in this browser
	used      time.Time
	idle      Timer
	idleGen   int // which arming of the idle timer is current
	closed    bool
	between   []string // requests refused between calls, reported by the next call
	closeOnce sync.Once

	downloads map[string]*download // running downloads by GUID
	dlNotes   []string             // how downloads ended, for the next call's result
	bg        sync.WaitGroup       // download cancels in flight
}

// download is a file a page is downloading into the workspace.
type download struct {
	name    string
	call    *call // the call it began in (nil: between calls)
	stopped bool  // cancelled for being over MaxDownload
	done    chan struct{}
}

// call is one running tool call on a session.
type call struct {
	ctx     context.Context // the chromedp tab context, bounded by the call's budget
	turn    context.Context // the tool call's own context (gate, taint)
	gate    tool.Gate
	gated   bool
	tainted bool
	budget  *budget
	gateMu  sync.Mutex // one approval question at a time

	mu      sync.Mutex
	refused []string
}

func newSession(m *Manager, k string) *session {
	return &session{m: m, key: k, attr: refAttr(), cleared: map[string]bool{}, used: time.Now(), downloads: map[string]*download{}}
}

// start launches Chromium with its proxy.
func (s *session) start() error {
	dir := s.m.profileDir(s.key)
	downloads := filepath.Join(s.m.cfg.Workspace, "downloads")
	for _, d := range []string{dir, downloads} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("start the browser: %w", err)
		}
	}
	if err := writePreferences(dir); err != nil {
		return fmt.Errorf("start the browser: %w", err)
	}
	p, err := newProxy(s.m.cfg.Guard, s, s.m.cfg.Timeout)
	if err != nil {
		return err
	}
	s.proxy = p
	s.allocCtx, s.allocCancel = chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(s.m.cfg.Exec),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoSandbox,
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
		chromedp.ProxyServer("http://"+p.addr()),
		// Loopback goes through the proxy too (Chromium bypasses it by default).
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		// Chromium resolves no name itself: only the proxy does, through the guard.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-service-autorun", true),
		chromedp.Flag("disable-search-engine-choice-screen", true),
		// Chromium's own requests (preconnecting to its search engine,
		// hints, translation, time queries) are not the page's: off.
		chromedp.Flag("disable-features", "Translate,OptimizationHints,OptimizationGuideModelDownloading,MediaRouter,"+
			"DialMediaRouteProvider,AutofillServerCommunication,NetworkTimeServiceQuerying,InterestFeedContentSuggestions,"+
			"CertificateTransparencyComponentUpdater,PrivacySandboxSettings4,SafeBrowsingEnhancedProtection,LoadingPredictorUseLocalPredictions,"+
			"SpareRendererForSitePerProcess,HttpsUpgrades,LensOverlay,GlobalMediaControls,AcceptCHFrame"),
		chromedp.Flag("password-store", "basic"),
		// Chromium's Google account checks (ListAccounts, sent whenever a
		// profile's network starts) and its search engine's preconnects go
		// to the proxy itself, which drops them.
		chromedp.Flag("gaia-url", "http://"+p.addr()+"/"),
		chromedp.Flag("google-base-url", "http://"+p.addr()+"/"),
		chromedp.Flag("google-apis-url", "http://"+p.addr()+"/"),
		chromedp.Flag("lso-url", "http://"+p.addr()+"/"),
		// A component a feature asks for on demand is fetched even with
		// the component updater off (CI once saw a CONNECT to
		// update.googleapis.com and a POST of its update check put to the
		// approval gate during a page's call): its update server is the
		// proxy itself too.
		chromedp.Flag("component-updater", "url-source=http://"+p.addr()+"/service/update2/json"),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("block-new-web-contents", true), // one page: no pop-ups
		chromedp.Flag("renderer-process-limit", "2"),
		chromedp.Flag("disk-cache-size", strconv.Itoa(16<<20)),
		chromedp.Flag("js-flags", "--max-old-space-size=512"),
	)
	s.tabCtx, s.tabCancel = chromedp.NewContext(s.allocCtx)
	// The first action starts the browser under tabCtx itself (a derived
	// context would kill it when it ends): bound the start by cancelling.
	stop := time.AfterFunc(startTimeout, s.allocCancel)
	err = chromedp.Do(s.tabCtx)
	stopped := stop.Stop()
	if err != nil {
		if !stopped {
			return fmt.Errorf("start the browser (%s): it did not start within %s", s.m.cfg.Exec, startTimeout)
		}
		return fmt.Errorf("start the browser (%s): %w", s.m.cfg.Exec, err)
	}
	allow := true
	_, err = chromedp.CallBrowser(s.tabCtx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads, EventsEnabled: &allow})
	if err != nil {
		return fmt.Errorf("start the browser: set the download folder: %w", err)
	}
	if err := chromedp.ListenBrowser(s.tabCtx, s.onBrowserEvent); err != nil {
		return fmt.Errorf("start the browser: watch downloads: %w", err)
	}
	s.m.log.Info("browser started", "thread", s.key, "pid", s.pid(), "proxy", p.addr())
	return nil
}

// pid is the browser's process id (0 when it did not start).
func (s *session) pid() int {
	if c := chromedp.FromContext(s.tabCtx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		return c.Browser.Process().Pid
	}
	return 0
}

// dead reports whether the browser is gone (it crashed or was killed).
func (s *session) dead() bool {
	return s.tabCtx != nil && s.tabCtx.Err() != nil
}

// exitReason says how the browser ended, for the model.
func (s *session) exitReason() string {
	return "has stopped (it crashed or was killed)"
}

// busy reports whether a call runs on s.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur != nil
}

func (s *session) lastUsed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// idleFired reports whether the idle timer armed as generation gen is
// still the current one and no call runs: the browser is idle.
func (s *session) idleFired(gen int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur == nil && !s.closed && s.idleGen == gen
}

// close stops the browser and its proxy and waits for both.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		if s.idle != nil {
			s.idle.Stop()
		}
		s.mu.Unlock()
		if s.pid() != 0 {
			// Gracefully, then for sure: the tab's cancel waits for the
			// process to exit.
			gctx, cancel := context.WithTimeout(s.tabCtx, 5*time.Second)
			_ = chromedp.Cancel(gctx)
			cancel()
			s.tabCancel()
		}
		// A browser that never started: its tab context would wait for
		// an allocation that never happened, so only the allocator is
		// cancelled (which ends the tab context too).
		if s.allocCancel != nil {
			s.allocCancel()
			if a := chromedp.FromContext(s.allocCtx); a != nil && a.Allocator != nil {
				a.Allocator.Wait()
			}
		}
		if s.proxy != nil {
			s.proxy.close()
		}
		s.bg.Wait()
	})
}

// do runs f as one call: at most one at a time, bounded by the timeout
// (approval waits excepted), with the call's gate and its memory watched
// (watchMemory); then the idle timer is armed and the memory bound checked
// once more.
func (s *session) do(ctx context.Context, f func(c *call) (Page, error)) (Page, error) {
	s.calls.Lock()
	defer s.calls.Unlock()
	if s.dead() {
		s.m.drop(s)
		s.m.closeSession(s)
		return Page{}, fmt.Errorf("the browser of this conversation %s; the next browser call starts a new one", s.exitReason())
	}
	cctx, cancel := context.WithCancel(s.tabCtx)
	defer cancel()
	stopTurn := context.AfterFunc(ctx, cancel)
	defer stopTurn()
	c := &call{ctx: cctx, turn: ctx, budget: newBudget(s.m.cfg.Timeout, cancel)}
	defer c.budget.stop()
	c.gate, c.gated = tool.GateFrom(ctx)
	_, c.tainted = tool.TaintFrom(ctx)
	s.mu.Lock()
	s.cur = c
	between := s.between
	s.between = nil
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idleGen++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cur = nil
		s.used = time.Now()
		if !s.closed {
			s.idleGen++
			gen := s.idleGen
			s.idle = s.m.cfg.Clock.AfterFunc(s.m.cfg.IdleTimeout, func() { s.m.closeIdle(s, gen) })
		}
		s.mu.Unlock()
	}()
	over := s.watchMemory(cctx, cancel)
	page, err := f(c)
	if rss := over(); rss > 0 {
		// The page went over the memory bound during the call: the
		// watcher stopped the browser; this call reports it.
		s.m.drop(s)
		s.m.closeSession(s)
		return Page{}, fmt.Errorf("the page made the browser use %d MiB, more than its limit of %d MiB (tools.browser.max_memory), "+
			"so the browser was stopped during the call; the next browser call starts a new one", rss>>20, s.m.cfg.MaxMemory>>20)
	}
	if err != nil && s.dead() {
		// It crashed during the call: this call reports it, the next
		// starts a new browser.
		s.m.drop(s)
		s.m.closeSession(s)
	}
	if err != nil && c.budget.expired() {
		err = fmt.Errorf("%w (the browser call took longer than %s)", err, s.m.cfg.Timeout)
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (the turn was cancelled)", err)
	}
	if err == nil {
		page.Note = strings.TrimSpace(page.Note + " " + s.awaitDownloads(cctx, c))
	}
	c.mu.Lock()
	page.Refused = append(between, c.refused...)
	c.mu.Unlock()
	if err != nil && len(page.Refused) > 0 {
		err = fmt.Errorf("%w; requests refused: %s", err, strings.Join(page.Refused, "; "))
	}
	if err == nil {
		if rss := s.memory(); rss > s.m.cfg.MaxMemory {
			page.Note = strings.TrimSpace(page.Note + fmt.Sprintf(" The browser used %d MiB, more than its limit of %d MiB, and was closed; the next browser call starts a new one.", rss>>20, s.m.cfg.MaxMemory>>20))
			s.m.drop(s)
			s.m.closeSession(s)
		}
	}
	return page, err
}

// watchMemory checks the browser's resident memory (all its processes)
// every MemoryPoll while a call runs; above MaxMemory it kills the browser
// and ends the call (cancel). The returned func stops the watch, waits for
// it and gives the memory that was over the bound (0: none).
func (s *session) watchMemory(ctx context.Context, cancel context.CancelFunc) func() int64 {
	stop, done := make(chan struct{}), make(chan struct{})
	var over int64
	go func() {
		defer close(done)
		t := time.NewTicker(s.m.cfg.MemoryPoll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if rss := s.memory(); rss > s.m.cfg.MaxMemory {
				over = rss
				s.m.log.Warn("browser over its memory bound; stopped", "thread", s.key, "rss_mib", rss>>20, "max_mib", s.m.cfg.MaxMemory>>20)
				s.kill()
				cancel()
				return
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return over
	}
}

// onBrowserEvent follows the downloads (a ListenBrowser callback: it must
// not block, so a cancel runs on its own goroutine).
func (s *session) onBrowserEvent(ev any) {
	switch e := ev.(type) {
	case *cdpbrowser.EventDownloadWillBegin:
		s.mu.Lock()
		s.downloads[e.GUID] = &download{name: filepath.Base(e.SuggestedFilename), call: s.cur, done: make(chan struct{})}
		s.mu.Unlock()
	case *cdpbrowser.EventDownloadProgress:
		s.progress(e)
	}
}

// progress handles a download's progress: one over MaxDownload is
// cancelled, and how each ends is noted for the next call's result.
func (s *session) progress(e *cdpbrowser.EventDownloadProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.downloads[e.GUID]
	if d == nil {
		return
	}
	limit := s.m.cfg.MaxDownload
	over := int64(e.ReceivedBytes) > limit || int64(e.TotalBytes) > limit
	tooLarge := fmt.Sprintf("larger than the limit of %s (tools.browser.max_download)", mib(limit))
	var note string
	switch e.State {
	case cdpbrowser.DownloadProgressStateCompleted:
		path := e.FilePath
		if path == "" {
			path = filepath.Join(s.m.cfg.Workspace, "downloads", d.name)
		}
		rel, err := filepath.Rel(s.m.cfg.Workspace, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = filepath.Join("downloads", d.name)
		}
		if over {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.m.log.Warn("could not remove a download over the limit", "thread", s.key, "path", path, "err", err)
			}
			note = fmt.Sprintf("The download of %s finished before it could be stopped and was deleted: it is %s.", d.name, tooLarge)
		} else {
			note = fmt.Sprintf("Downloaded %s (%d bytes) to %s in the workspace.", d.name, int64(e.ReceivedBytes), filepath.ToSlash(rel))
		}
	case cdpbrowser.DownloadProgressStateCanceled:
		// Chromium removes the partial file, but not always before it
		// says the download ended.
		partial := filepath.Join(s.m.cfg.Workspace, "downloads", d.name+".crdownload")
		if err := os.Remove(partial); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.m.log.Warn("could not remove a stopped download's partial file", "thread", s.key, "path", partial, "err", err)
		}
		note = fmt.Sprintf("The download of %s was cancelled.", d.name)
		if d.stopped {
			note = fmt.Sprintf("The download of %s was stopped and its file removed: it is %s.", d.name, tooLarge)
		}
	default:
		if over && !d.stopped {
			d.stopped = true
			s.bg.Add(1)
			go s.cancelDownload(e.GUID)
		}
		return
	}
	delete(s.downloads, e.GUID)
	s.dlNotes = append(s.dlNotes, note)
	close(d.done)
}

// cancelDownload stops a download.
func (s *session) cancelDownload(guid string) {
	defer s.bg.Done()
	ctx, cancel := context.WithTimeout(s.tabCtx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.CancelDownload, cdpbrowser.CancelDownloadParams{GUID: guid}); err != nil && s.tabCtx.Err() == nil {
		s.m.log.Warn("could not stop a download over the limit", "thread", s.key, "err", err)
	}
}

// awaitDownloads waits (while ctx lasts) for the downloads that began in
// call c or between calls, and those being stopped, and says how the
// downloads that ended since the last call did; one still running is
// said to be.
func (s *session) awaitDownloads(ctx context.Context, c *call) string {
	s.mu.Lock()
	var wait []*download
	for _, d := range s.downloads {
		if d.call == c || d.call == nil || d.stopped {
			wait = append(wait, d)
		}
	}
	s.mu.Unlock()
	for _, d := range wait {
		select {
		case <-d.done:
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	notes := s.dlNotes
	s.dlNotes = nil
	for _, d := range wait {
		select {
		case <-d.done:
		default:
			d.call = c // reported once as running
			notes = append(notes, fmt.Sprintf("Still downloading %s; a later browser call says how it ended.", d.name))
		}
	}
	return strings.Join(notes, " ")
}

// mib formats n bytes in MiB.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// kill ends the browser process at once (its child processes die with it).
func (s *session) kill() {
	if c := chromedp.FromContext(s.tabCtx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		_ = c.Browser.Process().Kill()
	}
}

// explain turns a chromedp error into one the model can act on.
func (s *session) explain(c *call, err error) error {
	if s.dead() {
		return fmt.Errorf("the browser %s; the next browser call starts a new one: %w", s.exitReason(), err)
	}
	return err
}

// clearFor marks u's host as approved in this browser when c runs in a
// tainted conversation: the call that opens u passed the approval rule
// for it.
func (s *session) clearFor(c *call, u *url.URL) {
	if !c.tainted || !c.gated {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleared[hostKey(u)] = true
}

// hostKey is "host:port" of u, the port made explicit.
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// admit implements admitter: a request is allowed while a call runs,
// and, in a call with an approval gate, when its host is cleared or the
// gate lets it through (the user approved it, or the rule needs no
// approval).
func (s *session) admit(_ context.Context, method string, u *url.URL, body string) error {
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if c == nil {
		return errors.New("the page made it while no browser call was running")
	}
	if !c.gated {
		return nil
	}
	hk := hostKey(u)
	s.mu.Lock()
	ok := s.cleared[hk]
	s.mu.Unlock()
	if ok {
		return nil
	}
	c.gateMu.Lock()
	defer c.gateMu.Unlock()
	s.mu.Lock()
	ok = s.cleared[hk]
	s.mu.Unlock()
	if ok {
		return nil
	}
	data := method + " " + u.String()
	if body != "" {
		data += " " + body
	}
	args, err := json.Marshal(RequestArgs{URL: u.String(), Request: data})
	if err != nil {
		return fmt.Errorf("encode the request: %w", err)
	}
	c.budget.pause()
	err = c.gate(c.turn, args)
	c.budget.resume()
	if err != nil {
		return err
	}
	if c.tainted {
		// Approved by the user (or a destination the user fixed): the
		// page may reach this host for the rest of this browser's life.
		s.mu.Lock()
		s.cleared[hk] = true
		s.mu.Unlock()
	}
	return nil
}

// refused implements admitter: it records a refused request for the
// call's result (or the next call's, between calls).
func (s *session) refused(u *url.URL, err error) {
	line := u.Redacted() + ": " + err.Error()
	s.m.log.Info("browser request refused", "thread", s.key, "url", u.Redacted(), "err", err)
	s.mu.Lock()
	c := s.cur
	if c == nil {
		if len(s.between) < maxRefused {
			s.between = append(s.between, line)
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refused) < maxRefused && !containsStr(c.refused, line) {
		c.refused = append(c.refused, line)
	}
}

const maxRefused = 20

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// RequestArgs are the arguments a request the page makes during a
// browser call is put to the call's approval gate with (tool.Gate): the
// browser tools' destinations read them.
type RequestArgs struct {
	// URL is the request's URL (https://host/ for a CONNECT tunnel).
	URL string `json:"url"`
	// Request is the method, URL and start of the body, shown to the user.
	Request string `json:"request"`
}

// snapshotResult is what snapshot.js returns.
type snapshotResult struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
	Ready     bool   `json:"ready"`
}

// snapshot waits for the page to settle, then reads it as text.
func (s *session) snapshot(c *call) (Page, error) {
	s.settle(c)
	expr, err := jsCall(snapshotJS, s.attr, s.m.cfg.MaxChars)
	if err != nil {
		return Page{}, err
	}
	var r snapshotResult
	for attempt := 0; ; attempt++ {
		r, err = chromedp.Run(c.ctx, chromedp.Evaluate[snapshotResult](expr))
		if (err == nil && r.Ready) || attempt >= 5 || c.ctx.Err() != nil {
			break
		}
		// The page navigated while it was read, or the new one is still
		// loading (an action's navigation began after the old page had
		// settled): wait for it and read again.
		s.settle(c)
	}
	if err != nil {
		return Page{}, fmt.Errorf("read the page: %w", s.explain(c, err))
	}
	return Page{URL: r.URL, Title: r.Title, Content: r.Text, Truncated: r.Truncated}, nil
}

// settle waits, within the call's budget, until the page is loaded and
// the proxy has been quiet for a moment (scripts that fetch content after
// the load event), at most settleMax.
func (s *session) settle(c *call) {
	deadline := time.Now().Add(settleMax)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for time.Now().Before(deadline) {
		state, err := chromedp.Run(c.ctx, chromedp.Evaluate[string]("document.readyState"))
		if err == nil && state == "complete" && s.proxy.idleFor(settleQuiet) {
			return
		}
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// actResult is what actions.js returns.
type actResult struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Submitted *bool  `json:"submitted"`
}

// act clicks or types into the element ref.
func (s *session) act(c *call, action, ref, text string, submit bool) error {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return errors.New("ref is empty: give an element's reference from the last snapshot, such as e12")
	}
	expr, err := jsCall(actionsJS, s.attr, action, ref, text, submit)
	if err != nil {
		return err
	}
	r, err := chromedp.Run(c.ctx, chromedp.Evaluate[actResult](expr))
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, ref, s.explain(c, err))
	}
	if !r.OK {
		return errors.New(r.Error)
	}
	if submit && r.Submitted != nil && !*r.Submitted {
		if err := pressEnter(c.ctx); err != nil {
			return fmt.Errorf("press Enter in %s: %w", ref, s.explain(c, err))
		}
	}
	return nil
}

// memory is the resident memory of the browser's processes (the main
// process and its descendants), from /proc; 0 when unknown.
func (s *session) memory() int64 {
	root := s.pid()
	if root == 0 {
		return 0
	}
	return treeRSS(root)
}

// treeRSS is the resident memory of process root and its descendants,
// from /proc; 0 when unknown.
func treeRSS(root int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	parent := map[int]int{}
	rss := map[int]int64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid … ; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 22 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		pages, _ := strconv.ParseInt(f[21], 10, 64)
		parent[pid] = pp
		rss[pid] = pages * int64(os.Getpagesize())
	}
	var total int64
	for pid := range rss {
		for p := pid; p != 0; p = parent[p] {
			if p == root {
				total += rss[pid]
				break
			}
			if _, ok := parent[p]; !ok {
				break
			}
		}
	}
	return total
}

// budget is a call's time limit, paused while an approval is awaited.
type budget struct {
	mu        sync.Mutex
	left      time.Duration
	started   time.Time
	timer     *time.Timer
	paused    int
	fired     bool
	cancel    func()
	abandoned bool
}

func newBudget(d time.Duration, cancel func()) *budget {
	b := &budget{left: d, cancel: cancel, started: time.Now()}
	b.timer = time.AfterFunc(d, b.fire)
	return b
}

func (b *budget) fire() {
	b.mu.Lock()
	if b.abandoned || b.paused > 0 {
		b.mu.Unlock()
		return
	}
	b.fired = true
	b.mu.Unlock()
	b.cancel()
}

func (b *budget) pause() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paused == 0 && !b.fired {
		b.timer.Stop()
		b.left -= time.Since(b.started)
	}
	b.paused++
}

func (b *budget) resume() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused--
	if b.paused == 0 && !b.fired && !b.abandoned {
		b.started = time.Now()
		b.timer = time.AfterFunc(max(b.left, 0), b.fire)
	}
}

func (b *budget) expired() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fired
}

func (b *budget) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.abandoned = true
	b.timer.Stop()
}

// preferences turn off what makes Chromium connect on its own: network
// prediction (preconnecting to its search engine), search suggestions,
// Safe Browsing lookups, sign-in.
const preferences = `{"net":{"network_prediction_options":2},"search":{"suggest_enabled":false},` +
	`"safebrowsing":{"enabled":false},"signin":{"allowed":false,"allowed_on_next_startup":false},` +
	`"browser":{"has_seen_welcome_page":true},"translate":{"enabled":false},"alternate_error_pages":{"enabled":false}}`

// writePreferences writes the profile's Default/Preferences when it has
// none yet (Chromium keeps it up to date afterwards).
func writePreferences(dir string) error {
	p := filepath.Join(dir, "Default", "Preferences")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("write the profile's preferences: %w", err)
	}
	if err := os.WriteFile(p, []byte(preferences), 0o600); err != nil {
		return fmt.Errorf("write the profile's preferences: %w", err)
	}
	return nil
}
