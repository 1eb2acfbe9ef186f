package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/cli"
	"github.com/reverie-ai/reverie/extensions/cli/clitest"
	"github.com/reverie-ai/reverie/extensions/web"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/logtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// chatModel is the fake model of the chat tests: a message with an image
// gets "Saw9 N image(s)", the seed gets a greeting, "slow" a reply that stalls after its first words until the
// request is cancelled, "gated" a reply held until openGate is called,
// "fail" an error, anything else an echo.
func chatModel(t *testing.T) (model *llmtest.OpenAIServer, openGate func()) {
	model = llmtest.NewOpenAIServer(t)
	gate := make(chan struct{})
	var once sync.Once
	openGate = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(openGate)
	model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last, images := "", 0
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				last, images = req.Messages[i].Text(), len(req.Messages[i].Images())
				break
			}
		}
		// A new conversation is greeted in the reply to its first message
		// (the seed comes first, with the greeting note).
		greet := false
		for _, m := range req.Messages {
			switch {
			case m.Role == "user" && strings.Contains(m.Text(), "already written their first message"):
				greet = true
			case m.Role == "assistant" && m.Text() != "":
				greet = false
			}
		}
		switch {
		case images > 0:
			return llmtest.ServerReply{Text: fmt.Sprintf("Saw9 %d image(s)", images)}
		case strings.HasPrefix(last, "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Hello9, I'm Reverie. What are you working on?"}
		case greet && !strings.HasPrefix(last, "/"):
			return llmtest.ServerReply{Text: "Hello9, I'm Reverie. Echo9: **" + last + "**"}
		case last == "slow":
			return llmtest.ServerReply{Text: "Slow9Partial and then nothing more", Chunks: 1, StallAfter: 2}
		case last == "gated":
			return llmtest.ServerReply{Text: "Muted9Reply", Gate: gate}
		case last == "fail":
			// A bad request is not retried: the turn fails at once.
			return llmtest.ServerReply{Status: 400, ErrorMessage: "the model refused"}
		default:
			return llmtest.ServerReply{Text: "Echo9: **" + last + "**"}
		}
	})
	return model, openGate
}

// testFiles writes a small PNG and a text file to attach.
func testFiles(t *testing.T) (pngPath, txtPath string) {
	t.Helper()
	d := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	pngPath, txtPath = filepath.Join(d, "dot.png"), filepath.Join(d, "notes.txt")
	if err := os.WriteFile(pngPath, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(txtPath, []byte("buy milk\ncall Ann"), 0o600); err != nil {
		t.Fatal(err)
	}
	return pngPath, txtPath
}

func chatEnv(t *testing.T, model *llmtest.OpenAIServer, extra ...string) []string {
	return append([]string{
		"HOME=" + t.TempDir(),
		"USER=tester",
		"TERM=xterm-256color",
		"NO_COLOR=1",
		"OPENAI_BASE_URL=" + model.BaseURL(),
		"OPENAI_API_KEY=sk-test",
		"REVERIE_MODEL=gpt-test",
		"REVERIE_LOG__FILE=false",
		"REVERIE_TOOLS__SHELL__SANDBOX=off",
	}, extra...)
}

func TestChatPlainInProcess(t *testing.T) {
	model, _ := chatModel(t)
	dir := t.TempDir()
	env := chatEnv(t, model)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"chat", "--data", dir}, strings.NewReader("hello\n/status\n"), &out, &errb, env)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	replies := strings.SplitN(out.String(), "\n", 2)
	// The new conversation is greeted in the first reply itself.
	if replies[0] != "Hello9, I'm Reverie. Echo9: **hello**" || !strings.Contains(replies[1], "Reverie status") {
		t.Errorf("stdout:\n%s", out.String())
	}

	// The same conversation (cli:tester) goes on in the next run: no
	// greeting; a failing turn is explained on stderr and exits non-zero,
	// after the other lines were answered.
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"chat", "--data", dir}, strings.NewReader("fail\nagain\n"), &out, &errb, env)
	if code != ExitFailure {
		t.Errorf("exit %d after a failed turn", code)
	}
	if out.String() != "Echo9: **again**\n" || !strings.Contains(errb.String(), "error: ") || strings.Contains(errb.String(), "Hello9") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	sawHistory := false
	for _, req := range model.ChatRequests() {
		for _, m := range req.Messages {
			if m.Role == "assistant" && strings.Contains(m.Text(), "Echo9: **hello**") {
				sawHistory = true
			}
		}
	}
	if !sawHistory {
		t.Error("the second run did not continue the conversation of the first")
	}
}

func TestChatInteractiveInProcess(t *testing.T) {
	model, _ := chatModel(t)
	dir := t.TempDir()
	env := chatEnv(t, model, "REVERIE_MODEL_VISION=true")
	tm := clitest.New(t, 100, 30)
	var errb logtest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{"chat", "--data", dir}, tm.TTY, tm.TTY, &errb, env)
	}()
	waitCode := func() int {
		select {
		case c := <-code:
			return c
		case <-time.After(clitest.Timeout):
			t.Fatalf("the chat did not end; stderr:\n%s", errb.String())
			return -1
		}
	}

	tm.WaitFor("Reverie · cli:tester · in process")
	// Nothing to answer again or to name yet.
	tm.Type("/retry", clitest.Enter)
	tm.WaitFor("✗ nothing to retry yet: this conversation has no message of yours")
	tm.Type("/rename Early", clitest.Enter)
	tm.WaitFor("✗ not renamed: this conversation has no messages yet")
	tm.Type("hello", clitest.Enter)
	tm.WaitFor("Hello9, I'm Reverie") // the new conversation's greeting
	tm.WaitFor("Echo9:")
	tm.WaitFor("hello") // rendered markdown (the style decides about the stars)

	// A slow turn streams its first words; Ctrl+C cancels it and the chat
	// goes on.
	tm.Type("slow", clitest.Enter)
	tm.WaitFor("Slow9Partial and then nothing more")
	tm.Type(clitest.CtrlC)
	tm.WaitFor("✗ Stopped before the answer was finished")
	tm.Type("after", clitest.Enter)
	tm.WaitFor("Echo9:")
	tm.WaitFor("after")

	// /attach: an image and a document go with the next message; the
	// vision model sees the picture, and is told where the document is.
	png, txt := testFiles(t)
	tm.Type("/attach "+png, clitest.Enter)
	tm.WaitFor("📎 dot.png (image, ")
	tm.WaitFor("goes with your next message")
	tm.Type("/attach "+txt, clitest.Enter)
	tm.WaitFor("📎 notes.txt (text/plain, 17 bytes) goes with your next message")
	tm.Type("/attach /no/such/file", clitest.Enter)
	tm.WaitFor("✗ not attached: there is no file /no/such/file")
	tm.Type("what are these", clitest.Enter)
	tm.WaitFor("Saw9 1 image(s)")
	reqs := model.ChatRequests()
	sent := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]
	if !strings.Contains(sent.Text(), "[file notes.txt (text/plain, 17 bytes) saved in the workspace as cli/tester/") ||
		!strings.Contains(sent.Text(), "what are these") || len(sent.Images()) != 1 {
		t.Errorf("the model got %q with %d image(s)", sent.Text(), len(sent.Images()))
	}
	saved, _ := filepath.Glob(filepath.Join(dir, "workspace", "cli", "tester", "*-notes.txt"))
	if len(saved) != 1 {
		t.Errorf("notes.txt saved as %v", saved)
	}
	// The next message goes without them.
	tm.Type("and now", clitest.Enter)
	tm.WaitFor("Echo9: and now")

	// /retry answers it again: the model no longer sees the first reply;
	// /edit replaces the message; /rename names the conversation.
	tm.Type("/retry", clitest.Enter)
	tm.WaitFor("↻ answering again")
	tm.WaitFor("› and now")
	tm.WaitFor("Echo9: and now")
	checkLastRequest(t, model, "and now", "Echo9: **and now**")
	tm.Type("/edit", clitest.Enter)
	tm.WaitFor("✎ editing your last message")
	tm.Type(" please", clitest.Enter)
	tm.WaitFor("› and now please")
	tm.WaitFor("Echo9: and now please")
	checkLastRequest(t, model, "and now please", "Echo9: **and now**")
	tm.Type("/rename Lyon trip", clitest.Enter)
	tm.WaitFor("This conversation is now “Lyon trip”")
	tm.Type("/threads", clitest.Enter)
	tm.WaitFor("1. Lyon trip · cli:tester")

	tm.Type(clitest.CtrlD)
	if c := waitCode(); c != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", c, errb.String())
	}
	st, err := os.Stat(filepath.Join(dir, cli.HistoryFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v %v", st, err)
	}
}

// checkLastRequest checks that the model's last request answers
// question and that no message of its history contains gone (a reply or a
// message a retry or an edit replaced).
func checkLastRequest(t *testing.T, model *llmtest.OpenAIServer, question, gone string) {
	t.Helper()
	reqs := model.ChatRequests()
	msgs := reqs[len(reqs)-1].Messages
	if got := msgs[len(msgs)-1].Text(); got != question {
		t.Errorf("the model was asked %q, want %q", got, question)
	}
	for _, m := range msgs {
		// (The system prompt and the turn context may recall earlier
		// exchanges: memory.)
		if m.Role != "system" && !strings.HasPrefix(m.Text(), agent.TurnContextPrefix) && strings.Contains(m.Text(), gone) {
			t.Errorf("the model still saw %q (%s)", gone, m.Role)
		}
	}
}

// startServer runs a whole agent with the web extension on a free
// loopback port and returns its URL.
func startServer(t *testing.T, env []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "server")
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Options{DataDir: dir, Env: env, Console: &logtest.Buffer{}})
	if err != nil {
		cancel()
		t.Fatalf("start the server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("server stopped: %v", err)
	}
	ext, ok := a.Kernel.Extension("web")
	w, isWeb := ext.(*web.Web)
	if !ok || !isWeb || w.Addr() == nil {
		t.Fatal("the web extension is not running")
	}
	return "http://" + w.Addr().String()
}

// getJSON reads an API answer with the token.
func getJSON(t *testing.T, u, token string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func TestChatRemote(t *testing.T) {
	model, openGate := chatModel(t)
	const token = "test-token-0123456789abcdef"
	serverEnv := chatEnv(t, model, "REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_WEB__TOKEN="+token, "REVERIE_MODEL_VISION=true")
	url := startServer(t, serverEnv)
	clientDir := filepath.Join(t.TempDir(), "client")

	t.Run("wrong token", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"chat", "--data", clientDir, "--remote", url, "--token", "wrong-token-0123456789"},
			strings.NewReader("hello\n"), &out, &errb, chatEnv(t, model))
		if code == ExitOK || !strings.Contains(errb.String(), "refused the access token") {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	})

	t.Run("plain", func(t *testing.T) {
		var out, errb bytes.Buffer
		env := chatEnv(t, model, "REVERIE_TOKEN="+token)
		code := run(context.Background(), []string{"chat", "--data", clientDir, "--remote", url},
			strings.NewReader("hello\n/help\n"), &out, &errb, env)
		if code != ExitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
		}
		replies := strings.SplitN(out.String(), "\n", 2)
		if replies[0] != "Hello9, I'm Reverie. Echo9: **hello**" || !strings.Contains(replies[1], "/status") {
			t.Errorf("stdout:\n%s", out.String())
		}
	})

	t.Run("interactive", func(t *testing.T) {
		tm := clitest.New(t, 100, 30)
		env := chatEnv(t, model, "USER=remote.user")
		var errb logtest.Buffer
		code := make(chan int, 1)
		go func() {
			code <- run(context.Background(), []string{"chat", "--data", clientDir, "--remote", url, "--token", token}, tm.TTY, tm.TTY, &errb, env)
		}()
		tm.WaitFor("Reverie · web:cli-remote_user · " + url)
		tm.Type("hi there", clitest.Enter)
		tm.WaitFor("Hello9")
		tm.WaitFor("Echo9:")
		tm.WaitFor("hi there")
		// Ctrl+C sends a cancel frame: the server stops the turn, and what
		// still arrives for it is not shown.
		tm.Type("gated", clitest.Enter)
		tm.WaitFor("› gated")
		tm.Type(clitest.CtrlC)
		tm.WaitFor("cancelled")
		openGate()
		tm.Type("after", clitest.Enter)
		seen := tm.WaitFor("after") + tm.WaitFor("Echo9:")
		if strings.Contains(seen, "Muted9Reply") || strings.Contains(tm.Output(), "Muted9Reply") {
			t.Errorf("the reply the user stopped waiting for was shown:\n%s", seen)
		}
		// /attach uploads the file to the server (POST …/attachments) and
		// the next message names it.
		png, txt := testFiles(t)
		tm.Type("/attach "+png, clitest.Enter)
		tm.WaitFor("📎 dot.png (image, ")
		tm.Type("/attach "+txt, clitest.Enter)
		tm.WaitFor("📎 notes.txt (text/plain")
		tm.Type("look at these", clitest.Enter)
		tm.WaitFor("Saw9 1 image(s)")
		reqs := model.ChatRequests()
		sent := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]
		if !strings.Contains(sent.Text(), "saved in the workspace as web/cli-remote_user/") || len(sent.Images()) != 1 {
			t.Errorf("the model got %q with %d image(s)", sent.Text(), len(sent.Images()))
		}
		// /retry, /edit and /rename through the server: the replaced turns
		// are kept as branches of the web thread.
		tm.Type("/retry", clitest.Enter)
		tm.WaitFor("↻ answering again")
		tm.WaitFor("Saw9 1 image(s)")
		tm.Type("/edit just words", clitest.Enter)
		tm.WaitFor("› just words")
		tm.WaitFor("Echo9: just words")
		checkLastRequest(t, model, "just words", "Saw9")
		tm.Type("/rename Remote9 title", clitest.Enter)
		tm.WaitFor("This conversation is now “Remote9 title”")
		tm.Type("/threads", clitest.Enter)
		tm.WaitFor("Remote9 title · web:cli-remote_user")
		var segs api.SegmentList
		getJSON(t, url+"/api/v1/segments?thread=web:cli-remote_user&kind=branch", token, &segs)
		if len(segs.Segments) != 2 {
			t.Errorf("branches kept: %+v, want 2 (the retried reply, the edited turn)", segs.Segments)
		}
		tm.Type(clitest.CtrlD)
		select {
		case c := <-code:
			if c != ExitOK {
				t.Fatalf("exit %d; stderr:\n%s", c, errb.String())
			}
		case <-time.After(clitest.Timeout):
			t.Fatalf("the chat did not end; stderr:\n%s", errb.String())
		}
	})
}

// BenchmarkChatPlainInProcess measures a piped `reverie chat` in process:
// per message, through the router, the agent, the fake OpenAI server over
// HTTP and back through the cli channel (start-up amortised over b.N).
func BenchmarkChatPlainInProcess(b *testing.B) {
	model := llmtest.NewOpenAIServer(b)
	model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply { return llmtest.ServerReply{Text: "ok"} })
	dir := filepath.Join(b.TempDir(), "data")
	env := []string{"HOME=" + b.TempDir(), "USER=bench", "OPENAI_BASE_URL=" + model.BaseURL(), "OPENAI_API_KEY=sk-test",
		"REVERIE_MODEL=gpt-test", "REVERIE_LOG__FILE=false", "REVERIE_TOOLS__SHELL__SANDBOX=off"}
	// A first run creates the data dir and the conversation (seed).
	if code := run(context.Background(), []string{"chat", "--data", dir}, strings.NewReader("hi\n"), io.Discard, io.Discard, env); code != ExitOK {
		b.Fatalf("warm-up exit %d", code)
	}
	input := strings.Repeat("hello\n", b.N)
	var out bytes.Buffer
	b.ResetTimer()
	code := run(context.Background(), []string{"chat", "--data", dir}, strings.NewReader(input), &out, io.Discard, env)
	b.StopTimer()
	if code != ExitOK || strings.Count(out.String(), "ok\n") != b.N {
		b.Fatalf("exit %d, %d replies for %d messages", code, strings.Count(out.String(), "ok\n"), b.N)
	}
}

// The terminal cannot play audio: with a tts model and voice.replies
// always, `reverie chat` still answers in writing, nothing is spoken for
// it, and /voice says so.
func TestChatWithVoiceReplies(t *testing.T) {
	model, _ := chatModel(t)
	audio := llmtest.NewAudioServer(t)
	dir := t.TempDir()
	env := chatEnv(t, model, "REVERIE_TTS_MODEL=tts-1", "REVERIE_TTS_BASE_URL="+audio.BaseURL(), "REVERIE_VOICE__REPLIES=always")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"chat", "--data", dir}, strings.NewReader("hello\n/voice\n"), &out, &errb, env)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.HasPrefix(out.String(), "Hello9, I'm Reverie. Echo9: **hello**\n") ||
		!strings.Contains(out.String(), "This channel cannot play audio: replies here are written only") ||
		!strings.Contains(out.String(), "Voice replies: always") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if n := len(audio.Speeches()); n != 0 {
		t.Errorf("%d speech requests for the terminal", n)
	}
}
