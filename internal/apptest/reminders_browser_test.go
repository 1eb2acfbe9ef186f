package apptest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// A reminder made on the web page (Assistant → Reminders & tasks, "once in")
// reminds: when due it arrives in the conversation that was open, on the
// page, as "Reminder: …", with no model call; its receipt says where it
// went, and it stays listed as delivered, with when and where.
func TestBrowserReminderFromThePageReminds(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "reminder", 1280, 900)

	app.JSON(t, http.MethodPost, "/threads/web:plants/messages", map[string]string{"text": "I have to water the plants"}, http.StatusOK, nil)
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.do("open the conversation", chromedp.Navigate(app.Base+"/#chat/web:plants"))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online' && document.querySelectorAll('#messages .msg').length >= 2`)
	requests := len(app.Model.ChatRequests())

	p.do("open the tasks", chromedp.Click(chromedp.ID("tab-assistant")), chromedp.Click(chromedp.ID("as-tasks")))
	p.waitFor("the task form", `!!document.getElementById('task-text')`)
	if hint := eval[string](p, `document.getElementById('task-kind-hint').textContent`); !strings.Contains(hint, "no model call") || !strings.Contains(hint, "To “") {
		t.Errorf("the reminder kind's hint: %q", hint)
	}
	p.do("choose AI task", chromedp.SetValue(chromedp.ID("task-kind"), "ai"))
	eval[bool](p, `document.getElementById('task-kind').dispatchEvent(new Event('change')), true`)
	if hint := eval[string](p, `document.getElementById('task-kind-hint').textContent`); !strings.Contains(hint, "prompt with the model") {
		t.Errorf("the AI task kind's hint: %q", hint)
	}
	p.do("choose reminder", chromedp.SetValue(chromedp.ID("task-kind"), "reminder"))
	eval[bool](p, `document.getElementById('task-kind').dispatchEvent(new Event('change')), true`)
	p.do("choose once in", chromedp.SetValue(chromedp.ID("task-schedule"), "in"))
	eval[bool](p, `document.getElementById('task-schedule').dispatchEvent(new Event('change')), true`)
	p.do("fill in", chromedp.SendKeys(chromedp.ID("task-text"), "Water the plants"), chromedp.SendKeys(chromedp.ID("task-in"), "2s"),
		chromedp.Click(chromedp.CSS("#task-add button[type=submit]")))
	task := `document.querySelector('#task-list li.as-item[data-kind="reminder"]')`
	p.waitFor("the reminder", task+`?.textContent.includes('Water the plants') && `+task+`.textContent.includes('sent as is, no model')`)
	var tasks api.TaskList
	app.JSON(t, http.MethodGet, "/tasks", nil, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].Kind != api.TaskReminder || tasks.Tasks[0].Thread != "web:plants" {
		t.Fatalf("tasks = %+v", tasks.Tasks)
	}
	id := tasks.Tasks[0].ID

	// It arrives in the conversation, on the page.
	p.do("back to the chat", chromedp.Click(chromedp.ID("tab-chat")))
	p.waitFor("the reminder in the chat", `[...document.querySelectorAll('#messages .msg.notify')].some(m => m.textContent.includes('Reminder: Water the plants'))`)
	var msgs api.MessageList
	app.JSON(t, http.MethodGet, "/threads/web:plants/messages", nil, http.StatusOK, &msgs)
	if last := msgs.Messages[len(msgs.Messages)-1]; last.Text != "Reminder: Water the plants" {
		t.Errorf("the conversation's last message: %+v", last)
	}
	if got := len(app.Model.ChatRequests()); got != requests {
		t.Errorf("the reminder made %d model requests, want none", got-requests)
	}
	var rs api.ReceiptList
	app.JSON(t, http.MethodGet, "/receipts?task="+id, nil, http.StatusOK, &rs)
	if len(rs.Receipts) != 1 || rs.Receipts[0].Outcome != "fired" || rs.Receipts[0].DeliveredTo != "web:plants" {
		t.Errorf("receipts = %+v", rs.Receipts)
	}

	// It stays listed, delivered, with when and where.
	p.do("open the tasks again", chromedp.Click(chromedp.ID("tab-assistant")), chromedp.Click(chromedp.ID("as-tasks")))
	p.waitFor("delivered", task+`?.dataset.status === 'done' && `+task+`.querySelector('.as-next').textContent.startsWith('Delivered ') && `+
		task+`.querySelector('.as-next').textContent.includes('(web page)')`)
	p.snapshot("reminder-delivered")
	p.checkProblems()
}
