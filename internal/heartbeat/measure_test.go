package heartbeat

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/scheduler"
)

// TestMeasureDays logs the scout tokens the heartbeat spends over a
// simulated idle day and a busy day, with the default settings (hourly,
// quiet 23:00–07:00). Tokens are counted with the real tokenizer (gpt-4o's)
// over the exact requests; the answer is the verdict JSON. Run it with
//
//	REVERIE_MEASURE=1 go test -run TestMeasureDays -v ./internal/heartbeat
func TestMeasureDays(t *testing.T) {
	if os.Getenv("REVERIE_MEASURE") == "" {
		t.Skip("set REVERIE_MEASURE=1 to measure")
	}
	counter := prompt.NewCounter("gpt-4o")
	tokens := func(s *scout) (calls, in, out int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.requests {
			in += counter.Count(r.System) + counter.Count(r.Messages[0].Text()) + counter.Count(string(r.ResponseFormat.Schema))
			b, _ := json.Marshal(Verdict{Reason: "Nothing is due soon and nothing failed."})
			out += counter.Count(string(b))
		}
		return len(s.requests), in, out
	}
	synctest.Test(t, func(t *testing.T) {
		loc, _ := time.LoadLocation("Europe/Berlin")
		advance(time.Until(time.Date(2026, 5, 4, 0, 0, 0, 0, loc)))
		w := newWorld(t, time.Hour, "23:00", "07:00")
		ctx := context.Background()
		for _, it := range []string{"Finish the tax return by Friday", "Plan the trip to Lisbon", "Ask Anna about the contract"} {
			if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: it, Priority: 3}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.sched.Add(ctx, scheduler.NewTask{Text: "stand-up", Thread: "web:main",
			Spec: scheduler.Spec{Kind: scheduler.Weekly, Weekdays: []string{"sat"}, Time: "09:30"}}); err != nil {
			t.Fatal(err)
		}
		advance(time.Hour) // baseline
		// Idle day: chat traffic only.
		for range 24 {
			advance(time.Hour)
			if err := w.bus.Publish(ctx, "message.received", map[string]string{"thread": "web:main"}); err != nil {
				t.Fatal(err)
			}
		}
		calls, in, out := tokens(w.scout)
		t.Logf("idle day: %d scout calls, %d input + %d output tokens", calls, in, out)

		// Busy day: four pulse changes, a failed turn, a task due soon.
		w.scout.mu.Lock()
		w.scout.requests = nil
		w.scout.mu.Unlock()
		day := time.Date(2026, 5, 5, 0, 0, 0, 0, loc)
		at := func(h, m int) {
			advance(time.Until(day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)))
		}
		at(8, 10)
		if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Book the Lisbon hotel", Priority: 2}); err != nil {
			t.Fatal(err)
		}
		at(10, 40)
		if _, err := w.pulse.Complete(ctx, 2); err != nil {
			t.Fatal(err)
		}
		at(13, 5)
		if err := w.bus.Publish(ctx, "turn.failed", map[string]string{"thread": "web:main", "error": "provider timeout"}); err != nil {
			t.Fatal(err)
		}
		at(15, 20)
		if _, err := w.sched.Add(ctx, scheduler.NewTask{Text: "call the plumber", Thread: "web:main",
			Spec: scheduler.Spec{Kind: scheduler.Once, At: day.Add(16*time.Hour + 30*time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		at(18, 15)
		if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Renew the passport", Priority: 1}); err != nil {
			t.Fatal(err)
		}
		at(24, 0)
		calls, in, out = tokens(w.scout)
		t.Logf("busy day: %d scout calls, %d input + %d output tokens (%d per call)", calls, in, out, (in+out)/max(calls, 1))
	})
}
