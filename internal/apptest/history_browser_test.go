package apptest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// TestBrowserHistoryRestore opens the debug panel's History view on the
// running app, opens a change to see its diff, restores it (two clicks) and
// sees the "restore …" change appear; the restored memory is back in the
// store. A restore made by another client refreshes the list by itself
// (history.restored event). Then the view is checked at a phone's width.
func TestBrowserHistoryRestore(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	p := newBrowser(t, browserPath, "history", 1280, 900)

	// Two changes: a memory remembered (kept in MEMORIES.txt), then
	// forgotten.
	const text = "Anna is my sister; she lives in Lyon."
	var mem api.Memory
	app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": text, "kind": "fact"}, http.StatusCreated, &mem)
	var list api.RevisionList
	app.JSON(t, http.MethodGet, "/history?limit=1", nil, http.StatusOK, &list)
	if len(list.Revisions) != 1 || !strings.HasPrefix(list.Revisions[0].Message, "memory: remember") {
		t.Fatalf("history after remembering: %+v", list)
	}
	target := list.Revisions[0]
	app.JSON(t, http.MethodDelete, "/memories/"+strconv.FormatInt(mem.ID, 10), nil, http.StatusNoContent, nil)
	app.JSON(t, http.MethodGet, "/history?limit=1", nil, http.StatusOK, &list)
	forgot := list.Revisions[0]
	if forgot.Hash == target.Hash {
		t.Fatalf("forgetting recorded no change: %+v", list)
	}
	var found api.MemoryList
	app.JSON(t, http.MethodGet, "/memories?q="+url.QueryEscape("Anna sister"), nil, http.StatusOK, &found)
	if hasMemory(found, text) {
		t.Fatalf("the forgotten memory is still found: %+v", found)
	}

	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online'`)
	p.do("open the history", chromedp.Navigate(app.Base+"/#debug/history"))
	p.waitFor("the list", `document.getElementById('debug-body').dataset.section === 'history' && document.querySelectorAll('#hist-list details.hist').length >= 3`)
	top := eval[string](p, `document.querySelector('#hist-list details.hist .hist-subject').textContent`)
	if !strings.HasPrefix(top, "memory: forget") {
		t.Errorf("newest change shown: %q", top)
	}
	if !eval[bool](p, `!!document.querySelector('#hist-list details.hist .pill.ok')`) {
		t.Error("the newest change is not marked current")
	}

	// Open the change that remembered the memory: its diff, + lines coloured.
	item := `#hist-list details.hist[data-short="` + target.Short + `"]`
	p.do("open the change", chromedp.Click(chromedp.CSS(item+" > summary")))
	p.waitFor("the diff", `[...document.querySelectorAll('`+item+` pre.diff .d-add')].some(l => l.textContent === '+' + `+js(text)+`)`)
	if !eval[bool](p, `(() => { const l = document.querySelector('`+item+` pre.diff .d-add'); return getComputedStyle(l).backgroundColor !== getComputedStyle(l.parentElement).backgroundColor; })()`) {
		t.Error("added lines are not coloured")
	}
	if !eval[bool](p, `[...document.querySelectorAll('`+item+` pre.diff .d-file')].some(l => l.textContent.startsWith('+++ b/MEMORIES.txt'))`) {
		t.Error("the diff names no file")
	}
	p.snapshot("history-diff")

	// Restore it: the first click asks, the second restores.
	button := item + " .hist-actions button"
	p.do("ask to restore", chromedp.Click(chromedp.CSS(button)))
	p.waitFor("the confirmation", `document.querySelector('`+button+`')?.textContent.includes('Click again')`)
	p.do("confirm", chromedp.Click(chromedp.CSS(button)))
	p.waitFor("the restore change", `document.querySelector('#hist-list details.hist .hist-subject')?.textContent === 'restore `+target.Short+`'`)
	p.snapshot("history-restored")
	app.JSON(t, http.MethodGet, "/memories?q="+url.QueryEscape("Anna sister"), nil, http.StatusOK, &found)
	if !hasMemory(found, text) {
		t.Errorf("the restored memory is not found: %+v", found)
	}

	// A restore by another client: the list refreshes on its event.
	var res api.RestoreResult
	app.JSON(t, http.MethodPost, "/history/"+forgot.Short+"/restore", nil, http.StatusOK, &res)
	if res.Revision == nil {
		t.Fatalf("restore of %s: %+v", forgot.Short, res)
	}
	p.waitFor("the list refreshed by the event", `document.querySelector('#hist-list details.hist')?.dataset.short === `+js(res.Revision.Short))

	// At a phone's width the view fits, and an open change's restore
	// button is reachable.
	p.do("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch))
	p.do("reload the history", chromedp.Navigate(app.Base+"/#debug/history"), chromedp.Reload())
	p.waitFor("the list on the phone", `document.querySelectorAll('#hist-list details.hist').length >= 5`)
	item = `#hist-list details.hist[data-short="` + target.Short + `"]`
	p.do("open the change on the phone", chromedp.Click(chromedp.CSS(item+" > summary")))
	p.waitFor("the diff on the phone", `!!document.querySelector('`+item+` pre.diff .d-add')`)
	p.do("scroll to the button", chromedp.ScrollIntoView(chromedp.CSS(item+" .hist-actions button")))
	if !eval[bool](p, `document.documentElement.scrollWidth <= window.innerWidth`) {
		t.Errorf("the history view is wider than the phone: %d > %d", eval[int](p, `document.documentElement.scrollWidth`), eval[int](p, `window.innerWidth`))
	}
	if !eval[bool](p, `(() => { const r = document.querySelector('`+item+` .hist-actions button').getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; })()`) {
		t.Error("the restore button is not within the phone's width")
	}
	if !eval[bool](p, `(() => { const d = document.querySelector('`+item+` pre.diff'); return d.getBoundingClientRect().right <= window.innerWidth; })()`) {
		t.Error("the diff is wider than the phone")
	}
	p.snapshot("history-phone")
	p.checkProblems()
}

func hasMemory(l api.MemoryList, text string) bool {
	for _, m := range l.Memories {
		if m.Text == text && m.ValidTo == nil {
			return true
		}
	}
	return false
}
