package apptest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// convAssistant numbers its answers ("answer 3: …"), fails "fail please"
// while failing is set, and claims a reminder it did not set for "claim",
// which the supervisor check has it correct.
func convAssistant(failing *atomic.Bool, n *atomic.Int32) func(req llmtest.ChatRequest) llmtest.ServerReply {
	return func(req llmtest.ChatRequest) llmtest.ServerReply {
		q := lastUser(req)
		switch {
		case strings.Contains(q, "[SUPERVISOR]"):
			return llmtest.ServerReply{Text: "Correction: I have not set that reminder yet.", Chunks: 3}
		case strings.HasPrefix(q, "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Hello, I'm Reverie. What are you working on?", Chunks: 3}
		case strings.Contains(q, "fail please") && failing.Load():
			return llmtest.ServerReply{Status: http.StatusBadRequest, ErrorMessage: "the request is too long"}
		case strings.Contains(q, "claim"):
			return llmtest.ServerReply{Text: "I'll remind you at six."}
		}
		text := "answer " + string(rune('0'+n.Add(1))) + ": " + q
		if greets(req) {
			text = Greeting + text
		}
		return llmtest.ServerReply{Text: text, Chunks: 3}
	}
}

// click clicks the element css selects from the page's script, as a
// keyboard or pointer user reaches it (the row actions show on hover).
func (p *browserPage) click(what, css string) {
	p.t.Helper()
	p.waitFor(what, `!!document.querySelector(`+js(css)+`)`)
	p.do(what, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+js(css)+`).click()`))
}

// search types text into the conversation search box.
func (p *browserPage) search(text string) {
	p.t.Helper()
	p.do("search "+text, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('thread-search'); s.value = `+js(text)+`; s.dispatchEvent(new Event('input')); })()`))
}

const (
	jsUsers      = `[...document.querySelectorAll('#messages .msg.user')].map(m => m.querySelector('.bubble').textContent.trim())`
	jsAssistants = `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].map(m => m.querySelector('.md')?.textContent.trim() || '')`
	jsOrder      = `[...document.querySelectorAll('#messages .msg')].map(m => m.classList.contains('user') ? 'U' : m.classList.contains('assistant') ? 'A' : m.classList.contains('system') ? 'S' : 'N').join('')`
	// jsOrderLinks is jsOrder with the earlier-version links (B).
	jsOrderLinks = `[...document.querySelectorAll('#messages .msg, #messages .branch-link')].map(m => m.classList.contains('branch-link') ? 'B' : m.classList.contains('user') ? 'U' : m.classList.contains('assistant') ? 'A' : 'N').join('')`
)

// TestBrowserGreetingOrderAndMessages: the first message is answered by one
// reply that greets (no second call, no seed row), the order shown is the
// order stored (also after a reload); regenerate, edit-and-resend and retry
// replace turns that stay readable as "earlier versions"; the supervisor's
// correction reads as the assistant's own reply; copy copies.
func TestBrowserGreetingOrderAndMessages(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "messages", 1280, 900)
	var failing atomic.Bool
	var n atomic.Int32
	app.Model.Handle(convAssistant(&failing, &n))

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	thread := eval[string](p, `decodeURIComponent(location.hash.replace(/^#chat\//, ''))`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "plan a trip"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the reply", `document.querySelectorAll('#messages .msg.assistant:not(.streaming)').length === 1 && document.getElementById('stop').hidden`)
	first := eval[[]string](p, jsAssistants)
	if len(first) != 1 || first[0] != Greeting+"answer 1: plan a trip" {
		t.Fatalf("first reply %q, want one reply that greets and answers", first)
	}
	if calls := len(app.Model.ChatRequests()); calls != 1 {
		t.Errorf("%d model calls for the first message, want 1", calls)
	}
	if got := eval[string](p, jsOrder); got != "UA" {
		t.Errorf("order shown %q, want UA", got)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("the history", `document.querySelectorAll('#messages .msg.assistant').length === 1`)
	if got := eval[string](p, jsOrder); got != "UA" {
		t.Errorf("order after a reload %q, want UA (no seed row, the question first)", got)
	}
	if eval[bool](p, `document.body.innerText.includes('System event') || document.body.innerText.includes('SYSTEM EVENT')`) {
		t.Error("the seed shows as a row")
	}

	// Copy.
	p.click("copy the reply", `#messages .msg.assistant button[data-act="copy"]`)
	p.waitFor("the copy confirmation", `document.querySelector('#messages .msg.assistant button[data-act="copy"]').dataset.copied === 'true'`)

	// Regenerate: one reply shown, the old one an earlier version.
	p.click("regenerate", `#messages .msg.assistant.last-reply button[data-act="regenerate"]`)
	p.waitFor("the regenerated reply", `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].some(m => m.textContent.includes('answer 2: plan a trip'))`)
	if got := eval[[]string](p, jsAssistants); len(got) != 1 {
		t.Errorf("after regenerate the replies shown are %q, want the new one only", got)
	}
	// The earlier version is marked as soon as the new reply ends, where a
	// reload puts it: between the question and the new reply.
	p.waitFor("the earlier version link, live", `!!document.querySelector('#messages .branch-link a')`)
	if got := eval[string](p, jsOrderLinks); got != "UBA" {
		t.Errorf("order shown after regenerate %q, want UBA (question, earlier version, new reply)", got)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("the earlier version link", `!!document.querySelector('#messages .branch-link a')`)
	if got := eval[string](p, jsOrderLinks); got != "UBA" {
		t.Errorf("order after a reload %q, want UBA", got)
	}

	// Edit the question and resend.
	p.waitFor("the message id", `!!document.querySelector('#messages .msg.user[data-id] button[data-act="edit"]')`)
	p.click("edit", `#messages .msg.user button[data-act="edit"]`)
	p.waitFor("the editor", `!!document.querySelector('#messages .edit-box')`)
	p.do("change the text", chromedp.SetValue(chromedp.CSS(`#messages .edit-box`), "plan a trip to Lyon"),
		chromedp.Click(chromedp.CSS(`#messages button[data-act="send-edit"]`)))
	p.waitFor("the answer to the edit", `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].some(m => m.textContent.includes('answer 3: plan a trip to Lyon'))`)
	// The edit's earlier version (the question as it was, and the
	// regenerated reply's link with it) is marked live too.
	p.waitFor("both earlier versions, live", `document.querySelectorAll('#messages .branch-link a').length === 2`)
	if got := eval[string](p, jsOrderLinks); got != "BBUA" {
		t.Errorf("order shown after the edit %q, want BBUA (both earlier versions before the edited question)", got)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("the history", `document.querySelectorAll('#messages .msg.assistant').length >= 1`)
	if got := eval[[]string](p, jsUsers); len(got) != 1 || got[0] != "plan a trip to Lyon" {
		t.Errorf("questions after the edit %q", got)
	}
	var segs api.SegmentList
	app.JSON(t, http.MethodGet, "/segments?kind=branch&thread="+thread, nil, http.StatusOK, &segs)
	if len(segs.Segments) != 2 {
		t.Fatalf("branches kept: %+v", segs.Segments)
	}
	// The earlier version opens read-only.
	// The edit's branch (the newest) holds the question as it was.
	p.click("open the earlier version", fmt.Sprintf(`#messages .branch-link[data-segment="%d"] a`, segs.Segments[0].ID))
	p.waitFor("the archived branch", `!!document.getElementById('segment-bar') && document.getElementById('input').disabled`)
	if got := eval[[]string](p, jsUsers); len(got) != 1 || got[0] != "plan a trip" {
		t.Errorf("the earlier version shows %q", got)
	}
	p.click("back", `#segment-bar a`)
	p.waitFor("the conversation again", `!document.getElementById('segment-bar') && !document.getElementById('input').disabled`)

	p.checkProblems()
}

// TestBrowserConversationList: rename, delete and restore from the list,
// search across titles and messages, and a conversation /new closed stays
// reachable and readable; threads are labelled by title in the debug panel.
func TestBrowserConversationList(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "conversations", 1280, 900)
	var failing atomic.Bool
	var n atomic.Int32
	app.Model.Handle(convAssistant(&failing, &n))
	// Two conversations made through the API.
	app.JSON(t, http.MethodPost, "/threads/web:lyon/messages", map[string]string{"text": "Book the train to Lyon"}, http.StatusOK, nil)
	app.JSON(t, http.MethodPost, "/threads/web:crepes/messages", map[string]string{"text": "Recipe for crêpes"}, http.StatusOK, nil)

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken+"&x=1"))
	p.do("open the Lyon thread", chromedp.Navigate(app.Base+"/#chat/web:lyon"))
	// The page has started and shows Lyon (the list, and Lyon marked in
	// it, are drawn by separate steps of the start).
	p.waitFor("the list, Lyon shown", `document.querySelectorAll('#threads .thread-row').length === 2 && !!document.querySelector('#threads a.thread.active[data-thread="web:lyon"]')`)
	const row = `document.querySelector('#threads li[data-thread="web:lyon"]')`

	// Rename.
	p.click("rename", `#threads li[data-thread="web:lyon"] button[data-act="rename"]`)
	p.waitFor("the title editor, focused", `!!`+row+`?.querySelector('.rename-input') && document.activeElement === `+row+`.querySelector('.rename-input')`)
	p.do("type the title", chromedp.SetValue(chromedp.CSS(`#threads .rename-input`), "Lyon trip"),
		chromedp.Focus(chromedp.CSS(`#threads .rename-input`)), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the new title", row+`?.querySelector('.thread-title')?.textContent === 'Lyon trip'`)
	var threads api.ThreadList
	app.JSON(t, http.MethodGet, "/threads", nil, http.StatusOK, &threads)
	if !hasTitle(threads.Threads, "web:lyon", "Lyon trip") {
		t.Errorf("the rename did not reach the server: %+v", threads.Threads)
	}
	if title := eval[string](p, `document.title`); !strings.Contains(title, "Lyon trip") {
		t.Errorf("document title %q", title)
	}

	// Search: a message, then a title; a hit opens its conversation.
	p.search("crepe")
	p.waitFor("the hit", `!!document.querySelector('#search-results a.hit[data-thread="web:crepes"] mark')`)
	p.click("open the hit", `#search-results a.hit[data-thread="web:crepes"]`)
	p.waitFor("the conversation", `[...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('crêpes'))`)
	p.search("lyon tr")
	p.waitFor("the title hit", `!!document.querySelector('#search-results a.hit[data-thread="web:lyon"][data-message=""]')`)
	p.search("")
	p.waitFor("the list again", `!document.getElementById('threads').hidden`)

	// Delete, find it under Archived, restore.
	p.click("delete", `#threads li[data-thread="web:lyon"] button[data-act="delete"]`)
	p.waitFor("gone from the list", `!`+row)
	p.click("open the archive", `#archive > summary`)
	p.waitFor("the deleted conversation", `!!document.querySelector('#archived li[data-archived="web:lyon"]')`)
	p.click("restore", `#archived li[data-archived="web:lyon"] button[data-act="restore"]`)
	p.waitFor("back in the list", `!!`+row+` && !document.querySelector('#archived li[data-archived="web:lyon"]')`)

	// /new closes the conversation; it stays reachable, read-only.
	p.do("open Lyon", chromedp.Navigate(app.Base+"/#chat/web:lyon"))
	p.waitFor("its messages", `[...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('train to Lyon'))`)
	// A conversation the terminal closed with /new is listed too, labelled.
	for _, text := range []string{"Plan the garden", "/new"} {
		in := chat.Inbound{Address: chat.Address{Channel: "cli", Thread: "cli:ann"}, Sender: chat.Sender{ID: "ann"}, Text: text}
		if _, err := app.App.Router.Handle(context.Background(), in); err != nil {
			t.Fatalf("%s on cli:ann: %v", text, err)
		}
	}
	p.do("/new", chromedp.SendKeys(chromedp.ID("input"), "/new"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the greeting of the new conversation", `[...document.querySelectorAll('#messages .msg.assistant')].some(m => m.textContent.includes("I'm Reverie"))`)
	// Closed and opened again in two steps: two toggle events, the second
	// loading the archive after /new made its segment.
	p.do("close the archive", chromedp.Evaluate[chromedp.Void](`document.getElementById('archive').open = false`))
	p.waitFor("the archive closed", `!document.getElementById('archive').open`)
	p.do("reopen the archive", chromedp.Evaluate[chromedp.Void](`document.getElementById('archive').open = true`))
	p.waitFor("the closed conversation", `[...document.querySelectorAll('#archived li[data-segment] .thread-title')].some(e => e.textContent === 'Lyon trip')`)
	p.waitFor("the terminal's closed conversation", `[...document.querySelectorAll('#archived li[data-segment] .thread-title')].some(e => e.textContent === 'Plan the garden · terminal')`)
	p.click("open it", `#archived li[data-segment] a`)
	p.waitFor("its messages, read-only", `!!document.getElementById('segment-bar') && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('train to Lyon'))`)
	if !eval[bool](p, `document.getElementById('input').disabled`) {
		t.Error("an archived conversation can be written to")
	}

	// The debug panel labels threads by title.
	p.do("open the interaction log", chromedp.Navigate(app.Base+"/#debug/interactions"))
	p.waitFor("a labelled thread", `[...document.querySelectorAll('#ix-list .ix-thread')].some(e => e.textContent === 'Lyon trip' && e.title === 'web:lyon')`)
	if eval[bool](p, `[...document.querySelectorAll('#ix-list .ix-thread')].some(e => e.textContent.startsWith('web:'))`) {
		t.Error("the interaction log shows raw thread ids")
	}
	p.checkProblems()
}

// TestBrowserRenameSurvivesListUpdates: the list re-renders whenever a
// conversation changes (a reply elsewhere, a deletion or restoration by
// another client); an open title editor stays through it, with what was
// typed, its focus and caret, and Enter still renames.
func TestBrowserRenameSurvivesListUpdates(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "rename-survives", 1280, 900)
	var failing atomic.Bool
	var n atomic.Int32
	app.Model.Handle(convAssistant(&failing, &n))
	for _, th := range []string{"lyon", "crepes", "garden"} {
		app.JSON(t, http.MethodPost, "/threads/web:"+th+"/messages", map[string]string{"text": "Start " + th}, http.StatusOK, nil)
	}

	// Crêpes shown first: the page follows it (its replies reach the page).
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken+"&x=1"))
	p.do("open the crêpes thread", chromedp.Navigate(app.Base+"/#chat/web:crepes"))
	p.waitFor("crêpes shown, online", `document.getElementById('conn').dataset.state === 'online' && !!document.querySelector('#threads a.thread.active[data-thread="web:crepes"]') && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('Start crepes'))`)
	p.do("open the Lyon thread", chromedp.Navigate(app.Base+"/#chat/web:lyon"))
	p.waitFor("Lyon shown", `document.querySelectorAll('#threads .thread-row').length === 3 && !!document.querySelector('#threads a.thread.active[data-thread="web:lyon"]') && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('Start lyon'))`)
	const row = `document.querySelector('#threads li[data-thread="web:lyon"]')`
	const editor = row + `?.querySelector('.rename-input')`

	p.click("rename", `#threads li[data-thread="web:lyon"] button[data-act="rename"]`)
	p.waitFor("the title editor, focused", `!!`+editor+` && document.activeElement === `+editor)
	p.do("type", chromedp.KeyEvent(kb.End), chromedp.KeyEvent(" trip"))
	p.waitFor("the typed text", editor+`.value === 'Start lyon trip'`)
	p.do("put the caret after 'lyon'", chromedp.Evaluate[chromedp.Void](editor+`.setSelectionRange(10, 10)`))
	still := func(when, value string) {
		t.Helper()
		if got := eval[string](p, `(() => { const i = `+editor+`; if (!i) return 'no editor'; return [i.value, document.activeElement === i, i.selectionStart, i.selectionEnd].join('|'); })()`); got != value+"|true|10|10" {
			t.Fatalf("%s: the editor is %q, want %q (value|focused|caret)", when, got, value+"|true|10|10")
		}
	}

	// Another tab writes in another conversation: its reply moves it up,
	// marked unread.
	answered, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`new Promise((resolve) => {
		const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/api/v1/ws?thread=web%3Acrepes');
		ws.onopen = () => ws.send(JSON.stringify({ type: 'message', thread: 'web:crepes', text: 'and for six' }));
		ws.onmessage = (ev) => { const f = JSON.parse(ev.data); if ((f.type === 'done' || f.type === 'error') && f.thread === 'web:crepes') { ws.close(); resolve(f.type + ': ' + (f.text || f.error)); } };
		ws.onerror = () => resolve('websocket error');
	})`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(answered, "done: ") {
		t.Fatalf("another tab's message: %q, %v", answered, err)
	}
	p.waitFor("crêpes moved up, unread", `document.querySelector('#threads .thread-row')?.dataset.thread === 'web:crepes' && !!document.querySelector('#threads a.thread.unread[data-thread="web:crepes"]')`)
	still("after a reply elsewhere", "Start lyon trip")

	// Another client deletes a conversation, then restores it (the list is fetched again).
	app.JSON(t, http.MethodDelete, "/threads/web:garden", nil, http.StatusOK, nil)
	p.waitFor("garden gone", `!document.querySelector('#threads li[data-thread="web:garden"]')`)
	still("after a deletion elsewhere", "Start lyon trip")
	app.JSON(t, http.MethodPost, "/threads/web:garden/restore", nil, http.StatusOK, nil)
	p.waitFor("garden back", `!!document.querySelector('#threads li[data-thread="web:garden"]')`)
	still("after a restoration elsewhere", "Start lyon trip")

	// Typing goes on at the caret; Enter renames.
	p.do("type more", chromedp.KeyEvent("'s"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the new title", row+`?.querySelector('.thread-title')?.textContent === "Start lyon's trip" && !`+editor)
	var threads api.ThreadList
	app.JSON(t, http.MethodGet, "/threads", nil, http.StatusOK, &threads)
	if !hasTitle(threads.Threads, "web:lyon", "Start lyon's trip") {
		t.Errorf("the rename did not reach the server: %+v", threads.Threads)
	}
	if title := eval[string](p, `document.title`); !strings.Contains(title, "Start lyon's trip") {
		t.Errorf("document title %q", title)
	}

	// A conversation deleted by another client while its title is being
	// edited: the editor closes with it, nothing saved.
	p.click("rename garden", `#threads li[data-thread="web:garden"] button[data-act="rename"]`)
	p.waitFor("garden's title editor, focused", `document.activeElement?.classList.contains('rename-input') && !!document.activeElement.closest('li[data-thread="web:garden"]')`)
	p.do("type", chromedp.KeyEvent("Weeds"))
	app.JSON(t, http.MethodDelete, "/threads/web:garden", nil, http.StatusOK, nil)
	p.waitFor("garden gone, with its editor", `!document.querySelector('#threads li[data-thread="web:garden"]') && !document.querySelector('.rename-input')`)
	var deleted api.ThreadList
	app.JSON(t, http.MethodGet, "/threads?archived=true", nil, http.StatusOK, &deleted)
	if !hasTitle(deleted.Threads, "web:garden", "Start garden") {
		t.Errorf("the deleted conversation's title changed: %+v", deleted.Threads)
	}
	p.checkProblems()
}

// TestBrowserRetryAndCorrection: a failed reply stays with its mark after a
// reload and retry answers it; the supervisor's correction reads as the
// assistant correcting itself (no notification card, no system row).
func TestBrowserRetryAndCorrection(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "retry", 1280, 900)
	var failing atomic.Bool
	var n atomic.Int32
	app.Model.Handle(convAssistant(&failing, &n))
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	// A failed reply stays with its mark after a reload; retry answers it.
	failing.Store(true)
	p.do("send a failing message", chromedp.SendKeys(chromedp.ID("input"), "fail please"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the failure", `!!document.querySelector('#messages .msg.assistant.failed .error-text')`)
	p.allow("status of 502")
	p.do("reload", chromedp.Reload())
	p.waitFor("the failure after a reload", `!!document.querySelector('#messages .msg.assistant.failed .error-text') && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('fail please'))`)
	failing.Store(false)
	p.click("retry", `#messages .msg.assistant.failed button[data-act="retry"]`)
	p.waitFor("the retried reply", `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].some(m => m.textContent.includes('answer 1: fail please'))`)
	if eval[bool](p, `!!document.querySelector('#messages .msg.assistant.failed')`) {
		t.Error("the failed reply is still shown after the retry")
	}

	// The supervisor's correction is the assistant correcting itself.
	p.do("claim", chromedp.SendKeys(chromedp.ID("input"), "claim something"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the correction", `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].some(m => m.textContent.includes('Correction: I have not set'))`)
	check := func(when string) {
		t.Helper()
		if eval[bool](p, `!!document.querySelector('#messages .msg.notify, #messages .msg.system') || document.body.innerText.includes('SUPERVISOR')`) {
			t.Errorf("%s: the correction shows as a notification or a system row: %s", when, eval[string](p, jsOrder))
		}
	}
	check("live")
	p.do("reload", chromedp.Reload())
	p.waitFor("the correction after a reload", `[...document.querySelectorAll('#messages .msg.assistant')].some(m => m.textContent.includes('Correction: I have not set'))`)
	check("after a reload")
	if got := eval[string](p, jsOrder); !strings.HasSuffix(got, "UAA") {
		t.Errorf("order %q, want the claim then the correction", got)
	}
	p.checkProblems()
}

func hasTitle(ts []api.Thread, id, title string) bool {
	for _, t := range ts {
		if string(t.ID) == id && t.Title == title {
			return true
		}
	}
	return false
}

// TestBrowserDeletedConversation: a conversation deleted by another client
// turns read-only on the page at once (gone from the list, the composer
// off, a Restore button); the server refuses its messages (HTTP 409, an
// error frame on the WebSocket of a stale tab) without calling the model
// or storing them; only Restore brings it back, with its history. A
// deleted conversation opened from the archive is read-only too. A
// terminal chat deleted and then written to starts a new, greeted
// conversation without the old history, the old one closed in the archive.
func TestBrowserDeletedConversation(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "deleted", 1280, 900)
	var failing atomic.Bool
	var n atomic.Int32
	app.Model.Handle(convAssistant(&failing, &n))
	app.JSON(t, http.MethodPost, "/threads/web:old/messages", map[string]string{"text": "Book the train to Lyon"}, http.StatusOK, nil)
	app.JSON(t, http.MethodPost, "/threads/web:other/messages", map[string]string{"text": "Recipe for crêpes"}, http.StatusOK, nil)

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken+"&x=1"))
	p.do("open the old conversation", chromedp.Navigate(app.Base+"/#chat/web:old"))
	p.waitFor("online with its messages", `document.getElementById('conn').dataset.state === 'online' && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('train to Lyon'))`)
	const row = `document.querySelector('#threads li[data-thread="web:old"]')`
	p.waitFor("the list", `!!`+row)

	// Deleted by another client: the page follows.
	app.JSON(t, http.MethodDelete, "/threads/web:old", nil, http.StatusOK, nil)
	p.waitFor("read-only, with Restore", `!!document.querySelector('#deleted-bar button[data-act="restore"]') && document.getElementById('input').disabled && !`+row)
	if eval[bool](p, `!!document.querySelector('#messages button[data-act="edit"], #messages button[data-act="regenerate"]')`) {
		t.Error("a deleted conversation offers edit or regenerate")
	}

	// The server refuses its messages: the API, and a stale tab's WebSocket.
	if code, body := app.Do(t, http.MethodPost, "/threads/web:old/messages", map[string]string{"text": "are you there"}); code != http.StatusConflict || !strings.Contains(string(body), "deleted") {
		t.Errorf("a message to a deleted conversation: %d %s, want 409", code, body)
	}
	if code, body := app.Do(t, http.MethodPost, "/threads/web:old/regenerate", nil); code != http.StatusConflict {
		t.Errorf("regenerate in a deleted conversation: %d %s, want 409", code, body)
	}
	refused, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`new Promise((resolve) => {
		const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/api/v1/ws');
		ws.onopen = () => ws.send(JSON.stringify({ type: 'message', thread: 'web:old', text: 'from a stale tab' }));
		ws.onmessage = (ev) => { const f = JSON.parse(ev.data); if (f.type === 'error' && f.thread === 'web:old') { ws.close(); resolve(f.error); } };
		ws.onerror = () => resolve('websocket error');
	})`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(refused, "deleted") {
		t.Errorf("a stale tab's message: %q, %v; want an error frame saying the conversation was deleted", refused, err)
	}
	for _, req := range app.Model.ChatRequests() {
		if q := lastUser(req); strings.Contains(q, "are you there") || strings.Contains(q, "stale tab") {
			t.Errorf("the model was asked %q in a deleted conversation", q)
		}
	}
	var msgs api.MessageList
	app.JSON(t, http.MethodGet, "/threads/web:old/messages", nil, http.StatusOK, &msgs)
	for _, m := range msgs.Messages {
		if strings.Contains(m.Text, "are you there") || strings.Contains(m.Text, "stale tab") {
			t.Errorf("a refused message was stored: %q", m.Text)
		}
	}

	// Restore: back in the list, writable, with its history.
	p.click("restore", `#deleted-bar button[data-act="restore"]`)
	p.waitFor("writable again", `!document.getElementById('deleted-bar') && !document.getElementById('input').disabled && !!`+row)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "and a hotel"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the answer", `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].some(m => m.textContent.includes(': and a hotel'))`)
	if !eval[bool](p, `[...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('train to Lyon'))`) {
		t.Error("the restored conversation lost its history")
	}

	// Deleted from the page, then opened from the archive: read-only.
	p.click("delete", `#threads li[data-thread="web:old"] button[data-act="delete"]`)
	p.waitFor("another conversation shown", `!`+row+` && !location.hash.includes('web%3Aold') && !location.hash.includes('web:old')`)
	p.click("open the archive", `#archive > summary`)
	p.click("open the deleted conversation", `#archived li[data-archived="web:old"] a`)
	p.waitFor("read-only", `!!document.getElementById('deleted-bar') && document.getElementById('input').disabled && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('and a hotel'))`)

	// A terminal chat deleted, then written to: a new conversation.
	cli := func(text string) string {
		t.Helper()
		in := chat.Inbound{Address: chat.Address{Channel: "cli", Thread: "cli:ann"}, Sender: chat.Sender{ID: "ann"}, Text: text}
		res, err := app.App.Router.Handle(context.Background(), in)
		if err != nil {
			t.Fatalf("%s on cli:ann: %v", text, err)
		}
		return res.Reply
	}
	cli("Plan the garden")
	app.JSON(t, http.MethodDelete, "/threads/cli:ann", nil, http.StatusOK, nil)
	before := len(app.Model.ChatRequests())
	if reply := cli("Book a dentist"); !strings.Contains(reply, "Book a dentist") || !strings.HasPrefix(reply, Greeting) {
		t.Errorf("reply %q, want a greeted answer to the new message", reply)
	}
	for _, req := range app.Model.ChatRequests()[before:] {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "garden") {
				t.Errorf("the new conversation's request carries the deleted one: %q", m.Text())
			}
		}
	}
	var threads api.ThreadList
	app.JSON(t, http.MethodGet, "/threads", nil, http.StatusOK, &threads)
	if !hasTitle(threads.Threads, "cli:ann", "Book a dentist") {
		t.Errorf("the terminal chat is not listed with its new conversation: %+v", threads.Threads)
	}
	p.do("close the archive", chromedp.Evaluate[chromedp.Void](`document.getElementById('archive').open = false`))
	p.waitFor("the archive closed", `!document.getElementById('archive').open`)
	p.do("reopen the archive", chromedp.Evaluate[chromedp.Void](`document.getElementById('archive').open = true`))
	p.waitFor("the deleted terminal conversation, closed", `[...document.querySelectorAll('#archived li[data-segment] .thread-title')].some(e => e.textContent === 'Plan the garden · terminal')`)
	p.checkProblems()
}

// TestBrowserSendWhileTheHistoryLoads: a message sent while the page is
// still fetching the conversation's history is shown once that history
// is: the history, answered by the server before the message was sent,
// used to replace the screen and take the message with it (it came back
// only after a reload). The test holds the history's answer in Chromium
// (the Fetch domain, at the response stage) to make that order certain.
func TestBrowserSendWhileTheHistoryLoads(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "You said: " + lastUser(req)}
	})
	in := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:hist"}, Sender: chat.Sender{ID: "web"}, Text: "the first message"}
	if _, err := app.App.Router.Handle(t.Context(), in); err != nil {
		t.Fatal(err)
	}

	p := newBrowser(t, browserPath, "send-while-the-history-loads", 1280, 900)
	// The first answer with the history is held until released; any
	// other paused request goes on at once.
	held := make(chan cdpfetch.RequestID, 1)
	ctx, cancel := context.WithCancel(p.ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	paused := chromedp.Events(ctx, cdpfetch.RequestPaused)
	wg.Go(func() {
		first := true
		for ev, err := range paused {
			if err != nil {
				return
			}
			if first && strings.Contains(ev.Request.URL, "/messages") && !strings.Contains(ev.Request.URL, "after_id") {
				first = false
				held <- ev.RequestID
				continue
			}
			_, _ = chromedp.Call(ctx, cdpfetch.ContinueRequest, cdpfetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	})
	if _, err := chromedp.Call(p.ctx, cdpfetch.Enable, cdpfetch.EnableParams{Patterns: []*cdpfetch.RequestPattern{
		{URLPattern: "*/api/v1/threads/web%3Ahist/messages*", RequestStage: cdpfetch.RequestStageResponse},
	}}); err != nil {
		t.Fatalf("intercept the history: %v", err)
	}
	p.do("load the conversation", chromedp.Navigate(app.Base+"/#chat/web:hist&token="+WebToken))
	var id cdpfetch.RequestID
	select {
	case id = <-held:
	case <-p.ctx.Done():
		t.Fatal("the page never asked for the history")
	}
	p.waitFor("the chat view, online", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "are you there?"), chromedp.Click(chromedp.ID("send")))
	if _, err := chromedp.Call(p.ctx, cdpfetch.ContinueRequest, cdpfetch.ContinueRequestParams{RequestID: id}); err != nil {
		t.Fatalf("release the history: %v", err)
	}
	p.waitFor("the reply", `[...document.querySelectorAll('#messages .msg.assistant')].some(m => !m.classList.contains('streaming') && m.textContent.includes('You said: are you there?'))`)
	got := eval[[]string](p, `[...document.querySelectorAll('#messages .msg')].map(m => (m.classList.contains('user') ? 'user: ' : 'assistant: ') + m.querySelector('.md').textContent.trim())`)
	want := []string{"user: the first message", "assistant: You said: the first message", "user: are you there?", "assistant: You said: are you there?"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the conversation shows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var msgs api.MessageList
	app.JSON(t, http.MethodGet, "/threads/web:hist/messages", nil, http.StatusOK, &msgs)
	if n := countText(msgs.Messages, "user", "are you there?"); n != 1 {
		t.Errorf("the message is stored %d times, want once", n)
	}
	p.checkProblems()
}

// countText counts the messages of role with text.
func countText(ms []api.Message, role, text string) int {
	n := 0
	for _, m := range ms {
		if m.Role == role && m.Text == text {
			n++
		}
	}
	return n
}

// TestBrowserMessagesFromElsewhere: a page open on a conversation shows
// every message of it and every reply, whatever client sent the message:
// the page itself, the HTTP API (POST …/messages, which still answers with
// the reply) and another tab, in the order stored, as a reload shows them.
func TestBrowserMessagesFromElsewhere(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "You said: " + lastUser(req), Chunks: 3}
	})
	p := newBrowser(t, browserPath, "messages-from-elsewhere", 1280, 900)
	p.do("load the conversation", chromedp.Navigate(app.Base+"/#chat/web:elsewhere&token="+WebToken))
	p.waitFor("the chat view, online", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	// The page's own message subscribes it to the conversation: once its
	// reply is shown, every later frame of the conversation reaches it. A
	// command is not stored: it never takes a stored message's id.
	p.do("send a command", chromedp.SendKeys(chromedp.ID("input"), "/nosuch"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("its answer", `[...document.querySelectorAll('#messages .msg.assistant')].some(m => !m.classList.contains('streaming') && m.textContent.includes('Unknown command /nosuch'))`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "from the page"), chromedp.KeyEvent(kb.Enter))
	const replied = `(text) => [...document.querySelectorAll('#messages .msg.assistant')].some(m => !m.classList.contains('streaming') && m.textContent.includes('You said: ' + text))`
	p.waitFor("the page's reply", `(`+replied+`)('from the page')`)

	var reply api.Reply
	app.JSON(t, http.MethodPost, "/threads/web:elsewhere/messages", map[string]string{"text": "from the API"}, http.StatusOK, &reply)
	if reply.Reply != "You said: from the API" {
		t.Errorf("the API's reply is %q", reply.Reply)
	}
	p.waitFor("the API's message and its reply", `(`+replied+`)('from the API') && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('from the API'))`)

	answered, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`new Promise((resolve) => {
		const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/api/v1/ws');
		ws.onopen = () => ws.send(JSON.stringify({ type: 'message', thread: 'web:elsewhere', text: 'from another tab' }));
		ws.onmessage = (ev) => { const f = JSON.parse(ev.data); if ((f.type === 'done' || f.type === 'error') && f.thread === 'web:elsewhere') { ws.close(); resolve(f.type + ': ' + (f.text || f.error)); } };
		ws.onerror = () => resolve('websocket error');
	})`, chromedp.EvalAwaitPromise))
	if err != nil || answered != "done: You said: from another tab" {
		t.Fatalf("another tab's message: %q, %v", answered, err)
	}
	p.waitFor("the other tab's message and its reply", `(`+replied+`)('from another tab') && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('from another tab'))`)

	const shown = `[...document.querySelectorAll('#messages .msg')].map(m => (m.classList.contains('user') ? 'user: ' : m.classList.contains('assistant') ? 'assistant: ' : 'other: ') + (m.querySelector('.md')?.textContent.trim() || ''))`
	want := strings.Join([]string{
		"user: from the page", "assistant: You said: from the page",
		"user: from the API", "assistant: You said: from the API",
		"user: from another tab", "assistant: You said: from another tab",
	}, "\n")
	command := "user: /nosuch\nassistant: Unknown command /nosuch. Type /help for the list of commands.\n"
	if got := strings.Join(eval[[]string](p, shown), "\n"); got != command+want {
		t.Errorf("the page shows\n%s\nwant\n%s", got, command+want)
	}
	// Each message shown is its stored one, once (an edit names it by id);
	// the command has none.
	p.waitFor("the messages' ids", `(() => { const ids = [...document.querySelectorAll('#messages .msg.user')].map(m => m.dataset.id || ''); return ids.length === 4 && ids[0] === '' && ids.slice(1).every(Boolean) && new Set(ids).size === 4; })()`)
	p.do("reload", chromedp.Reload())
	p.waitFor("the history", `document.querySelectorAll('#messages .msg.assistant').length === 3`)
	if got := strings.Join(eval[[]string](p, shown), "\n"); got != want {
		t.Errorf("after a reload the page shows\n%s\nwant\n%s", got, want)
	}
	p.checkProblems()
}

// TestBrowserRedoFromElsewhere: a regeneration made in another tab and an
// edit made over the HTTP API replace, on a page open on the conversation,
// what they replaced, in place, as a reload shows it: the new reply where
// the old one was (not after it), the earlier version linked.
func TestBrowserRedoFromElsewhere(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	var failing atomic.Bool
	var n atomic.Int32
	app.Model.Handle(convAssistant(&failing, &n))
	p := newBrowser(t, browserPath, "redo-from-elsewhere", 1280, 900)
	p.do("load the conversation", chromedp.Navigate(app.Base+"/#chat/web:redone&token="+WebToken))
	p.waitFor("the chat view, online", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "plan a trip"), chromedp.KeyEvent(kb.Enter))
	p.waitFor("the reply", `[...document.querySelectorAll('#messages .msg.assistant:not(.streaming)')].some(m => m.textContent.includes('answer 1: plan a trip')) && document.getElementById('stop').hidden`)

	// Another tab regenerates the reply.
	answered, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`new Promise((resolve) => {
		const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/api/v1/ws');
		ws.onopen = () => ws.send(JSON.stringify({ type: 'regenerate', thread: 'web:redone' }));
		ws.onmessage = (ev) => { const f = JSON.parse(ev.data); if ((f.type === 'done' || f.type === 'error') && f.thread === 'web:redone') { ws.close(); resolve(f.type + ': ' + (f.text || f.error)); } };
		ws.onerror = () => resolve('websocket error');
	})`, chromedp.EvalAwaitPromise))
	if err != nil || answered != "done: "+Greeting+"answer 2: plan a trip" {
		t.Fatalf("the other tab's regeneration: %q, %v", answered, err)
	}
	const shown = `[...document.querySelectorAll('#messages .msg, #messages .branch-link')].map(m => m.classList.contains('branch-link') ? 'earlier version' : (m.classList.contains('user') ? 'user: ' : m.classList.contains('assistant') ? 'assistant: ' : 'other: ') + (m.querySelector('.md, .bubble')?.textContent.trim() || '')).join('\n')`
	regenerated := "user: plan a trip\nearlier version\nassistant: " + Greeting + "answer 2: plan a trip"
	p.waitFor("the regenerated reply in place of the old one", shown+` === `+js(regenerated))

	// The HTTP API edits the question.
	var list api.MessageList
	app.JSON(t, http.MethodGet, "/threads/web:redone/messages", nil, http.StatusOK, &list)
	var q int64
	for _, m := range list.Messages {
		if m.Role == "user" && m.Text == "plan a trip" {
			q = m.ID
		}
	}
	if q == 0 {
		t.Fatalf("no stored question in %+v", list.Messages)
	}
	var reply api.Reply
	app.JSON(t, http.MethodPost, "/threads/web:redone/messages/"+itoa(q)+"/edit", api.EditRequest{Text: "plan a trip to Lyon"}, http.StatusOK, &reply)
	if reply.Reply != Greeting+"answer 3: plan a trip to Lyon" {
		t.Fatalf("the API's edit answered %q", reply.Reply)
	}
	edited := "earlier version\nearlier version\nuser: plan a trip to Lyon\nassistant: " + Greeting + "answer 3: plan a trip to Lyon"
	p.waitFor("the edited question and its reply in place of the old ones", shown+` === `+js(edited))

	p.do("reload", chromedp.Reload())
	p.waitFor("the history", `document.querySelectorAll('#messages .msg.assistant').length === 1 && document.querySelectorAll('#messages .branch-link').length === 2`)
	if got := eval[string](p, shown); got != edited {
		t.Errorf("after a reload the page shows\n%s\nwant what it showed live\n%s", got, edited)
	}
	p.checkProblems()
}
