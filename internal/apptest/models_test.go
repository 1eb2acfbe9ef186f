package apptest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// startTwoModels starts the web app with two backends on one fake server:
// main uses gpt-small (8k tokens), the scout role gpt-big (200k tokens,
// images). The server answers with the model's name and a usage.
func startTwoModels(t *testing.T) (*WebHarness, *llmtest.OpenAIServer) {
	t.Helper()
	srv := llmtest.NewOpenAIServer(t)
	srv.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "answered by " + req.Model, Usage: llm.Usage{InputTokens: 1200, OutputTokens: 30}}
	})
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `models:
  backends:
    fake:
      kind: openai
      base_url: "` + srv.BaseURL() + `"
      api_key: {env: OPENAI_API_KEY}
      context_size: 8000
      max_tokens: 500
    fakebig:
      kind: openai
      base_url: "` + srv.BaseURL() + `"
      api_key: {env: OPENAI_API_KEY}
      context_size: 200000
      max_tokens: 8000
      vision: true
  roles:
    main: [fake/gpt-small]
    scout: [fakebig/gpt-big]
`
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return startWebApp(t, "127.0.0.1:0", WithDataDir(dir)), srv
}

// The model picker's API: GET /models lists the backends and the roles;
// a conversation's model is chosen with PUT /threads/{thread}/model,
// stored, and used for its replies (not for other conversations); its
// token use and context window are reported; an unknown backend is 400.
func TestWebModelPerConversation(t *testing.T) {
	app, _ := startTwoModels(t)
	var list api.ModelList
	app.JSON(t, http.MethodGet, "/models", nil, http.StatusOK, &list)
	if len(list.Backends) != 2 || list.Backends[0].Name != "fake/gpt-small" || list.Backends[0].ContextSize != 8000 ||
		list.Backends[1].Name != "fakebig/gpt-big" || !list.Backends[1].Vision || list.Backends[0].Vision {
		t.Fatalf("backends = %+v", list.Backends)
	}
	roles := map[string]api.ModelRole{}
	for _, r := range list.Roles {
		roles[r.Role] = r
	}
	if r := roles["main"]; len(r.Backends) != 1 || r.Backends[0] != "fake/gpt-small" || r.FallsBackTo != "" {
		t.Errorf("main = %+v", r)
	}
	if r := roles["compaction"]; r.FallsBackTo != "main" || len(r.Backends) != 1 {
		t.Errorf("compaction = %+v", r)
	}

	var tm api.ThreadModel
	app.JSON(t, http.MethodGet, "/threads/web:a/model", nil, http.StatusOK, &tm)
	if tm.Backend != "" || tm.Effective == nil || tm.Effective.Name != "fake/gpt-small" || tm.ContextTokens != 0 {
		t.Fatalf("a new conversation's model = %+v", tm)
	}
	if code, body := app.Do(t, http.MethodPut, "/threads/web:a/model", map[string]string{"backend": "nope"}); code != http.StatusBadRequest || !strings.Contains(string(body), "nope") {
		t.Errorf("unknown backend: %d %s", code, body)
	}
	app.JSON(t, http.MethodPut, "/threads/web:a/model", map[string]string{"backend": "fakebig/gpt-big"}, http.StatusOK, &tm)
	if tm.Backend != "fakebig/gpt-big" || tm.Effective == nil || tm.Effective.ContextSize != 200000 || !tm.Effective.Vision {
		t.Fatalf("after choosing: %+v", tm)
	}
	var reply api.Reply
	app.JSON(t, http.MethodPost, "/threads/web:a/messages", map[string]string{"text": "hi"}, http.StatusOK, &reply)
	if !strings.Contains(reply.Reply, "gpt-big") {
		t.Errorf("the chosen model did not answer: %q", reply.Reply)
	}
	app.JSON(t, http.MethodPost, "/threads/web:b/messages", map[string]string{"text": "hi"}, http.StatusOK, &reply)
	if !strings.Contains(reply.Reply, "gpt-small") {
		t.Errorf("another conversation did not keep the default: %q", reply.Reply)
	}
	app.JSON(t, http.MethodGet, "/threads/web:a/model", nil, http.StatusOK, &tm)
	if tm.ContextTokens != 1200 || tm.InputTokens < 1200 || tm.OutputTokens < 30 || tm.Calls < 1 {
		t.Errorf("token use of web:a = %+v", tm)
	}
	// Back to the default.
	app.JSON(t, http.MethodPut, "/threads/web:a/model", map[string]string{"backend": ""}, http.StatusOK, &tm)
	if tm.Backend != "" || tm.Effective.Name != "fake/gpt-small" {
		t.Errorf("after clearing: %+v", tm)
	}
}

// TestBrowserModelPicker: the bar above the composer shows the default
// model, and the roles and the context meter folded until "Details" shows
// them (remembered across reloads); choosing another model for the
// conversation makes it answer, the choice survives a reload, and the
// context meter shows the conversation's tokens against the chosen model's
// window.
func TestBrowserModelPicker(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app, _ := startTwoModels(t)
	p := newBrowser(t, browserPath, "model-picker", 1280, 900)
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("the picker", `document.getElementById('conn').dataset.state === 'online' && document.getElementById('model-select')?.options.length === 3 && !document.getElementById('model-select').disabled`)
	if got := eval[string](p, `document.getElementById('model-select').selectedOptions[0].textContent`); !strings.Contains(got, "Default") || !strings.Contains(got, "fake/gpt-small") {
		t.Errorf("default option = %q", got)
	}
	if !eval[bool](p, `document.querySelector('#model-roles tr[data-role="scout"]')?.textContent.includes('fakebig/gpt-big')`) {
		t.Error("the roles table does not show the scout's model")
	}
	// The roles and the meter are folded until asked for; the choice is
	// remembered across a reload.
	const shown = `(() => { const r = document.getElementById('model-roles').getBoundingClientRect(), m = document.getElementById('model-usage').getBoundingClientRect(); return r.width > 0 && m.width > 0; })()`
	if eval[bool](p, shown) || eval[string](p, `document.getElementById('model-more').getAttribute('aria-expanded')`) != "false" {
		t.Error("the roles and the token meter are shown before being asked for")
	}
	p.click("show the details", `#model-more`)
	p.waitFor("the roles and the meter", shown+` && document.getElementById('model-more').getAttribute('aria-expanded') === 'true'`)
	p.do("choose the big model", chromedp.SetValue(chromedp.ID("model-select"), "fakebig/gpt-big"))
	eval[bool](p, `document.getElementById('model-select').dispatchEvent(new Event('change')), true`)
	p.waitFor("saved", `[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('fakebig/gpt-big'))`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "hello"), chromedp.Click(chromedp.ID("send")))
	p.waitFor("the big model's reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('answered by gpt-big'))`)
	p.waitFor("the context meter", `document.getElementById('model-usage-text').textContent.startsWith('1.2k / 200k tokens')`)
	p.do("reload", chromedp.Reload())
	p.waitFor("the choice after the reload", `document.getElementById('model-select')?.value === 'fakebig/gpt-big' && document.getElementById('model-usage-text').textContent.startsWith('1.2k / 200k')`)
	if !eval[bool](p, shown) {
		t.Error("the details unfolded before the reload are folded after it")
	}
	if v := eval[float64](p, `document.getElementById('model-meter').value`); v != 1200 {
		t.Errorf("meter value %v", v)
	}
	p.snapshot("model-picker")
	p.click("fold the details", `#model-more`)
	p.waitFor("folded", `!(`+shown+`) && document.getElementById('model-more').textContent === 'Details'`)
	p.do("reload", chromedp.Reload())
	p.waitFor("the picker after the reload", `document.getElementById('model-select')?.value === 'fakebig/gpt-big'`)
	if eval[bool](p, shown) {
		t.Error("the details folded before the reload are shown after it")
	}
	p.checkProblems()
}
