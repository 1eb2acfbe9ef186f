package apptest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

var updateScreens = flag.Bool("update", false, "rewrite the golden screenshots in testdata/screens")

// The screenshot tests compare each view with a golden image at a desktop
// (1280×900) and a phone (390×844) size. Pixels differ between machines
// (fonts, anti-aliasing: CI runs Debian's Chromium on a fresh machine), so
// the comparison is coarse: both images are reduced to 1/8 of their size
// in grey and their mean difference must stay under screenTolerance (of
// 255) — a moved, missing or covering element fails it, a different font
// does not. Every view is also checked by DOM-layout assertions (boxes
// inside the viewport, not overlapping, not covered), which hold on any
// machine. `go test ./internal/apptest -run TestBrowserScreens -update`
// rewrites the goldens (testdata/screens/*.png, the reduced images).
const (
	screenScale     = 8
	screenTolerance = 14.0
)

// layoutCheck is a JavaScript function body run on the page: it returns
// the layout problems of the view as strings. It gets a spec with the
// selectors that must be fully inside the viewport, pairs that must not
// overlap and elements that must not be covered.
const layoutCheck = `(spec) => {
	const problems = [];
	const vw = window.innerWidth, vh = window.innerHeight;
	if (document.documentElement.scrollWidth > vw + 1) problems.push('the page is wider than the viewport: ' + document.documentElement.scrollWidth + ' > ' + vw);
	const el = (sel) => document.querySelector(sel);
	const box = (sel) => {
		const e = el(sel);
		if (!e) return null;
		const r = e.getBoundingClientRect();
		return r.width > 0 && r.height > 0 ? r : null;
	};
	for (const sel of spec.inside || []) {
		const r = box(sel);
		if (!r) problems.push(sel + ' is not shown');
		else if (r.left < -0.5 || r.top < -0.5 || r.right > vw + 0.5 || r.bottom > vh + 0.5)
			problems.push(sel + ' is not inside the viewport: ' + JSON.stringify([r.left, r.top, r.right, r.bottom]));
	}
	for (const [a, b] of spec.apart || []) {
		const r = box(a), s = box(b);
		if (r && s && r.left < s.right - 0.5 && s.left < r.right - 0.5 && r.top < s.bottom - 0.5 && s.top < r.bottom - 0.5)
			problems.push(a + ' overlaps ' + b);
	}
	for (const sel of spec.uncovered || []) {
		const r = box(sel);
		if (!r) continue;
		const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		if (!hit || !(el(sel) === hit || el(sel).contains(hit))) problems.push(sel + ' is covered by ' + (hit ? hit.tagName + '#' + hit.id + '.' + hit.className : 'nothing'));
	}
	for (const sel of spec.offscreen || []) {
		const r = box(sel);
		if (r && r.right > 1 && r.left < vw) problems.push(sel + ' is on screen');
	}
	return problems;
}`

type layoutSpec struct {
	Inside    []string    `json:"inside"`
	Apart     [][2]string `json:"apart"`
	Uncovered []string    `json:"uncovered"`
	Offscreen []string    `json:"offscreen"`
}

func (p *browserPage) checkLayout(view string, spec layoutSpec) {
	p.t.Helper()
	b, _ := json.Marshal(spec)
	arg := string(b)
	for _, problem := range eval[[]string](p, `(`+layoutCheck+`)(`+arg+`)`) {
		p.t.Errorf("%s: %s", view, problem)
	}
}

// compareScreen reduces the viewport's screenshot and compares it with
// testdata/screens/<name>.png (written with -update).
func (p *browserPage) compareScreen(name string) {
	p.t.Helper()
	shot, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	got := reduce(img, screenScale)
	path := filepath.Join("testdata", "screens", name+".png")
	if *updateScreens {
		var b bytes.Buffer
		if err := png.Encode(&b, got); err != nil {
			p.t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			p.t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		p.t.Fatalf("golden screenshot %s: %v (run go test ./internal/apptest -run TestBrowserScreens -update)", name, err)
	}
	defer f.Close()
	want, err := png.Decode(f)
	if err != nil {
		p.t.Fatalf("golden screenshot %s: %v", name, err)
	}
	diff, err := meanDiff(got, want)
	if err != nil || diff > screenTolerance {
		dir := os.Getenv("REVERIE_TEST_ARTIFACTS")
		if dir == "" {
			dir = p.t.TempDir()
		}
		out := filepath.Join(dir, "screen-"+name+".png")
		_ = os.WriteFile(out, shot, 0o644)
		p.t.Errorf("%s differs from its golden image: mean difference %.1f of 255 (tolerance %.0f), %v; the screenshot is %s "+
			"(if the change is intended: go test ./internal/apptest -run TestBrowserScreens -update)", name, diff, screenTolerance, err, out)
		return
	}
	p.t.Logf("%s: mean difference %.2f of 255 from its golden image", name, diff)
}

// reduce averages img over scale×scale cells into a grey image.
func reduce(img image.Image, scale int) *image.Gray {
	b := img.Bounds()
	w, h := b.Dx()/scale, b.Dy()/scale
	out := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			var sum uint64
			for dy := range scale {
				for dx := range scale {
					g := color.GrayModel.Convert(img.At(b.Min.X+x*scale+dx, b.Min.Y+y*scale+dy)).(color.Gray)
					sum += uint64(g.Y)
				}
			}
			out.SetGray(x, y, color.Gray{Y: uint8(sum / uint64(scale*scale))})
		}
	}
	return out
}

// meanDiff is the mean absolute difference of two grey images of one size.
func meanDiff(a *image.Gray, b image.Image) (float64, error) {
	if a.Bounds() != b.Bounds() {
		return 255, fmt.Errorf("size %v, golden %v", a.Bounds(), b.Bounds())
	}
	var sum float64
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			g := color.GrayModel.Convert(b.At(x, y)).(color.Gray)
			d := float64(a.GrayAt(x, y).Y) - float64(g.Y)
			if d < 0 {
				d = -d
			}
			sum += d
		}
	}
	return sum / float64(a.Bounds().Dx()*a.Bounds().Dy()), nil
}

// TestBrowserScreens opens the chat (a conversation with a tool call and a
// markdown reply, an attachment in the tray, the model picker), the
// assistant's memories and the setup screen at a desktop and a phone size:
// each view passes the layout assertions and matches its golden image.
func TestBrowserScreens(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	sizes := []struct {
		name  string
		w, h  int
		phone bool
	}{
		{"desktop", 1280, 900, false},
		{"phone", 390, 844, true},
	}
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			app := startWebApp(t, "127.0.0.1:0")
			app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
				r := webAssistant(req)
				r.Chunks = 0
				return r
			})
			app.JSON(t, http.MethodPost, "/memories", map[string]string{"text": "Anna is my sister; she lives in Lyon.", "kind": "fact"}, http.StatusCreated, nil)
			p := newBrowser(t, browserPath, "screens-"+size.name, size.w, size.h)
			if size.phone {
				p.do("emulate a phone", chromedp.EmulateViewport(int64(size.w), int64(size.h), chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulateTouch))
			} else {
				p.do("set the window", chromedp.EmulateViewport(int64(size.w), int64(size.h)))
			}
			p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
			p.waitFor("online", `document.getElementById('conn').dataset.state === 'online' && document.getElementById('model-select')?.options.length > 0`)
			p.do("send", chromedp.SendKeys(chromedp.ID("input"), "please write a note: buy milk"), chromedp.Click(chromedp.ID("send")))
			p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('Anything else?') && !m.classList.contains('streaming')) && !document.getElementById('typing-row')`)
			eval[bool](p, `(() => {
				const dt = new DataTransfer();
				dt.items.add(new File(['day 1: Lyon'], 'plan.txt', { type: 'text/plain' }));
				return document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
			})()`)
			p.waitFor("the chip", `document.querySelector('#attach-tray .att-chip')?.dataset.state === 'ready'`)
			p.waitFor("the usage", `document.getElementById('model-usage-text').textContent.includes('tokens')`)
			eval[bool](p, `document.activeElement && document.activeElement.blur(), true`)

			chat := layoutSpec{
				Inside:    []string{".topbar", "#input", "#send", "#attach", "#model-select", "#conn .conn-label", "#tab-chat", "#tab-assistant", "#tab-debug", "#tab-setup"},
				Apart:     [][2]string{{".topbar", "#messages"}, {"#messages", "#model-bar"}, {"#model-bar", "#composer"}, {"#attach-tray", "#composer"}, {"#messages", "#composer"}, {"#tab-setup", "#conn"}, {"#tab-chat", "#tab-assistant"}, {"#tab-assistant", "#tab-debug"}, {"#tab-debug", "#tab-setup"}, {"#model-select", "#model-usage"}},
				Uncovered: []string{"#input", "#send", "#attach", "#model-select", "#tab-assistant"},
			}
			if size.phone {
				chat.Inside = append(chat.Inside, "#menu")
				chat.Offscreen = []string{"#sidebar"}
			} else {
				chat.Inside = append(chat.Inside, "#sidebar", "#new-session")
				chat.Apart = append(chat.Apart, [2]string{"#sidebar", "#messages"}, [2]string{"#sidebar", "#composer"})
			}
			p.checkLayout("chat", chat)
			p.snapshot("screen-" + size.name + "-chat")
			p.compareScreen(size.name + "-chat")

			p.do("open the assistant", chromedp.Click(chromedp.ID("tab-assistant")))
			p.waitFor("the memories", `[...document.querySelectorAll('#mem-list li.as-item')].some(li => li.textContent.includes('Anna is my sister'))`)
			p.checkLayout("assistant", layoutSpec{
				Inside:    []string{".topbar", "#assistant-nav", "#mem-search", "#as-memories"},
				Apart:     [][2]string{{".topbar", "#assistant-body"}, {"#assistant-nav", "#assistant-body"}},
				Uncovered: []string{"#mem-search", "#as-memories"},
			})
			p.snapshot("screen-" + size.name + "-assistant")
			p.compareScreen(size.name + "-assistant")

			p.do("open the setup", chromedp.Click(chromedp.ID("tab-setup")))
			p.waitFor("the setup", `!!document.getElementById('sign-out') && !!document.querySelector('form.setup-form')`)
			p.checkLayout("setup", layoutSpec{
				Inside:    []string{".topbar", "#setup-body h1"},
				Apart:     [][2]string{{".topbar", "#setup-body"}},
				Uncovered: []string{"#setup-body h1"},
			})
			p.snapshot("screen-" + size.name + "-setup")
			p.compareScreen(size.name + "-setup")
			p.checkProblems()
		})
	}
}
