package apptest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// lookCheck is a JavaScript function run on the page: for each selector it
// returns how the element looks from its computed styles — its text's
// contrast ratio (WCAG 2) against the background actually behind it (the
// element's and its ancestors' background colours composited, alpha
// included), and for a button the contrast of its edge (its own
// background, or its border when it has one) against what surrounds it.
const lookCheck = `(sels) => {
	const parse = (c) => {
		let m = /^rgba?\(([^)]*)\)$/.exec(c);
		if (m) { const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number); return [p[0] / 255, p[1] / 255, p[2] / 255, p.length > 3 ? p[3] : 1]; }
		m = /^color\(srgb ([^)]*)\)$/.exec(c);
		if (m) { const p = m[1].split(/[\s\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
		return null;
	};
	const over = (top, bottom) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]); };
	// behind composites the backgrounds of el and its ancestors (from
	// outside) over the page's canvas.
	const behind = (el) => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) layers.push(parse(getComputedStyle(e).backgroundColor) || [0, 0, 0, 0]);
		let c = parse(getComputedStyle(document.documentElement).backgroundColor);
		c = c && c[3] > 0 ? c : (matchMedia('(prefers-color-scheme: dark)').matches ? [0, 0, 0, 1] : [1, 1, 1, 1]);
		for (const l of layers.reverse()) c = over(l, c);
		return c;
	};
	const lum = (c) => { const f = (v) => (v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)); return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
	const hex = (c) => '#' + c.slice(0, 3).map((v) => Math.round(v * 255).toString(16).padStart(2, '0')).join('');
	const out = {};
	for (const sel of sels) {
		const el = document.querySelector(sel);
		if (!el) { out[sel] = { missing: true }; continue; }
		const cs = getComputedStyle(el);
		const bg = behind(el);
		const fg = over(parse(cs.color), bg);
		const r = el.getBoundingClientRect();
		const look = { text: ratio(fg, bg), fg: hex(fg), bg: hex(bg), width: r.width, height: r.height, cursor: cs.cursor };
		if (el.tagName === 'BUTTON') {
			const around = behind(el.parentElement);
			const border = parseFloat(cs.borderTopWidth) > 0 ? over(parse(cs.borderTopColor), around) : bg;
			look.edge = Math.max(ratio(bg, around), ratio(border, around));
			look.around = hex(around);
			look.border = hex(border);
			look.paddingX = parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight);
		}
		out[sel] = look;
	}
	return out;
}`

type look struct {
	Missing  bool    `json:"missing"`
	Text     float64 `json:"text"`
	FG       string  `json:"fg"`
	BG       string  `json:"bg"`
	Width    float64 `json:"width"`
	Height   float64 `json:"height"`
	Cursor   string  `json:"cursor"`
	Edge     float64 `json:"edge"`
	Around   string  `json:"around"`
	Border   string  `json:"border"`
	PaddingX float64 `json:"paddingX"`
}

func (l look) String() string {
	s := fmt.Sprintf("text %s on %s (%.2f:1), %.0f×%.0f px", l.FG, l.BG, l.Text, l.Width, l.Height)
	if l.Border != "" {
		s += fmt.Sprintf(", edge %.2f:1 (border %s, around %s), cursor %s", l.Edge, l.Border, l.Around, l.Cursor)
	}
	return s
}

// TestBrowserEditAndAttachmentsThemes: a sent message with attachments, and
// the same message in edit mode, in the light and the dark theme, in the
// real Chromium. What a person needs to read is readable — Save & send,
// Cancel and the attachment names reach WCAG AA's 4.5:1 against what is
// actually behind them — and the two buttons look like buttons: an edge
// (their fill or border) of at least WCAG's 3:1 for controls against the
// bubble around them, room around the label, a pointer. Computed styles
// are compared, not pixels (fonts differ between machines); screenshots
// of both states are saved when REVERIE_TEST_ARTIFACTS names a directory.
func TestBrowserEditAndAttachmentsThemes(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	for _, theme := range []string{"light", "dark"} {
		t.Run(theme, func(t *testing.T) {
			app := startWebApp(t, "127.0.0.1:0")
			p := newBrowser(t, browserPath, "themes-"+theme, 1280, 900)
			if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}},
			}); err != nil {
				t.Fatalf("emulate the %s theme: %v", theme, err)
			}
			p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
			// A conversation shown (its model loaded): files pasted before
			// would have no conversation to go to.
			p.waitFor("online, a conversation shown", `document.getElementById('conn').dataset.state === 'online' && location.hash.startsWith('#chat/') && document.getElementById('model-select')?.disabled === false`)
			wantDark := theme == "dark"
			if dark := eval[bool](p, `matchMedia('(prefers-color-scheme: dark)').matches`); dark != wantDark {
				t.Fatalf("the page's theme is dark=%v, want %v", dark, wantDark)
			}
			eval[bool](p, `(() => {
				const dt = new DataTransfer();
				dt.items.add(new File(['day 1: Lyon'], 'itinerary-lyon.txt', { type: 'text/plain' }));
				dt.items.add(new File(['hotel'], 'hotel-booking.txt', { type: 'text/plain' }));
				return document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
			})()`)
			p.waitFor("the chips", `[...document.querySelectorAll('#attach-tray .att-chip')].filter(c => c.dataset.state === 'ready').length === 2`)
			p.do("send", chromedp.SendKeys(chromedp.ID("input"), "here is the plan"), chromedp.Click(chromedp.ID("send")))
			p.waitFor("the reply and the message's id", `[...document.querySelectorAll('#messages .msg.assistant')].some(m => !m.classList.contains('streaming') && m.textContent.includes('ok')) && !!document.querySelector('#messages .msg.user[data-id] .msg-atts .att-chip')`)
			eval[bool](p, `document.activeElement && document.activeElement.blur(), true`)

			const name = `#messages .msg.user .msg-atts .att-chip .att-name`
			sent := eval[map[string]look](p, `(`+lookCheck+`)([`+js(name)+`])`)
			if got := eval[[]string](p, `[...document.querySelectorAll('#messages .msg.user .msg-atts .att-name')].map(e => e.textContent)`); strings.Join(got, ",") != "itinerary-lyon.txt,hotel-booking.txt" {
				t.Errorf("attachment names shown %q", got)
			}
			checkText(t, "the attachment name on the sent message", sent[name])
			p.snapshot("themes-" + theme + "-sent")

			p.click("edit", `#messages .msg.user button[data-act="edit"]`)
			p.waitFor("the editor", `!!document.querySelector('#messages .edit-box') && !!document.querySelector('#messages button[data-act="cancel-edit"]')`)
			save, cancel := `#messages button[data-act="send-edit"]`, `#messages button[data-act="cancel-edit"]`
			edit := eval[map[string]look](p, `(`+lookCheck+`)([`+js(save)+`, `+js(cancel)+`])`)
			for _, b := range []struct{ what, sel string }{{"Save & send", save}, {"Cancel", cancel}} {
				l := edit[b.sel]
				checkText(t, b.what, l)
				if l.Edge < 3 {
					t.Errorf("%s does not look like a button: its edge contrasts %.2f:1 with the bubble around it (want ≥ 3:1, WCAG 1.4.11): %s", b.what, l.Edge, l)
				}
				if l.Cursor != "pointer" || l.PaddingX < 12 || l.Height < 20 {
					t.Errorf("%s does not look like a button (cursor, padding, height): %s", b.what, l)
				}
			}
			if edit[save].BG == edit[cancel].BG {
				t.Errorf("Save & send and Cancel look the same (%s): the action to take does not stand out", edit[save].BG)
			}
			p.snapshot("themes-" + theme + "-edit")

			// Cancel leaves the message as it was.
			p.click("cancel", cancel)
			p.waitFor("the message again", `!document.querySelector('#messages .edit-box') && [...document.querySelectorAll('#messages .msg.user .bubble')].some(b => b.textContent.includes('here is the plan'))`)
			p.checkProblems()
		})
	}
}

// checkText fails the test when l's text is under WCAG AA's 4.5:1.
func checkText(t *testing.T, what string, l look) {
	t.Helper()
	switch {
	case l.Missing:
		t.Errorf("%s is not shown", what)
	case l.Width == 0 || l.Height == 0:
		t.Errorf("%s has no size: %s", what, l)
	case l.Text < 4.5:
		t.Errorf("%s is hard to read: %s (want ≥ 4.5:1, WCAG AA)", what, l)
	default:
		t.Logf("%s: %s", what, l)
	}
}
