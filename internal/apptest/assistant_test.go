package apptest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// The endpoints the "Your assistant" pages add: a memory's earlier
// versions (newest first, 404 for an unknown memory), the dream reports,
// and reverting a dream (once: 409 the second time, 404 for an unknown
// one).
func TestWebAssistantEndpoints(t *testing.T) {
	app := startWebApp(t, "127.0.0.1:0")
	var m api.Memory
	app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": "Lives in Paris", "kind": "fact"}, http.StatusCreated, &m)
	first := m.ID
	app.JSON(t, http.MethodPut, "/memories/"+strconv.FormatInt(m.ID, 10), map[string]string{"text": "Lives in Lyon", "kind": "fact"}, http.StatusOK, &m)
	app.JSON(t, http.MethodPut, "/memories/"+strconv.FormatInt(m.ID, 10), map[string]string{"text": "Lives in Lyon, near the Saône", "kind": "fact"}, http.StatusOK, &m)
	var hist api.MemoryList
	app.JSON(t, http.MethodGet, "/memories/"+strconv.FormatInt(m.ID, 10)+"/history", nil, http.StatusOK, &hist)
	if len(hist.Memories) != 2 || hist.Memories[0].Text != "Lives in Lyon" || hist.Memories[1].Text != "Lives in Paris" ||
		hist.Memories[1].ID != first || hist.Memories[0].ValidTo == nil || hist.Memories[0].SupersededBy != m.ID {
		t.Fatalf("history = %+v", hist.Memories)
	}
	app.JSON(t, http.MethodGet, "/memories/"+strconv.FormatInt(first, 10)+"/history", nil, http.StatusOK, &hist)
	if len(hist.Memories) != 0 {
		t.Errorf("the first version has earlier versions: %+v", hist.Memories)
	}
	if code, _ := app.Do(t, http.MethodGet, "/memories/999999/history", nil); code != http.StatusNotFound {
		t.Errorf("history of an unknown memory: %d", code)
	}

	var dreams api.DreamList
	app.JSON(t, http.MethodGet, "/dreams", nil, http.StatusOK, &dreams)
	if len(dreams.Dreams) != 0 {
		t.Fatalf("dreams before any: %+v", dreams)
	}
	var reply api.Reply
	app.JSON(t, http.MethodPost, "/threads/web:d/messages", map[string]string{"text": "/dream"}, http.StatusOK, &reply)
	app.JSON(t, http.MethodGet, "/dreams?limit=5", nil, http.StatusOK, &dreams)
	if len(dreams.Dreams) != 1 || dreams.Dreams[0].Trigger != "command" || len(dreams.Dreams[0].Components) == 0 || dreams.Dreams[0].Reverted {
		t.Fatalf("dreams = %+v", dreams)
	}
	id := strconv.FormatInt(dreams.Dreams[0].ID, 10)
	var rev api.DreamRevert
	app.JSON(t, http.MethodPost, "/dreams/"+id+"/revert", map[string]any{}, http.StatusOK, &rev)
	if rev.ID != dreams.Dreams[0].ID || rev.Undone != dreams.Dreams[0].Changes {
		t.Errorf("revert = %+v, the report counted %d change(s)", rev, dreams.Dreams[0].Changes)
	}
	if code, _ := app.Do(t, http.MethodPost, "/dreams/"+id+"/revert", map[string]any{}); code != http.StatusConflict {
		t.Errorf("second revert: %d, want 409", code)
	}
	if code, _ := app.Do(t, http.MethodPost, "/dreams/424242/revert", map[string]any{}); code != http.StatusNotFound {
		t.Errorf("revert of an unknown dream: %d, want 404", code)
	}
	app.JSON(t, http.MethodGet, "/dreams", nil, http.StatusOK, &dreams)
	if !dreams.Dreams[0].Reverted {
		t.Errorf("not marked reverted: %+v", dreams.Dreams[0])
	}
}

// TestBrowserAssistantPages drives the "Your assistant" pages on the real
// app: memories (search, history, edit, forget), the pulse (add, done),
// reminders (create, pause, last runs, delete), skills (open, edit) and
// dreams (report, revert); each change reaches the store.
func TestBrowserAssistantPages(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "assistant", 1280, 900)

	var m api.Memory
	app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": "Prefers tea over coffee", "kind": "preference"}, http.StatusCreated, nil)
	app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": "Anna lives in Paris", "kind": "fact"}, http.StatusCreated, &m)
	app.JSON(t, http.MethodPut, "/memories/"+strconv.FormatInt(m.ID, 10), map[string]string{"text": "Anna lives in Lyon", "kind": "fact"}, http.StatusOK, &m)
	app.JSON(t, http.MethodPut, "/skills/book-train", map[string]string{"content": "How to book a train\n1. open the site"}, http.StatusOK, nil)
	app.JSON(t, http.MethodPost, "/threads/web:d/messages", map[string]string{"text": "/dream"}, http.StatusOK, nil)

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	// The page shows a conversation once its list has loaded (the hash
	// becomes #chat/<id>); a reminder created below goes to it. Opened
	// before that, the form rightly says "the conversation you wrote in
	// last" and the task has no thread.
	p.waitFor("a conversation shown", `location.hash.startsWith('#chat/')`)
	p.do("open the assistant", chromedp.Click(chromedp.ID("tab-assistant")))
	item := `document.querySelector('#mem-list li[data-id="` + strconv.FormatInt(m.ID, 10) + `"]')`
	p.waitFor("the memories", item+`?.textContent.includes('Anna lives in Lyon')`)
	if eval[bool](p, `document.getElementById('tab-debug').getAttribute('aria-current') === 'page'`) {
		t.Error("the assistant pages are under Debug")
	}

	// Search: the best match first (the list is newest first).
	if !eval[bool](p, `document.querySelector('#mem-list li.as-item').textContent.includes('Anna')`) {
		t.Error("the list is not newest first")
	}
	p.do("search", chromedp.SendKeys(chromedp.ID("mem-search"), "tea coffee"))
	p.waitFor("the search result", `document.querySelector('#mem-list li.as-item')?.textContent.includes('Prefers tea')`)
	eval[bool](p, `(() => { const e = document.getElementById('mem-search'); e.value = ''; return e.dispatchEvent(new Event('input')); })()`)
	p.waitFor("all memories", `document.querySelector('#mem-list li.as-item')?.textContent.includes('Anna')`)

	// History of the edited memory.
	p.do("open its history", chromedp.Click(chromedp.CSS(`#mem-list li[data-id="`+strconv.FormatInt(m.ID, 10)+`"] .as-history summary`)))
	p.waitFor("the earlier version", item+`.querySelector('.as-versions .as-old')?.textContent === 'Anna lives in Paris'`)

	// Edit.
	p.do("edit", chromedp.Click(chromedp.CSS(`#mem-list li[data-id="`+strconv.FormatInt(m.ID, 10)+`"] .as-actions button`)))
	p.waitFor("the editor", item+`?.querySelector('textarea.as-edit')`)
	p.do("change the text", chromedp.SetValue(chromedp.CSS(`#mem-list li[data-id="`+strconv.FormatInt(m.ID, 10)+`"] textarea.as-edit`), "Anna lives in Lyon with Marc"))
	eval[bool](p, `[...`+item+`.querySelectorAll('button')].find(b => b.textContent === 'Save').click(), true`)
	p.waitFor("the new text", `[...document.querySelectorAll('#mem-list li.as-item')].some(li => li.textContent.includes('Anna lives in Lyon with Marc'))`)
	var found api.MemoryList
	app.JSON(t, http.MethodGet, "/memories?limit=50", nil, http.StatusOK, &found)
	if !hasMemory(found, "Anna lives in Lyon with Marc") {
		t.Fatalf("the edit did not reach the store: %+v", found)
	}
	// Forget (two clicks).
	forget := `[...document.querySelectorAll('#mem-list li.as-item')].find(li => li.textContent.includes('Prefers tea')).querySelector('button.danger')`
	eval[bool](p, forget+`.click(), true`)
	p.waitFor("the question", forget+`.textContent.includes('Click again')`)
	eval[bool](p, forget+`.click(), true`)
	p.waitFor("forgotten", `![...document.querySelectorAll('#mem-list li.as-item')].some(li => li.textContent.includes('Prefers tea'))`)
	app.JSON(t, http.MethodGet, "/memories?limit=50", nil, http.StatusOK, &found)
	if hasMemory(found, "Prefers tea over coffee") {
		t.Error("the forgotten memory is still in the store")
	}

	// Pulse: add, then done.
	p.do("open the pulse", chromedp.Click(chromedp.ID("as-pulse")))
	p.waitFor("the pulse form", `!!document.getElementById('pulse-new')`)
	p.do("add an item", chromedp.SendKeys(chromedp.ID("pulse-new"), "Plan the trip to Lyon"), chromedp.Click(chromedp.CSS("#pulse-add button[type=submit]")))
	p.waitFor("the item", `[...document.querySelectorAll('#pulse-list li.as-item')].some(li => li.textContent.includes('Plan the trip'))`)
	eval[bool](p, `[...document.querySelector('#pulse-list li.as-item').querySelectorAll('button')].find(b => b.textContent === 'Done').click(), true`)
	p.waitFor("done", `!document.querySelector('#pulse-list li.as-item') || !document.querySelector('#pulse-list').textContent.includes('Plan the trip')`)
	var pulse api.PulseList
	app.JSON(t, http.MethodGet, "/pulse?status=completed", nil, http.StatusOK, &pulse)
	if len(pulse.Items) != 1 || pulse.Items[0].Text != "Plan the trip to Lyon" {
		t.Errorf("completed pulse items = %+v", pulse.Items)
	}

	// Reminders: create a daily one, pause it, see its runs, delete it.
	p.do("open the tasks", chromedp.Click(chromedp.ID("as-tasks")))
	p.waitFor("the task form", `!!document.getElementById('task-text')`)
	p.do("choose daily", chromedp.SetValue(chromedp.ID("task-schedule"), "daily"))
	eval[bool](p, `document.getElementById('task-schedule').dispatchEvent(new Event('change')), true`)
	p.do("fill in", chromedp.SendKeys(chromedp.ID("task-text"), "Water the plants"), chromedp.SetValue(chromedp.ID("task-time"), "08:30"),
		chromedp.Click(chromedp.CSS("#task-add button[type=submit]")))
	task := `[...document.querySelectorAll('#task-list li.as-item')].find(li => li.textContent.includes('Water the plants'))`
	p.waitFor("the reminder with its next run", task+`?.querySelector('.as-next')?.textContent.startsWith('Next:')`)
	var tasks api.TaskList
	app.JSON(t, http.MethodGet, "/tasks", nil, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].Kind != api.TaskReminder || tasks.Tasks[0].Schedule.Time != "08:30" || !strings.HasPrefix(tasks.Tasks[0].Thread, "web:") {
		t.Fatalf("tasks = %+v", tasks.Tasks)
	}
	eval[bool](p, `[...`+task+`.querySelectorAll('button')].find(b => b.textContent === 'Pause').click(), true`)
	p.waitFor("paused", task+`?.dataset.status === 'paused'`)
	p.do("open its runs", chromedp.Click(chromedp.CSS(`#task-list li.as-item .as-receipts summary`)))
	p.waitFor("no runs yet", task+`.querySelector('.as-receipts').textContent.includes('has not run yet')`)
	del := task + `.querySelector('button.danger')`
	eval[bool](p, del+`.click(), true`)
	p.waitFor("the question", del+`.textContent.includes('Click again')`)
	eval[bool](p, del+`.click(), true`)
	p.waitFor("deleted", `!(`+task+`)`)
	app.JSON(t, http.MethodGet, "/tasks?status=all", nil, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].Status != api.TaskCancelled {
		t.Errorf("after delete: %+v", tasks.Tasks)
	}

	// Skills: open, edit, save.
	p.do("open the skills", chromedp.Click(chromedp.ID("as-skills")))
	skill := `document.querySelector('#skill-list li[data-name="book-train"]')`
	p.waitFor("the skill", skill+`?.textContent.includes('book-train')`)
	eval[bool](p, `[...`+skill+`.querySelectorAll('button')].find(b => b.textContent === 'Open').click(), true`)
	p.waitFor("its content", skill+`.querySelector('textarea')?.value.includes('open the site')`)
	p.do("edit it", chromedp.SetValue(chromedp.CSS(`#skill-list li[data-name="book-train"] textarea`), "How to book a train\n1. open the site\n2. pay"))
	eval[bool](p, `[...`+skill+`.querySelectorAll('button')].find(b => b.textContent === 'Save').click(), true`)
	p.waitFor("saved", `[...document.querySelectorAll('.toast')].some(t => t.textContent === 'Saved.')`)
	var sk api.Skill
	app.JSON(t, http.MethodGet, "/skills/book-train", nil, http.StatusOK, &sk)
	if !strings.Contains(sk.Content, "2. pay") {
		t.Errorf("skill content = %q", sk.Content)
	}

	// Dreams: the report, then revert.
	p.do("open the dreams", chromedp.Click(chromedp.ID("as-dreams")))
	dream := `document.querySelector('#dream-list li.as-item')`
	p.waitFor("the report", dream+`?.textContent.includes('Dream #') && `+dream+`.querySelectorAll('.as-components > li').length > 0`)
	rev := dream + `.querySelector('.as-actions button')`
	eval[bool](p, rev+`.click(), true`)
	p.waitFor("the question", rev+`.textContent.includes('Click again')`)
	eval[bool](p, rev+`.click(), true`)
	p.waitFor("reverted", dream+`?.textContent.includes('reverted') && !`+dream+`.querySelector('.as-actions')`)
	p.snapshot("assistant-dreams")

	// At a phone's width the pages fit.
	p.do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	p.do("memories on a phone", chromedp.Click(chromedp.ID("as-memories")))
	p.waitFor("the memories", `document.querySelectorAll('#mem-list li.as-item').length > 0`)
	if !eval[bool](p, `document.documentElement.scrollWidth <= window.innerWidth`) {
		t.Error("the assistant pages overflow a phone's width")
	}
	p.checkProblems()
}
