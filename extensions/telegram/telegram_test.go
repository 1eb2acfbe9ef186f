package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-telegram/bot"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
)

const testToken = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"

func TestConformance(t *testing.T) {
	srv := telegramtest.New(t, testToken)
	extensiontest.Run(t, Info(Options{}), extensiontest.WithConfig(fmt.Sprintf("token: %q\napi_url: %s\n", testToken, srv.URL())))
}

func TestToHTML(t *testing.T) {
	for _, tc := range []struct{ name, md, want string }{
		{"plain escaped", "a < b & c > d", "a &lt; b &amp; c &gt; d"},
		{"bold", "**bold** and __also__", "<b>bold</b> and <b>also</b>"},
		{"italic", "*it* and _it_", "<i>it</i> and <i>it</i>"},
		{"snake case stays", "call snake_case_name now", "call snake_case_name now"},
		{"unmatched stays", "2 * 3 = 6 and **open", "2 * 3 = 6 and **open"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"inline code escaped", "run `a<b && c`", "run <code>a&lt;b &amp;&amp; c</code>"},
		{"fence with language", "```go\nif a < b {}\n```", "<pre><code class=\"language-go\">if a &lt; b {}</code></pre>"},
		{"fence bad language", "```x\"><script>\nx\n```", "<pre><code>x</code></pre>"},
		{"link", "[site](https://example.org/?a=1&b=2)", `<a href="https://example.org/?a=1&amp;b=2">site</a>`},
		{"javascript link refused", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"quote in href escaped", `[x](https://e.org/"onmouseover=")`, `<a href="https://e.org/&#34;onmouseover=&#34;">x</a>`},
		{"heading", "## Plan", "<b>Plan</b>"},
		{"bullets", "- one\n* two", "• one\n• two"},
		{"quote", "> wise\n> words\nafter", "<blockquote>wise\nwords</blockquote>\nafter"},
		{"nested", "**bold _and it_**", "<b>bold <i>and it</i></b>"},
		{"escaped marker", `\*not italic\*`, "*not italic*"},
		{"html in text", "<b>not a tag</b>", "&lt;b&gt;not a tag&lt;/b&gt;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toHTML(tc.md)
			if got != tc.want {
				t.Errorf("toHTML(%q)\n got %q\nwant %q", tc.md, got, tc.want)
			}
			if _, err := telegramtest.Visible(got, "HTML"); err != nil {
				t.Errorf("Telegram would refuse %q: %v", got, err)
			}
		})
	}
}

// Whatever the model writes, the HTML is something Telegram parses.
func FuzzToHTML(f *testing.F) {
	for _, s := range []string{"**a _b** c_", "`x", "[a](https://x) **[b](http://y)**", "> q\n```\n<>&\n", "_*~`[]()",
		"**", "* * *", "a_b_c *d*e", "[**](https://x)", "\xff\xfe bad utf8 <"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := toHTML(md)
		if _, err := telegramtest.Visible(out, "HTML"); err != nil {
			t.Fatalf("toHTML(%q) = %q: %v", md, out, err)
		}
	})
}

func TestSplit(t *testing.T) {
	para := strings.Repeat("word ", 150) // 750 characters
	long := strings.Repeat(para+"\n\n", 12)
	code := "```python\n" + strings.Repeat("print('x')\n", 500) + "```\nafter"
	emoji := strings.Repeat("😀", 3000) // 6000 UTF-16 units
	for _, tc := range []struct {
		name string
		md   string
		n    int // pieces expected (0: more than one)
	}{
		{"short", "hello", 1},
		{"empty", "   ", -1},
		{"paragraphs", long, 0},
		{"code block", code, 0},
		{"surrogates", emoji, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pieces := channelkit.Split(tc.md, MaxMessageLen, channelkit.UTF16Len)
			switch {
			case tc.n == -1 && len(pieces) != 0:
				t.Fatalf("pieces for blank text: %q", pieces)
			case tc.n > 0 && len(pieces) != tc.n:
				t.Fatalf("%d pieces, want %d", len(pieces), tc.n)
			case tc.n == 0 && len(pieces) < 2:
				t.Fatalf("not split: %d piece(s)", len(pieces))
			}
			var words int
			for i, p := range pieces {
				if n := channelkit.UTF16Len(p); n > MaxMessageLen {
					t.Errorf("piece %d has %d units", i, n)
				}
				if strings.TrimSpace(p) == "" {
					t.Errorf("piece %d is empty", i)
				}
				if _, err := telegramtest.Visible(toHTML(p), "HTML"); err != nil {
					t.Errorf("piece %d does not parse: %v", i, err)
				}
				if channelkit.OpenFence(p) != "" {
					t.Errorf("piece %d leaves a code block open", i)
				}
				words += strings.Count(p, "word")
			}
			if tc.name == "paragraphs" {
				if words != 150*12 {
					t.Errorf("%d words after splitting, want %d", words, 150*12)
				}
				for i, p := range pieces[:len(pieces)-1] {
					if !strings.HasSuffix(p, "word") {
						t.Errorf("piece %d not cut at a paragraph boundary: …%q", i, p[len(p)-10:])
					}
				}
			}
			if tc.name == "code block" && !strings.HasPrefix(pieces[1], "```python\n") {
				t.Errorf("the code block is not reopened: %q", pieces[1][:20])
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	srv := telegramtest.New(t, testToken)
	for _, tc := range []struct{ name, cfg string }{
		{"no token", "group_mode: all\n"},
		{"token not a bot token", "token: hunter2\n"},
		{"group mode", fmt.Sprintf("token: %q\ngroup_mode: sometimes\n", testToken)},
		{"api url", fmt.Sprintf("token: %q\napi_url: ftp://x\n", testToken)},
		{"negative user", fmt.Sprintf("token: %q\nallowed_users: [-5]\n", testToken)},
		{"ttl", fmt.Sprintf("token: %q\npairing_ttl: 1s\n", testToken)},
		{"token refused", fmt.Sprintf("token: %q\napi_url: %s\n", "999:another-token-abcdefghijklmnopqrstu", srv.URL())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := extensiontest.NewHost(t, extensiontest.WithID(ID), extensiontest.WithConfig(tc.cfg))
			err := New(Options{}).Init(t.Context(), h)
			if !errors.Is(err, extension.ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), "TEST-token") || strings.Contains(err.Error(), "another-token") || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the token is in the error: %v", err)
			}
		})
	}
}

// An unreachable Telegram at start is not a configuration error.
func TestInitOffline(t *testing.T) {
	srv := telegramtest.New(t, testToken)
	u := srv.URL()
	srv.Close()
	h := extensiontest.NewHost(t, extensiontest.WithID(ID), extensiontest.WithConfig(fmt.Sprintf("token: %q\napi_url: %s\n", testToken, u)))
	tg := New(Options{})
	if err := tg.Init(t.Context(), h); err != nil {
		t.Fatalf("Init offline: %v", err)
	}
	if err := tg.Health(t.Context()); err == nil || strings.Contains(err.Error(), "TEST-token") {
		t.Fatalf("health = %v (want the failure, without the token)", err)
	}
	if got := h.Redact("token=" + testToken); strings.Contains(got, "TEST-token") {
		t.Fatalf("the token is not registered as a secret: %q", got)
	}
}

func TestScrubAndClassify(t *testing.T) {
	c := &client{token: testToken}
	netErr := &url.Error{Op: "Post", URL: "https://api.telegram.org/bot" + testToken + "/getUpdates", Err: context.DeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		kind errKind
	}{
		{"network", fmt.Errorf("getUpdates: %w", netErr), errTransient},
		{"429", &bot.TooManyRequestsError{Message: "too many", RetryAfter: 3}, errRateLimited},
		{"409", fmt.Errorf("x: %w, Conflict", bot.ErrorConflict), errConflict},
		{"401 with token", fmt.Errorf("bad %s: %w", testToken, bot.ErrorUnauthorized), errUnauthorized},
		{"parse", fmt.Errorf("%w, Bad Request: can't parse entities: x", bot.ErrorBadRequest), errBadRequest},
		{"5xx", responseError("sendMessage", apiResponse{ErrorCode: 502, Description: "Bad Gateway"}), errTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.scrub(tc.err)
			if strings.Contains(err.Error(), testToken) {
				t.Fatalf("token in %q", err)
			}
			if k, _ := classify(err); k != tc.kind {
				t.Fatalf("kind %d, want %d (%v)", k, tc.kind, err)
			}
		})
	}
	if _, wait := classify(&bot.TooManyRequestsError{RetryAfter: 9}); wait != 9*time.Second {
		t.Errorf("retry_after wait %s", wait)
	}
}

func TestPairingStore(t *testing.T) {
	h := extensiontest.NewHost(t, extensiontest.WithID(ID))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	if err := migrate(t.Context(), h.DB()); err != nil {
		t.Fatal(err)
	}
	s := &store{db: h.DB(), now: clock, ttl: time.Hour}
	ctx := t.Context()

	first, err := s.request(ctx, 42, 42, "Eve")
	if err != nil || len(first.code) != codeLen {
		t.Fatalf("request: %+v, %v", first, err)
	}
	again, _ := s.request(ctx, 42, 42, "Eve")
	if again.code != "" || again.remind {
		t.Fatalf("second request within a minute: %+v", again)
	}
	now = now.Add(2 * time.Minute)
	if again, _ = s.request(ctx, 42, 42, "Eve"); !again.remind || again.code != "" {
		t.Fatalf("no reminder after a minute: %+v", again)
	}
	if _, err := s.approve(ctx, "AAAA2222"); !errors.Is(err, extension.ErrPairingCode) {
		t.Fatalf("wrong code: %v", err)
	}
	if _, err := s.approve(ctx, "0O1I"); !errors.Is(err, extension.ErrPairingCode) || err.Error() != `"0O1I" is not a pairing code (8 letters and digits)` {
		t.Fatalf("malformed code: %v", err)
	}
	p, err := s.approve(ctx, strings.ToLower(first.code[:4])+"-"+first.code[4:])
	if err != nil || p.UserID != "42" || p.Name != "Eve" {
		t.Fatalf("approve: %+v, %v", p, err)
	}
	if ok, _ := s.approved(ctx, 42); !ok {
		t.Fatal("not approved")
	}
	if _, err := s.approve(ctx, first.code); !errors.Is(err, extension.ErrPairingCode) {
		t.Fatalf("a code works twice: %v", err)
	}

	// Expired codes are refused, and the person can ask again.
	late, _ := s.request(ctx, 43, 43, "Mal")
	now = now.Add(2 * time.Hour)
	// Said once: whoever shows the refusal adds how to get a new code.
	if _, err := s.approve(ctx, late.code); !errors.Is(err, extension.ErrPairingCode) || err.Error() != "pairing code "+late.code+" has expired" {
		t.Fatalf("expired code: %v", err)
	}
	if fresh, _ := s.request(ctx, 43, 43, "Mal"); fresh.code == "" {
		t.Fatal("no new code after expiry")
	}

	// Strangers cannot fill the table.
	for i := range maxPending + 5 {
		if _, err := s.request(ctx, int64(1000+i), int64(1000+i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if full, _ := s.request(ctx, 99999, 99999, "x"); !full.full {
		t.Fatalf("no limit on pending codes: %+v", full)
	}
	reqs, err := s.pending(ctx)
	if err != nil || len(reqs) != maxPending {
		t.Fatalf("pending: %d, %v", len(reqs), err)
	}
	var n int
	if err := h.DB().QueryRow(`SELECT COUNT(*) FROM telegram_pairing WHERE code_hash = ?`, late.code).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a code is stored in clear: %d, %v", n, err)
	}
}

// "typing…" is sent at once and refreshed every 4 seconds until the turn
// ends.
func TestKeepTyping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			keepTyping(ctx, func(context.Context) error {
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
				return nil
			})
		}()
		time.Sleep(9 * time.Second)
		cancel()
		<-done
		want := []time.Duration{0, 4 * time.Second, 8 * time.Second}
		if fmt.Sprint(at) != fmt.Sprint(want) {
			t.Fatalf("typing sent at %v, want %v", at, want)
		}
	})
}

// A streamed reply is edited at most once per second, whatever the rate of
// the deltas, and ends with the whole reply.
func TestStreamEditRate(t *testing.T) {
	srv := telegramtest.New(t, testToken)
	h := extensiontest.NewHost(t, extensiontest.WithID(ID), extensiontest.WithConfig(fmt.Sprintf("token: %q\napi_url: %s\n", testToken, srv.URL())))
	var slept []time.Duration
	tg := New(Options{Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
	if err := tg.Init(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	s, err := tg.OpenStream(t.Context(), chat.Address{Channel: ChannelName, Thread: "telegram:77"})
	if err != nil {
		t.Fatal(err)
	}
	var full strings.Builder
	for i := range 40 { // a delta every 100 ms for 4 s
		d := fmt.Sprintf("w%d ", i)
		full.WriteString(d)
		if err := s.Delta(d); err != nil {
			t.Fatal(err)
		}
		h.Clock().Advance(100 * time.Millisecond)
	}
	if err := s.Close(full.String(), nil); err != nil {
		t.Fatal(err)
	}
	ms := srv.Messages(77)
	if len(ms) != 1 {
		t.Fatalf("%d messages, want 1 edited message: %+v", len(ms), ms)
	}
	sends, edits := len(srv.Calls("sendMessage")), len(srv.Calls("editMessageText"))
	// 4 s of deltas: the first send, then at most one edit per second, and
	// the final edit.
	if sends != 1 || edits < 3 || edits > 5 {
		t.Errorf("%d sends and %d edits for 4 s of streaming", sends, edits)
	}
	if ms[0].Plain != strings.TrimSpace(full.String()) {
		t.Errorf("final text %q", ms[0].Plain)
	}
}

// An edit that fails while streaming stops the edits; the streamed message
// still ends with the whole reply (no second copy).
func TestStreamRecoversFromAFailedEdit(t *testing.T) {
	srv := telegramtest.New(t, testToken)
	h := extensiontest.NewHost(t, extensiontest.WithID(ID), extensiontest.WithConfig(fmt.Sprintf("token: %q\napi_url: %s\n", testToken, srv.URL())))
	tg := New(Options{Sleep: func(context.Context, time.Duration) error { return nil }})
	if err := tg.Init(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	s, err := tg.OpenStream(t.Context(), chat.Address{Channel: ChannelName, Thread: "telegram:78"})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Delta("first part")
	srv.Fail("editMessageText", telegramtest.Failure{Code: 500, Desc: "Internal Server Error"})
	h.Clock().Advance(2 * time.Second)
	_ = s.Delta(", second part")
	edits := len(srv.Calls("editMessageText"))
	h.Clock().Advance(2 * time.Second)
	_ = s.Delta(", third part")
	if n := len(srv.Calls("editMessageText")); n != edits {
		t.Fatalf("%d edits after a failed one, want none (the failure was not noticed)", n-edits)
	}
	if err := s.Close("first part, second part, third part", nil); err != nil {
		t.Fatal(err)
	}
	ms := srv.Messages(78)
	if len(ms) != 1 || ms[0].Plain != "first part, second part, third part" {
		t.Fatalf("messages %+v", ms)
	}
}
