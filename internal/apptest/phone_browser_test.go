package apptest

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// drawerClosed is true when the conversation drawer is off screen.
const drawerClosed = `(!document.getElementById('app').classList.contains('sidebar-open') && document.getElementById('sidebar').getBoundingClientRect().right <= 1)`

// drawerOpen is true when the drawer is on screen.
const drawerOpen = `(document.getElementById('app').classList.contains('sidebar-open') && document.getElementById('sidebar').getBoundingClientRect().left >= 0)`

// TestBrowserPhoneDrawer: on a phone, Escape and the back button close the
// conversation drawer (back does not leave the conversation), choosing a
// conversation closes it and back then returns to the previous one,
// focusing the composer closes it, and going forward never reopens it. The
// connection indicator has a visible text label, and a fragment
// navigation routes once (a tab's view is loaded once).
func TestBrowserPhoneDrawer(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "phone-drawer", 390, 844)
	app.Model.Handle(webAssistant)

	p.do("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	first := eval[string](p, `location.hash`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "hello"), chromedp.Click(chromedp.ID("send")))
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.trim().startsWith('ok'))`)

	// The indicator says in words what its colour says.
	if !eval[bool](p, `(() => { const l = document.querySelector('#conn .conn-label'); const r = l.getBoundingClientRect(); return l.textContent === 'online' && r.width > 10 && r.right <= window.innerWidth && getComputedStyle(l).display !== 'none'; })()`) {
		t.Errorf("the connection label is not visible on a phone: %q", eval[string](p, `document.querySelector('#conn .conn-label').textContent`))
	}

	// A second conversation, so that there is one to choose.
	p.do("open the drawer", chromedp.Click(chromedp.ID("menu")))
	p.waitFor("the drawer", drawerOpen)
	p.do("new session", chromedp.Click(chromedp.ID("new-session")))
	p.waitFor("the drawer closed by the new session", drawerClosed)
	second := eval[string](p, `location.hash`)
	if second == first {
		t.Fatalf("no new conversation: %s", second)
	}
	p.waitFor("the greeting", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes("I'm Reverie"))`)

	// Escape closes it.
	p.do("open the drawer", chromedp.Click(chromedp.ID("menu")))
	p.waitFor("the drawer", drawerOpen)
	p.do("press Escape", chromedp.KeyEvent(kb.Escape))
	p.waitFor("closed by Escape", drawerClosed)
	if h := eval[string](p, `location.hash`); h != second {
		t.Errorf("Escape changed the conversation: %s, want %s", h, second)
	}

	// Back closes it and stays in the conversation.
	p.do("open the drawer", chromedp.Click(chromedp.ID("menu")))
	p.waitFor("the drawer", drawerOpen)
	eval[bool](p, `history.back(), true`)
	p.waitFor("closed by back", drawerClosed)
	if h := eval[string](p, `location.hash`); h != second {
		t.Errorf("back with the drawer open left the conversation: %s, want %s", h, second)
	}
	// Forward does not reopen it over the composer.
	eval[bool](p, `history.forward(), true`)
	p.waitFor("forward done", `location.hash === `+js(second)+` && history.state && history.state.drawer`)
	evalAwait(p, `new Promise(r => requestAnimationFrame(() => r(true)))`)
	if !eval[bool](p, drawerClosed) {
		t.Error("forward reopened the drawer")
	}

	// Choosing the first conversation closes the drawer; back returns to
	// the second, with the drawer closed.
	p.do("open the drawer", chromedp.Click(chromedp.ID("menu")))
	p.waitFor("the drawer", drawerOpen)
	p.waitFor("the first conversation listed", `!!document.querySelector('#threads a[href="`+first+`"]')`)
	p.do("choose the first conversation", chromedp.Click(chromedp.CSS(`#threads a[href="`+first+`"]`)))
	p.waitFor("the first conversation", drawerClosed+` && location.hash === `+js(first))
	eval[bool](p, `history.back(), true`)
	p.waitFor("back to the second", drawerClosed+` && location.hash === `+js(second)+` && document.querySelector('#threads a.active')?.getAttribute('href') === `+js(second))

	// Focusing the composer closes it.
	p.do("open the drawer", chromedp.Click(chromedp.ID("menu")))
	p.waitFor("the drawer", drawerOpen)
	p.do("focus the composer", chromedp.Focus(chromedp.ID("input")))
	p.waitFor("closed by the composer", drawerClosed)
	if !eval[bool](p, `(() => { const r = document.getElementById('input').getBoundingClientRect(); const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); return e && e.id === 'input'; })()`) {
		t.Error("something covers the composer")
	}

	// A tab is a fragment navigation: its view loads once.
	p.do("open the setup tab", chromedp.Click(chromedp.ID("tab-setup")))
	p.waitFor("the setup screen", `!document.getElementById('view-setup').hidden && !!document.getElementById('sign-out')`)
	if n := eval[int](p, `performance.getEntriesByType('resource').filter(e => e.name.endsWith('/api/v1/setup')).length`); n != 1 {
		t.Errorf("the setup screen was loaded %d times by one click, want 1", n)
	}
	// Back after a pushState (the new session) still works.
	eval[bool](p, `history.back(), true`)
	p.waitFor("the chat", `!document.getElementById('view-chat').hidden && location.hash === `+js(second))
	p.checkProblems()
}

// evalAwait evaluates a JavaScript expression whose value is a promise and
// waits for it.
func evalAwait(p *browserPage, expr string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise)); err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
}
