package apptest

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/cli"
	"github.com/reverie-ai/reverie/internal/providers/providerstest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// rateLimitedOnce answers every other model request with a 429 and
// Retry-After: 30 (the fake server speaks the real wire format), then the
// reply.
func rateLimitedOnce(n *atomic.Int32) func(llmtest.ChatRequest) llmtest.ServerReply {
	return func(req llmtest.ChatRequest) llmtest.ServerReply {
		if n.Add(1)%2 == 1 {
			return llmtest.ServerReply{Status: 429, ErrorType: "rate_limit_exceeded", ErrorMessage: "slow down", RetryAfter: "30"}
		}
		return llmtest.ServerReply{Text: "Here I am."}
	}
}

// A 429 with Retry-After is a wait the user sees as it happens, on the
// WebSocket (a "wait" frame in plain words, then the reply) and in the
// terminal; the provider's clock is injected, so the 30 s take no time. A
// turn that stays rate limited fails with words that carry no internal
// label (backend, model, HTTP status, retry count).
func TestRateLimitWaitIsShown(t *testing.T) {
	clock := providerstest.NewClock()
	info, ok := extension.Lookup(cli.ID)
	if !ok {
		t.Fatal("the cli extension is not registered")
	}
	w := StartWeb(t, WithModelClock(clock), WithExtensions(info), WithEnv("REVERIE_CLI__ENABLED=true"))
	var n atomic.Int32
	w.Model.Handle(rateLimitedOnce(&n))

	// The web page's WebSocket.
	c := dialWS(t, w, "")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:wait", Text: "are you there?"})
	frames := readReply(t, c)
	if frames[0].Type != api.FrameWait || frames[0].Text != "Rate limited by the provider, retrying in 30 s" || frames[0].WaitMS != 30000 {
		t.Fatalf("first frame %+v, want the wait (frames: %s)", frames[0], frameTypes(frames))
	}
	if last := frames[len(frames)-1]; last.Type != api.FrameDone || last.Text != "Here I am." {
		t.Fatalf("last frame %+v (frames: %s)", last, frameTypes(frames))
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 30*time.Second {
		t.Errorf("retry waits %v, want the server's 30 s", got)
	}

	// The terminal (reverie chat, in process; piped, so plain).
	ext, ok := w.App.Kernel.Extension(cli.ID)
	ch, isCLI := ext.(*cli.CLI)
	if !ok || !isCLI {
		t.Fatal("the cli channel did not start")
	}
	b, err := cli.NewLocal(ch, w.App.Router, "cli:alice", chat.Sender{ID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cli.RunPlain(ctx, b, strings.NewReader("are you there?\n"), &out, &errOut); err != nil {
		t.Fatalf("chat: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "wait: Rate limited by the provider, retrying in 30 s") || !strings.Contains(out.String(), "Here I am.") {
		t.Errorf("terminal:\nout: %s\nerr: %s", out.String(), errOut.String())
	}

	// Rate limited for good: the error says what to do, without labels.
	w.Model.Handle(func(llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Status: 429, ErrorType: "rate_limit_exceeded", ErrorMessage: "slow down", RetryAfter: "30"}
	})
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:wait", Text: "still there?"})
	frames = readReply(t, c)
	waits := 0
	for _, f := range frames {
		if f.Type == api.FrameWait {
			waits++
		}
	}
	last := frames[len(frames)-1]
	if waits == 0 || last.Type != api.FrameError || !strings.Contains(last.Error, "limiting how often") {
		t.Fatalf("frames %s, last %+v", frameTypes(frames), last)
	}
	for _, label := range []string{"openai/", "gpt-test", "HTTP", "gave up", "attempts"} {
		if strings.Contains(last.Error, label) {
			t.Errorf("the error %q shows the internal label %q", last.Error, label)
		}
	}
}
