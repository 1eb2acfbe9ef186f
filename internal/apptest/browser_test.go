package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// The browser tests drive the real web page served by the real app (web
// extension, API, router, agent, SQLite) with the fake OpenAI-compatible
// model, in a headless Chromium. They skip when no Chromium is installed
// (CI installs Debian's chromium). The page runs under its production
// Content-Security-Policy with Trusted Types, which forbid eval; so the
// waits here evaluate their conditions from DevTools (waitFor) instead of
// chromedp.Poll, which compiles its predicate in the page.

// startWebApp is StartWeb on the given address ("127.0.0.1:0" for a free
// port; a fixed one to restart on the same address).
func startWebApp(t *testing.T, listen string, opts ...Option) *WebHarness {
	t.Helper()
	return StartWeb(t, append([]Option{WithEnv("REVERIE_WEB__LISTEN=" + listen)}, opts...)...)
}

// browserPage is one Chromium tab with a record of the page's problems.
type browserPage struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
	allowed  []string // substrings of expected problems
}

// newBrowser starts a headless Chromium (fresh profile in t.TempDir()) with
// a window of the given size. On failure the test's screenshot is saved
// under a temporary directory and its path logged.
//
// Call it after starting the app, so that its cleanup (the screenshot) runs
// before the app stops.
//
// extra adds flags (a fake microphone, say).
func newBrowser(t *testing.T, path, name string, width, height int, extra ...chromedp.ExecAllocatorOption) *browserPage {
	t.Helper()
	tabCtx, stopBrowser := chromiumtest.Start(t, path, width, height, extra...)
	ctx, cancelTimeout := context.WithTimeout(tabCtx, 3*time.Minute)
	p := &browserPage{t: t, ctx: ctx}
	wait := chromiumtest.WatchProblems(ctx, func(pr chromiumtest.Problem) { p.problem(pr.String()) })

	artifacts := os.Getenv("REVERIE_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.saveFailure(artifacts, name)
		}
		cancelTimeout()
		stopBrowser()
		wait()
	})
	return p
}

func (p *browserPage) problem(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.allowed {
		if strings.Contains(s, a) {
			return
		}
	}
	p.problems = append(p.problems, s)
}

// allow makes problems containing any of subs expected (network errors
// while the server is down, for instance).
func (p *browserPage) allow(subs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allowed = append(p.allowed, subs...)
}

// checkProblems fails the test on uncaught exceptions, CSP violations and
// console errors of the page.
func (p *browserPage) checkProblems() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.problems {
		p.t.Errorf("page problem: %s", s)
	}
	p.problems = nil
}

func (p *browserPage) saveFailure(dir, name string) {
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		p.t.Logf("page text at the failure:\n%s", text)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		p.t.Logf("screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, name+".jpg")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		p.t.Logf("screenshot: %v", err)
		return
	}
	p.t.Logf("screenshot of the failure: %s (set REVERIE_TEST_ARTIFACTS=DIR to keep it after the test)", path)
}

// snapshot saves a screenshot named name when REVERIE_TEST_ARTIFACTS names
// a directory (to look at the page; nothing is compared).
func (p *browserPage) snapshot(name string) {
	p.t.Helper()
	dir := os.Getenv("REVERIE_TEST_ARTIFACTS")
	if dir == "" {
		return
	}
	shot, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644); err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
	}
}

// do runs actions and fails the test with what was being done.
func (p *browserPage) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression and decodes its value into T.
func eval[T any](p *browserPage, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor evaluates cond (a JavaScript expression) until it is true, for at
// most patience.
func (p *browserPage) waitFor(what, cond string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, patience)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err == nil && ok {
			return
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("waiting for %s: %v (last error: %v)", what, ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

// webAssistant is the scripted model: a greeting for the conversation seed,
// a write_file tool call for "write a note", a markdown reply after the tool
// result (streamed in many pieces), and "ok" otherwise.
func webAssistant(req llmtest.ChatRequest) llmtest.ServerReply {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == "tool":
		text := "Saved it to **notes/today.txt**:\n\n- buy milk\n- call Anna\n\n```sh\ncat notes/today.txt\n```\n\nAnything else?"
		if greets(req) {
			text = Greeting + text
		}
		return llmtest.ServerReply{
			Text:   text,
			Chunks: 12,
			Usage:  llm.Usage{InputTokens: 50, OutputTokens: 20},
		}
	case strings.HasPrefix(lastUser(req), "[SYSTEM EVENT]"):
		return llmtest.ServerReply{Text: "Hello, I'm Reverie. What are you working on?", Chunks: 4}
	case strings.Contains(lastUser(req), "write a note"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{
			ID: "call_1", Name: "write_file",
			Arguments: json.RawMessage(`{"path":"notes/today.txt","content":"buy milk\ncall Anna"}`),
		}}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 12}}
	case strings.Contains(lastUser(req), "fail please"):
		return llmtest.ServerReply{Status: http.StatusUnauthorized, ErrorMessage: "invalid api key"}
	case strings.Contains(lastUser(req), "injection"):
		return llmtest.ServerReply{Text: `Here: <img src=x onerror="window.__pwned=1"> [click](javascript:window.__pwned=2) <script>window.__pwned=3</script>`}
	default:
		return llmtest.ServerReply{Text: "ok"}
	}
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestBrowserChatAndDebugPanel(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "desktop", 1280, 900)
	app.Model.Handle(webAssistant)

	// Sign in with the token in the fragment, as the printed URL does.
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the chat view", `!document.getElementById('view-chat').hidden`)
	p.waitFor("the WebSocket connection", `document.getElementById('conn').dataset.state === 'online'`)
	t.Logf("page start-up: DOMContentLoaded %.0f ms, chat connected %.0f ms after navigation",
		eval[float64](p, `performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd`),
		eval[float64](p, `performance.getEntriesByName('reverie-online')[0].startTime`))
	if hash := eval[string](p, `location.hash`); strings.Contains(hash, "token") {
		t.Errorf("the token stays in the address bar: %q", hash)
	}
	if stored := eval[string](p, `localStorage.getItem('reverie.token') || ''`); stored != WebToken {
		t.Errorf("token in localStorage = %q", stored)
	}
	thread := eval[string](p, `decodeURIComponent(location.hash.replace(/^#chat\//, ''))`)
	if !strings.HasPrefix(thread, "web:") {
		t.Fatalf("the page did not open a web thread: %q", thread)
	}

	// Send a message with Enter; the tool call and the streamed reply
	// arrive, the reply opening with the new conversation's greeting.
	p.do("type a message",
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.Focus(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "please write a note: buy milk"),
		chromedp.KeyEvent(kb.Enter),
	)
	p.waitFor("the user's message", `[...document.querySelectorAll('.msg.user')].some(m => m.textContent.includes('please write a note'))`)
	if v := eval[string](p, `document.getElementById('input').value`); v != "" {
		t.Errorf("the input was not cleared: %q", v)
	}
	const reply = `[...document.querySelectorAll('.msg.assistant')].find(m => m.textContent.includes('Anything else?') && !m.classList.contains('streaming'))`
	p.waitFor("the streamed reply", reply)
	if !eval[bool](p, reply+`.textContent.includes("I'm Reverie")`) {
		t.Error("the first reply does not open with the greeting")
	}
	if n := eval[int](p, `document.querySelectorAll('.msg.assistant').length`); n != 1 {
		t.Errorf("%d assistant messages for the first message, want one (greeted in the same reply)", n)
	}
	if n := eval[int](p, `Number(`+reply+`.dataset.deltas)`); n < 2 {
		t.Errorf("the reply came in %d delta frames, want it streamed in several", n)
	}
	// Markdown rendered, tool call folded under the reply.
	for _, check := range []struct{ what, expr string }{
		{"bold", reply + `.querySelector('.md strong').textContent === 'notes/today.txt'`},
		{"list", reply + `.querySelectorAll('.md ul > li').length === 2`},
		{"code block with a copy button", reply + `.querySelector('.codeblock pre code').textContent === 'cat notes/today.txt' && !!` + reply + `.querySelector('.codeblock button.copy')`},
		{"folded tool call, one click from its arguments and result", `(() => { const d = ` + reply + `.querySelector('.tools details.tool'); return d && !d.open && d.textContent.includes('write_file') && d.textContent.includes('notes/today.txt'); })()`},
	} {
		if !eval[bool](p, check.expr) {
			t.Errorf("reply: no %s", check.what)
		}
	}
	// The conversation appears in the thread list.
	p.waitFor("the thread in the list", `!!document.querySelector('#threads a[data-thread=`+js(thread)+`]')`)

	p.snapshot("desktop-chat")

	// Model output cannot inject markup or script.
	p.do("send an injection", chromedp.SendKeys(chromedp.ID("input"), "show me an injection"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the injection reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('<img src=x onerror='))`)
	if eval[bool](p, `!!document.querySelector('#messages img[src="x"], #messages script, #messages a[href^="javascript"]') || window.__pwned !== undefined`) {
		t.Error("model output was rendered as HTML")
	}

	// A failed turn shows its error frame; a proactive message arrives live.
	p.do("send a failing message", chromedp.SendKeys(chromedp.ID("input"), "fail please"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the error", `!!document.querySelector('.msg.failed .error-text')`)
	if err := app.App.Router.Notify(context.Background(), chat.Outbound{
		Address: chat.Address{Channel: "web", Thread: chat.ThreadID(thread)}, Kind: chat.Notify, Text: "Reminder: **call Anna**",
	}); err != nil {
		t.Fatalf("notify: %v", err)
	}
	p.waitFor("the notification", `[...document.querySelectorAll('.msg.notify')].some(m => m.querySelector('strong')?.textContent === 'call Anna')`)

	// Slash commands typed in the box go through.
	p.do("send /help", chromedp.SendKeys(chromedp.ID("input"), "/help"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the /help answer", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('/compact'))`)

	// The debug panel shows the event of that turn.
	p.do("open the debug panel", chromedp.Click(chromedp.ID("tab-debug")))
	p.waitFor("the events list", `!document.getElementById('view-debug').hidden && !!document.getElementById('event-list')`)
	p.waitFor("an event of the turn", `[...document.querySelectorAll('#event-list .event')].some(e => e.dataset.topic.startsWith('turn.') && e.textContent.includes(`+js(thread)+`))`)
	p.snapshot("desktop-events")
	// Topic filter.
	p.do("filter events",
		chromedp.SendKeys(chromedp.ID("events-topic"), "turn."),
		chromedp.KeyEvent(kb.Enter),
	)
	p.waitFor("filtered events", `(() => { const ev = [...document.querySelectorAll('#event-list .event')]; return ev.length > 0 && ev.every(e => e.dataset.topic.startsWith('turn.')); })()`)
	p.waitFor("the live stream", `document.getElementById('events-state').textContent === 'live'`)

	// Interaction log with an action filter.
	p.do("open the interaction log", chromedp.Navigate(app.Base+"/#debug/interactions"))
	p.waitFor("inference entries", `!!document.querySelector('#ix-list .ix[data-action="inference"]')`)
	p.do("filter by action", chromedp.SetValue(chromedp.ID("ix-action"), "tool_call"))
	p.do("apply the filter", chromedp.Evaluate[chromedp.Void](`document.getElementById('ix-action').dispatchEvent(new Event('change'))`))
	p.waitFor("only tool calls", `(() => { const r = [...document.querySelectorAll('#ix-list .ix')]; return r.length > 0 && r.every(x => x.dataset.action === 'tool_call'); })()`)

	// The exact system prompt of the last turn.
	p.do("open the prompt", chromedp.Navigate(app.Base+"/#debug/prompt"))
	p.waitFor("the system prompt", `(document.getElementById('prompt-text') || {}).textContent?.length > 50`)

	// Edit a memory.
	var mem struct {
		ID   int64  `json:"id"`
		Text string `json:"text"`
	}
	app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": "Anna is my sister.", "kind": "fact"}, http.StatusCreated, &mem)
	card := fmt.Sprintf(`document.querySelector('#mem-list .mem[data-id="%d"]')`, mem.ID)
	p.do("open the memories", chromedp.Navigate(app.Base+"/#debug/memories"))
	p.waitFor("the memory", card)
	p.do("edit the memory", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#mem-list .mem[data-id="%d"] button`, mem.ID))))
	p.waitFor("the editor", card+`.querySelector('textarea')`)
	p.do("change the text",
		chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`#mem-list .mem[data-id="%d"] textarea`, mem.ID)), "Anna is my older sister; she lives in Lyon."),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#mem-list .mem[data-id="%d"] button[type=submit]`, mem.ID))),
	)
	// A new text is a new memory: the old one is closed and names it, and
	// the card now stands for the new one.
	var old struct {
		Text         string  `json:"text"`
		ValidTo      *string `json:"valid_to"`
		SupersededBy int64   `json:"superseded_by"`
	}
	p.waitFor("the saved memory", `[...document.querySelectorAll('#mem-list .mem .mem-text')].some((e) => e.textContent.includes('older sister'))`)
	app.JSON(t, http.MethodGet, fmt.Sprintf("/memories/%d", mem.ID), nil, http.StatusOK, &old)
	if old.Text != "Anna is my sister." || old.ValidTo == nil || old.SupersededBy == 0 {
		t.Fatalf("the edited memory: %+v", old)
	}
	card = fmt.Sprintf(`document.querySelector('#mem-list .mem[data-id="%d"]')`, old.SupersededBy)
	p.waitFor("the card of the new version", card+`?.querySelector('.mem-text')?.textContent.includes('older sister')`)
	p.snapshot("desktop-memories")
	var got struct {
		Text string `json:"text"`
	}
	app.JSON(t, http.MethodGet, fmt.Sprintf("/memories/%d", old.SupersededBy), nil, http.StatusOK, &got)
	if got.Text != "Anna is my older sister; she lives in Lyon." {
		t.Errorf("the memory after the edit: %q", got.Text)
	}
	mem.ID = old.SupersededBy
	// Search, then forget (two clicks: the first only arms the button).
	p.do("search memories", chromedp.SendKeys(chromedp.ID("mem-search"), "Lyon"))
	p.waitFor("the search result", card+`?.textContent.includes('score')`)
	forget := chromedp.CSS(fmt.Sprintf(`#mem-list .mem[data-id="%d"] button.danger`, mem.ID))
	p.do("forget the memory", chromedp.Click(forget))
	p.waitFor("the confirmation", card+`.querySelector('button.danger.armed')`)
	p.do("confirm", chromedp.Click(forget))
	p.waitFor("the memory gone", `!`+card)
	if code, _ := app.Do(t, http.MethodGet, fmt.Sprintf("/memories/%d", mem.ID), nil); code != http.StatusNotFound {
		t.Errorf("the forgotten memory still answers %d", code)
	}

	var info struct {
		Features map[string]bool `json:"features"`
	}
	app.JSON(t, http.MethodGet, "/info", nil, http.StatusOK, &info)

	// World state: invalid JSON is refused before it is sent.
	p.do("open the world state", chromedp.Navigate(app.Base+"/#debug/world"))
	if info.Features["world"] {
		p.waitFor("the world state", `document.getElementById('world-json')?.value.includes('"version"')`)
		p.do("break the JSON", chromedp.SetValue(chromedp.ID("world-json"), `{"version": 2,`))
		p.do("validate", chromedp.Evaluate[chromedp.Void](`document.getElementById('world-json').dispatchEvent(new Event('input'))`))
		p.waitFor("the validation error", `document.getElementById('world-status').textContent.includes('Invalid JSON') && document.getElementById('world-save').disabled`)
	} else {
		p.waitFor("world state not enabled", `document.querySelector('#debug-body .not-enabled')?.textContent.includes('not enabled')`)
	}

	// Token usage per role.
	p.do("open usage", chromedp.Navigate(app.Base+"/#debug/usage"))
	if info.Features["usage"] {
		p.waitFor("the usage table", `[...document.querySelectorAll('#usage-table td')].some(td => td.textContent === 'main')`)
	} else {
		p.waitFor("usage not enabled", `document.querySelector('#debug-body .not-enabled')?.textContent.includes('not enabled')`)
	}

	// Back to the chat: the conversation is still there after a reload.
	p.do("reload the chat", chromedp.Navigate(app.Base+"/#chat/"+thread))
	p.waitFor("the history", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('Anything else?') && m.querySelector('.tools details.tool'))`)

	// "New session" opens a new thread and the seed greets in it.
	p.do("start a new session", chromedp.Click(chromedp.ID("new-session")))
	p.waitFor("a new thread", `decodeURIComponent(location.hash) !== '#chat/' + `+js(thread)+` && location.hash.startsWith('#chat/web')`)
	p.waitFor("the greeting of the new session", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes("I'm Reverie"))`)
	if n := eval[int](p, `document.querySelectorAll('.msg.user').length`); n != 0 {
		t.Errorf("the new session shows %d user messages of the old one", n)
	}
	p.checkProblems()
}

func TestBrowserPhoneViewport(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "phone", 390, 844)
	app.Model.Handle(webAssistant)

	p.do("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch))
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the chat view", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	noOverflow := `document.documentElement.scrollWidth <= window.innerWidth`
	if !eval[bool](p, noOverflow) {
		t.Errorf("the page is wider than the phone: %d > %d", eval[int](p, `document.documentElement.scrollWidth`), eval[int](p, `window.innerWidth`))
	}
	// The thread list is a drawer behind the menu button.
	if eval[bool](p, `document.getElementById('sidebar').getBoundingClientRect().right > 1`) {
		t.Error("the thread list covers the chat on a phone")
	}
	p.do("open the drawer", chromedp.Click(chromedp.ID("menu")))
	p.waitFor("the drawer", `(() => { const r = document.getElementById('sidebar').getBoundingClientRect(); return r.left >= 0 && r.right > 200; })()`)
	p.snapshot("phone-drawer")
	// The scrim's centre is under the drawer: tap beside the drawer.
	p.do("close the drawer", chromedp.MouseClickXY(375, 400))
	p.waitFor("the drawer closed", `document.getElementById('sidebar').getBoundingClientRect().right <= 1`)

	// Chat with the send button (Enter makes a new line on touch screens).
	p.do("type", chromedp.SendKeys(chromedp.ID("input"), "hello"), chromedp.KeyEvent(kb.Enter), chromedp.SendKeys(chromedp.ID("input"), "there"))
	if v := eval[string](p, `document.getElementById('input').value`); v != "hello\nthere" {
		t.Errorf("Enter on a touch screen should make a new line: %q", v)
	}
	p.do("send", chromedp.Click(chromedp.ID("send")))
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.trim().startsWith('ok'))`)
	p.snapshot("phone-chat")
	// Everything the user needs is inside the viewport.
	for _, id := range []string{"input", "send", "tab-debug", "menu"} {
		if !eval[bool](p, `(() => { const r = document.getElementById('`+id+`').getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight; })()`) {
			t.Errorf("#%s is not fully visible on the phone", id)
		}
	}
	if !eval[bool](p, noOverflow) {
		t.Error("the chat overflows the phone's width")
	}
	// Dark mode follows the system preference.
	if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
	}); err != nil {
		t.Fatalf("emulate dark mode: %v", err)
	}
	p.waitFor("the dark theme", `getComputedStyle(document.body).backgroundColor === 'rgb(23, 24, 27)'`)
	p.snapshot("phone-chat-dark")

	// The debug panel fits too; its sections are a scrolling tab strip.
	p.do("open the debug panel", chromedp.Click(chromedp.ID("tab-debug")))
	p.waitFor("events", `document.querySelectorAll('#event-list .event').length > 0`)
	p.snapshot("phone-debug")
	if !eval[bool](p, noOverflow) {
		t.Error("the debug panel overflows the phone's width")
	}
	p.checkProblems()
}

// TestBrowserReconnects: the agent restarts (same data dir, same address)
// while the page is open; the page reconnects by itself, and a reply sent
// after the restart streams in.
func TestBrowserReconnects(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	first := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "reconnect", 1024, 768)
	first.Model.Handle(webAssistant)
	p.do("load the page", chromedp.Navigate(first.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "hello"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.trim().startsWith('ok'))`)

	// While the server is down the browser logs failed connection attempts.
	p.allow("WebSocket connection to", "ERR_CONNECTION_REFUSED", "Failed to load resource")
	if err := first.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p.waitFor("the page to notice", `document.getElementById('conn').dataset.state !== 'online'`)
	addr := strings.TrimPrefix(first.Base, "http://")
	second := startWebApp(t, addr, WithDataDir(first.DataDir))
	second.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "back again", Chunks: 4}
	})
	p.waitFor("the reconnection", `document.getElementById('conn').dataset.state === 'online'`)
	p.do("send after the restart", chromedp.SendKeys(chromedp.ID("input"), "are you there?"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the reply after the restart", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('back again'))`)
	// The history from before the restart is still shown once, not twice.
	if n := eval[int](p, `[...document.querySelectorAll('.msg.user')].filter(m => m.textContent.includes('hello')).length`); n != 1 {
		t.Errorf("the message before the restart is shown %d times", n)
	}
	p.checkProblems()
}

// TestBrowserDebugSections opens every section of the debug panel with some
// data in it: each renders without an error, or says "not enabled" when
// /api/v1/info lists the feature as off.
func TestBrowserDebugSections(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "sections", 1280, 900)
	app.Model.Handle(webAssistant)
	var info struct {
		Features map[string]bool `json:"features"`
	}
	app.JSON(t, http.MethodGet, "/info", nil, http.StatusOK, &info)
	if info.Features["pulse"] {
		app.JSON(t, http.MethodPost, "/pulse", map[string]any{"text": "Draft the Lyon trip plan", "priority": 2}, http.StatusCreated, nil)
	}
	if info.Features["skills"] {
		app.JSON(t, http.MethodPut, "/skills/book-train", map[string]string{"content": "How to book a train\n1. Open the site"}, http.StatusOK, nil)
	}
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "please write a note"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('Anything else?') && !m.classList.contains('streaming'))`)

	sections := []struct {
		id, feature, ready string
	}{
		{"events", "events", `document.querySelectorAll('#event-list .event').length > 0`},
		{"interactions", "interactions", `document.querySelectorAll('#ix-list .ix').length > 0`},
		{"prompt", "prompt", `document.getElementById('prompt-text')?.textContent.length > 0`},
		{"project", "project", `(document.getElementById('project-text')?.textContent || '').includes('PROJECT STATUS') && document.getElementById('project-text').textContent.includes('Draft the Lyon trip plan')`},
		{"memories", "memories", `!!document.getElementById('mem-list')?.firstElementChild`},
		{"pulse", "pulse", `[...document.querySelectorAll('#pulse-list .pulse-item input')].some(i => i.value === 'Draft the Lyon trip plan')`},
		{"skills", "skills", `document.getElementById('skill-list')?.textContent.includes('book-train')`},
		{"tasks", "tasks", `!!document.getElementById('task-list')?.firstElementChild`},
		{"workflows", "workflows", `!!document.getElementById('wf-list')?.firstElementChild`},
		{"world", "world", `document.getElementById('world-json')?.value.includes('"version"')`},
		{"usage", "usage", `[...document.querySelectorAll('#usage-table td')].some(td => td.textContent === 'main')`},
	}
	for _, sec := range sections {
		p.do("open "+sec.id, chromedp.Navigate(app.Base+"/#debug/"+sec.id))
		if info.Features[sec.feature] {
			p.waitFor(sec.id, `document.getElementById('debug-body').dataset.section === '`+sec.id+`' && (`+sec.ready+`)`)
			if msg := eval[string](p, `[...document.querySelectorAll('#debug-body .error-text')].map(e => e.textContent).join(' ')`); msg != "" {
				t.Errorf("%s shows an error: %s", sec.id, msg)
			}
		} else {
			p.waitFor(sec.id+" not enabled", `document.querySelector('#debug-body .not-enabled')?.textContent.includes('not enabled')`)
		}
		p.snapshot("section-" + sec.id)
	}
	if info.Features["skills"] {
		// Open a skill, change it, save it.
		p.do("open skills", chromedp.Navigate(app.Base+"/#debug/skills"))
		p.waitFor("the skill", `document.getElementById('skill-list')?.textContent.includes('book-train')`)
		p.do("open the skill", chromedp.Click(chromedp.CSS("#skill-list .skill")))
		p.waitFor("the editor", `document.querySelector('#skill-editor textarea')?.value.startsWith('How to book a train')`)
		p.do("edit", chromedp.SetValue(chromedp.CSS("#skill-editor textarea"), "How to book a train, fast\n1. Open the site\n2. Pay"),
			chromedp.Click(chromedp.CSS("#skill-editor button[type=submit]")))
		p.waitFor("the saved skill", `document.getElementById('skill-list')?.textContent.includes('fast')`)
	}
	p.checkProblems()
}

// setupForm is a SetupProvider for the setup-screen test: its test call
// accepts only the key "sk-good".
type setupForm struct {
	mu      sync.Mutex
	applied extension.SetupValues
}

func (f *setupForm) Init(context.Context, extension.Host) error { return nil }

func (f *setupForm) SetupSchema(context.Context) extension.SetupSchema {
	f.mu.Lock()
	defer f.mu.Unlock()
	return extension.SetupSchema{
		Title: "Language model", Description: "Where Reverie finds its model.", Configured: f.applied != nil,
		Fields: []extension.SetupField{
			{Key: "provider", Label: "Provider", Kind: extension.FieldSelect, Options: []string{"openai", "anthropic", "ollama"}, Default: "openai", Required: true},
			{Key: "base_url", Label: "Base URL", Kind: extension.FieldURL, Default: "https://api.openai.com/v1", Help: "Any OpenAI-compatible server."},
			{Key: "api_key", Label: "API key", Kind: extension.FieldSecret, Required: true},
			{Key: "model", Label: "Model", Kind: extension.FieldText, Required: true},
		},
	}
}

func (f *setupForm) ApplySetup(_ context.Context, v extension.SetupValues) error {
	if v["api_key"] != "sk-good" {
		return errors.New("the model did not answer: 401 invalid api key")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = v
	return nil
}

func (f *setupForm) values() extension.SetupValues {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

var (
	_ extension.Extension     = (*setupForm)(nil)
	_ extension.SetupProvider = (*setupForm)(nil)
)

// TestBrowserSetupScreen: with no model configured the page opens on the
// setup screen; a value that fails the provider's test is refused with its
// reason, a good one is saved; the chat says that no model is configured.
func TestBrowserSetupScreen(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	form := &setupForm{}
	app := startWebApp(t, "127.0.0.1:0",
		WithExtensions(extension.Info{ID: "modelsetup", New: func() extension.Extension { return form }, Description: "test setup form"}),
		// No model from the environment (and no Ollama to find).
		WithEnv("OPENAI_BASE_URL=", "OPENAI_API_KEY=", "REVERIE_MODEL=", "ANTHROPIC_API_KEY=", "OLLAMA_HOST=127.0.0.1:1"))
	p := newBrowser(t, browserPath, "setup", 1024, 800)

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the setup screen", `!document.getElementById('view-setup').hidden && location.hash === '#setup'`)
	p.waitFor("the form", `!!document.querySelector('form[data-form="modelsetup"]')`)
	const f = `form[data-form="modelsetup"]`
	for _, check := range []struct{ what, expr string }{
		{"a select of providers", `document.querySelector('` + f + ` select[name="provider"]').options.length === 3`},
		{"the default base URL", `document.querySelector('` + f + ` input[name="base_url"]').value === 'https://api.openai.com/v1'`},
		{"a password input for the key", `document.querySelector('` + f + ` input[name="api_key"]').type === 'password'`},
		{"the help text", `document.querySelector('` + f + `').textContent.includes('Any OpenAI-compatible server.')`},
	} {
		if !eval[bool](p, check.expr) {
			t.Errorf("setup form: no %s", check.what)
		}
	}
	p.do("fill in a bad key",
		chromedp.SetValue(chromedp.CSS(f+` input[name="base_url"]`), app.Model.BaseURL()),
		chromedp.SendKeys(chromedp.CSS(f+` input[name="api_key"]`), "sk-bad"),
		chromedp.SendKeys(chromedp.CSS(f+` input[name="model"]`), "gpt-test"),
		chromedp.Click(chromedp.CSS(f+` button[type=submit]`)),
	)
	p.allow("status of 422") // the refused setup, logged by the browser
	p.waitFor("the refusal", `document.querySelector('`+f+` .form-status').textContent.includes('nothing was saved') && document.querySelector('`+f+` .form-status').textContent.includes('invalid api key')`)
	if form.values() != nil {
		t.Fatal("a refused setup was saved")
	}
	p.do("fix the key",
		chromedp.SetValue(chromedp.CSS(f+` input[name="api_key"]`), "sk-good"),
		chromedp.Click(chromedp.CSS(f+` button[type=submit]`)),
	)
	p.waitFor("the confirmation", `document.querySelector('`+f+` .form-status.ok')?.textContent.includes('Saved')`)
	got := form.values()
	if got["api_key"] != "sk-good" || got["model"] != "gpt-test" || got["provider"] != "openai" || got["base_url"] != app.Model.BaseURL() {
		t.Errorf("saved values = %v", got)
	}
	// Until a model is configured the chat says so.
	p.do("open the chat", chromedp.Click(chromedp.ID("tab-chat")))
	p.waitFor("the banner", `!document.getElementById('banner').hidden && document.getElementById('banner').textContent.includes('No model is configured')`)

	// Signing out forgets the token: the page asks for it, and a wrong one
	// is refused.
	p.allow("status of 401") // signed out, and a wrong token: logged by the browser
	p.do("sign out", chromedp.Navigate(app.Base+"/#setup"))
	p.waitFor("the sign-out button", `!!document.getElementById('sign-out')`)
	p.do("click sign out", chromedp.Click(chromedp.ID("sign-out")))
	p.waitFor("the sign-in form", `!document.getElementById('view-login').hidden`)
	if stored := eval[string](p, `localStorage.getItem('reverie.token') || ''`); stored != "" {
		t.Errorf("the token is still stored after signing out")
	}
	p.do("sign in with a wrong token", chromedp.SendKeys(chromedp.ID("login-token"), "wrong"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the refusal", `!document.getElementById('login-error').hidden`)
	p.do("sign in", chromedp.SetValue(chromedp.ID("login-token"), WebToken), chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
	p.waitFor("signed in again", `document.getElementById('view-login').hidden && document.getElementById('conn').dataset.state === 'online'`)
	p.checkProblems()
}

// TestBrowserSetupNeedsTheTokenWithAuthNone: with web.auth: none the page
// works without signing in, but saving the setup form asks for the token
// (a page on another site must not choose the model); once signed in, the
// form saves.
func TestBrowserSetupNeedsTheTokenWithAuthNone(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	form := &setupForm{}
	app := startWebApp(t, "127.0.0.1:0",
		WithExtensions(extension.Info{ID: "modelsetup", New: func() extension.Extension { return form }, Description: "test setup form"}),
		WithEnv("REVERIE_WEB__AUTH=none", "OPENAI_BASE_URL=", "OPENAI_API_KEY=", "REVERIE_MODEL=", "ANTHROPIC_API_KEY=", "OLLAMA_HOST=127.0.0.1:1"))
	p := newBrowser(t, browserPath, "setup-none", 1024, 800)
	p.allow("status of 401") // the setup refused without the token, logged by the browser
	p.do("load the page without a token", chromedp.Navigate(app.Base+"/#setup"))
	const f = `form[data-form="modelsetup"]`
	p.waitFor("the form", `!!document.querySelector('`+f+`')`)
	fill := []chromedp.Action[chromedp.Void]{
		chromedp.SetValue(chromedp.CSS(f+` input[name="api_key"]`), "sk-good"),
		chromedp.SetValue(chromedp.CSS(f+` input[name="model"]`), "gpt-test"),
		chromedp.Click(chromedp.CSS(f + ` button[type=submit]`)),
	}
	p.do("save without the token", fill...)
	p.waitFor("the request for the token", `!document.getElementById('view-login').hidden && document.getElementById('login-error').textContent.includes('needs the access token')`)
	if form.values() != nil {
		t.Fatal("the setup was saved without the token")
	}
	p.do("sign in", chromedp.SetValue(chromedp.ID("login-token"), WebToken), chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
	p.waitFor("signed in", `document.getElementById('view-login').hidden`)
	p.do("back to the setup", chromedp.Navigate(app.Base+"/#setup"))
	p.waitFor("the form again", `!!document.querySelector('`+f+`')`)
	p.do("save with the token", fill...)
	p.waitFor("the confirmation", `document.querySelector('`+f+` .form-status.ok')?.textContent.includes('Saved')`)
	if got := form.values(); got["api_key"] != "sk-good" {
		t.Errorf("saved values = %v", got)
	}
	p.checkProblems()
}

// TestBrowserStopButton: while a reply is awaited the stop button shows;
// pressing it cancels the turn on the server. A stop is not an error: the
// reply keeps what was written with a quiet "Stopped" mark (no red bubble,
// no provider label), also after a reload.
func TestBrowserStopButton(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "stop", 1200, 800)
	asked := make(chan struct{}, 1)
	var stalled atomic.Bool
	app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		if strings.Contains(lastUser(req), "think slowly") && !stalled.Swap(true) {
			select {
			case asked <- struct{}{}:
			default:
			}
			// The first words stream, then the model stalls.
			return llmtest.ServerReply{Text: "Half of an answer that goes on and on", Chunks: 8, StallAfter: 3}
		}
		return webAssistant(req)
	})
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the chat view", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	if !eval[bool](p, `document.getElementById('stop').hidden`) {
		t.Error("the stop button shows with nothing running")
	}
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "please think slowly"), chromedp.Click(chromedp.ID("send")))
	p.waitFor("the stop button", `!document.getElementById('stop').hidden`)
	select { // the turn is running: the model has the request
	case <-asked:
	case <-time.After(patience):
		t.Fatal("the model was not asked")
	}
	p.waitFor("the first words", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('Half of'))`)
	p.do("stop", chromedp.Click(chromedp.ID("stop")))
	const stopped = `document.querySelector('.msg.assistant.stopped')`
	p.waitFor("the stopped reply", stopped+` && document.getElementById('stop').hidden`)
	check := func(when string) {
		t.Helper()
		if eval[bool](p, `!!document.querySelector('.msg.assistant.failed, .msg.assistant .error-text')`) {
			t.Errorf("%s: the stopped reply shows as an error", when)
		}
		if !eval[bool](p, stopped+`.textContent.includes('Half of') && `+stopped+`.textContent.includes('Stopped')`) {
			t.Errorf("%s: the stopped reply lost its text or its mark: %q", when, eval[string](p, stopped+`.textContent`))
		}
		if body := eval[string](p, `document.getElementById('messages').innerText`); strings.Contains(body, "openai/") || strings.Contains(body, "gpt-test") {
			t.Errorf("%s: an internal label shows: %q", when, body)
		}
	}
	check("live")
	// After a reload the question is not left unanswered-looking.
	p.do("reload", chromedp.Reload())
	p.waitFor("the history", stopped)
	check("after a reload")
	// Retry answers it again.
	p.do("retry", chromedp.Click(chromedp.CSS(`.msg.assistant.stopped button[data-act="retry"]`)))
	p.waitFor("the new reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.trim().startsWith('ok') && !m.classList.contains('streaming'))`)
	if eval[bool](p, `!!document.querySelector('.msg.assistant.stopped')`) {
		t.Error("the stopped reply is still shown after the retry")
	}
	p.checkProblems()
}
