package apptest

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// TestBrowserThinking: a model that streams its reasoning (Ollama's /v1
// "reasoning" field) shows it folded above the reply while it thinks, the
// reply below it, and the same fold after a reload (the thinking is stored
// with the message); it is never part of the reply's text.
func TestBrowserThinking(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "thinking", 1280, 900)
	gate := make(chan struct{})
	var once atomic.Bool
	asked := make(chan struct{}, 1)
	const thought = "The user asks for the answer. Deep7 thought says forty-two."
	app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		if strings.Contains(lastUser(req), "ponder") && once.CompareAndSwap(false, true) {
			select {
			case asked <- struct{}{}:
			default:
			}
			return llmtest.ServerReply{Thinking: thought, ThinkingField: "reasoning", ThinkingGate: gate, Text: "The answer is **42**.", Chunks: 4}
		}
		return webAssistant(req)
	})
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the chat view", `!document.getElementById('view-chat').hidden && document.getElementById('conn').dataset.state === 'online'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "please ponder the answer"), chromedp.Click(chromedp.ID("send")))
	select {
	case <-asked:
	case <-time.After(patience):
		t.Fatal("the model was not asked")
	}

	// Live: folded, labelled as thinking, the reasoning inside.
	p.waitFor("the live fold", `(() => { const d = document.querySelector('.msg.assistant.streaming details.thinking.live');
		return !!d && !d.open && d.querySelector('summary').textContent.startsWith('Thinking') && d.textContent.includes('Deep7'); })()`)
	if eval[bool](p, `document.body.textContent.includes('The answer is')`) {
		t.Error("the reply showed before the model wrote it")
	}
	p.snapshot("thinking-live")
	close(gate)

	// Done: the fold above the reply, the reply without the reasoning.
	const done = `(() => { const m = [...document.querySelectorAll('.msg.assistant')].find(m => m.querySelector('details.thinking'));
		if (!m || m.classList.contains('streaming')) return false;
		const d = m.querySelector('details.thinking'), b = m.querySelector('.bubble');
		return d.querySelector('summary').textContent.startsWith('Thought') && !d.classList.contains('live') &&
			b.textContent.includes('The answer is 42.') && !b.textContent.includes('Deep7') &&
			(d.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0; })()`
	p.waitFor("the reply under the fold", done)

	// After a reload: the same, from the stored message.
	p.do("reload", chromedp.Reload())
	p.waitFor("the chat view again", `document.getElementById('conn').dataset.state === 'online'`)
	p.waitFor("the fold after the reload", done)
	p.do("open the fold", chromedp.Click(chromedp.CSS(`details.thinking > summary`)))
	p.waitFor("the reasoning shown", `(() => { const x = document.querySelector('details.thinking[open] .thinking-text');
		return !!x && x.offsetHeight > 0 && x.textContent === `+js(thought)+`; })()`)
	p.snapshot("thinking-open")
	p.checkProblems()
}
