package apptest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// TestBrowserApproveButton: the injected exfil fetch shows an approval card
// on the page (again after a reload); nothing leaves before the user
// clicks Approve; after the click the call runs and the reply arrives.
func TestBrowserApproveButton(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app, in := startInjection(t)
	p := newBrowser(t, browserPath, "approval", 1200, 800)
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the chat view", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "please summarise "+in.page.URL+"/recipes"), chromedp.Click(chromedp.ID("send")))
	const card = `document.querySelector('.msg.approval button[data-answer="approve"]')`
	p.waitFor("the approval card", card+` !== null`)
	text := eval[string](p, `document.querySelector('.msg.approval').textContent`)
	if !strings.Contains(text, "fetch_url") || !strings.Contains(text, "127.0.0.2") {
		t.Errorf("approval card = %q", text)
	}
	if n := in.exfilHits.Load(); n != 0 {
		t.Fatalf("the exfil host was contacted %d times before the click", n)
	}

	// A reload (or a page opened later) shows the waiting request again.
	p.do("reload", chromedp.Reload())
	p.waitFor("the chat view again", `document.getElementById('conn').dataset.state === 'online'`)
	p.waitFor("the approval card after the reload", card+` !== null && document.querySelectorAll('.msg.approval').length === 1`)

	p.do("approve", chromedp.Click(chromedp.CSS(`.msg.approval button[data-answer="approve"]`)))
	p.waitFor("the outcome", `document.querySelector('.msg.approval [data-state="approved"]') !== null`)
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some((e) => e.textContent.includes('thanks'))`)
	if n := in.exfilHits.Load(); n != 1 {
		t.Errorf("the approved fetch ran %d times", n)
	}
	p.checkProblems()
}

// TestBrowserApprovalNeedsTheTokenWithAuthNone: with web.auth: none the page
// chats without signing in, but Approve asks for the token (any local
// process could otherwise approve the assistant's held calls); nothing
// leaves before that; once signed in, Approve works.
func TestBrowserApprovalNeedsTheTokenWithAuthNone(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app, in := startInjection(t, WithEnv("REVERIE_WEB__AUTH=none"))
	p := newBrowser(t, browserPath, "approval-none", 1200, 800)
	p.allow("status of 401") // the answer refused without the token, logged by the browser
	p.do("load the page without a token", chromedp.Navigate(app.Base+"/"))
	p.waitFor("the chat view", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "please summarise "+in.page.URL+"/recipes"), chromedp.Click(chromedp.ID("send")))
	const approve = `.msg.approval button[data-answer="approve"]`
	p.waitFor("the approval card", `document.querySelector('`+approve+`') !== null`)
	p.do("approve without the token", chromedp.Click(chromedp.CSS(approve)))
	p.waitFor("the request for the token", `!document.getElementById('view-login').hidden && document.getElementById('login-error').textContent.includes('answering an approval request')`)
	if n := in.exfilHits.Load(); n != 0 {
		t.Fatalf("the exfil host was contacted %d times without the token", n)
	}
	p.do("sign in", chromedp.SetValue(chromedp.ID("login-token"), WebToken), chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
	p.waitFor("signed in", `document.getElementById('view-login').hidden`)
	p.do("back to the chat", chromedp.Navigate(app.Base+"/"))
	p.waitFor("the card, answerable again", `document.querySelector('`+approve+`') !== null && !document.querySelector('`+approve+`').disabled`)
	p.do("approve with the token", chromedp.Click(chromedp.CSS(approve)))
	p.waitFor("the outcome", `document.querySelector('.msg.approval [data-state="approved"]') !== null`)
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some((e) => e.textContent.includes('thanks'))`)
	if n := in.exfilHits.Load(); n != 1 {
		t.Errorf("the approved fetch ran %d times", n)
	}
	p.checkProblems()
}
