package apptest

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// The Memories page lists what Reverie knows first: facts and preferences,
// not the chat lines every turn stores; those are behind the filter,
// rendered as Markdown with who said them, and "All" puts the facts
// before them.
func TestBrowserMemoriesFactsFirst(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "memories", 1280, 900)
	app.Model.Handle(func(llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "**Lyon** it is. I will remember:\n\n- the train at 9\n- the hotel"}
	})
	app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": "Prefers tea over coffee", "kind": "preference"}, http.StatusCreated, nil)
	// The turn comes after the fact: the episodes are the newest memories.
	app.JSON(t, http.MethodPost, "/threads/web:trip/messages", map[string]string{"text": "Let's book the trip to Lyon"}, http.StatusOK, nil)

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	p.do("open the assistant", chromedp.Click(chromedp.ID("tab-assistant")))
	items := `[...document.querySelectorAll('#mem-list li.as-item')]`
	p.waitFor("the memories", items+`.some(li => li.textContent.includes('Prefers tea'))`)
	if eval[bool](p, items+`.some(li => li.textContent.includes('Lyon'))`) {
		t.Error("the conversation's episodes are listed before choosing them")
	}

	choose := func(v string) {
		t.Helper()
		eval[bool](p, `(() => { const s = document.getElementById('mem-show'); s.value = '`+v+`'; return s.dispatchEvent(new Event('change')); })()`)
	}
	choose("episodes")
	reply := items + `.find(li => li.textContent.includes('the train at 9'))`
	p.waitFor("the episodes", reply+` && `+items+`.some(li => li.textContent.includes("Let's book the trip"))`)
	if eval[bool](p, items+`.some(li => li.textContent.includes('Prefers tea'))`) {
		t.Error("a fact is listed among the episodes")
	}
	if !eval[bool](p, reply+`.querySelector('.as-text strong')?.textContent === 'Lyon' && `+reply+`.querySelectorAll('.as-text li').length === 2`) {
		t.Error("the reply is not rendered as Markdown")
	}
	if !eval[bool](p, reply+`.querySelector('.as-speaker')?.textContent === 'Reverie'`) {
		t.Error("the reply does not say who said it")
	}

	choose("all")
	p.waitFor("everything", items+`.length === 3`)
	if !eval[bool](p, items+`[0].textContent.includes('Prefers tea')`) {
		t.Error("the fact is not listed first under All")
	}
}
