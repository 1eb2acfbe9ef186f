package apptest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserApproveButton: the injected exfil fetch shows an approval card
// on the page (again after a reload); nothing leaves before the user
// clicks Approve; after the click the call runs and the reply arrives.
func TestBrowserApproveButton(t *testing.T) {
	browserPath := chromium(t)
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
