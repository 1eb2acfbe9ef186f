package heartbeat

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// scout is a fake scout model that answers with the queued verdicts and
// counts its calls.
type scout struct {
	mu       sync.Mutex
	calls    int
	requests []llm.Request
	verdicts []Verdict
	fail     error
}

func (s *scout) Generate(ctx context.Context, req llm.Request, _ llm.StreamFunc) (llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.requests = append(s.requests, req)
	if s.fail != nil {
		return llm.Response{}, s.fail
	}
	v := Verdict{Reason: "all fine"}
	if len(s.verdicts) > 0 {
		v, s.verdicts = s.verdicts[0], s.verdicts[1:]
	}
	b, _ := json.Marshal(v)
	return llm.Response{Message: llm.AssistantText(string(b)), Usage: llm.Usage{InputTokens: 300, OutputTokens: 20}}, nil
}

func (s *scout) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

type escalations struct {
	mu   sync.Mutex
	got  []string
	last chat.ThreadID
}

func (e *escalations) EnqueueSystemEvent(ctx context.Context, thread chat.ThreadID, text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, text)
	e.last = thread
	return nil
}

func (e *escalations) n() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.got)
}

// world is a heartbeat on the real scheduler, pulse store and event bus.
type world struct {
	db    *sql.DB
	sched *scheduler.Scheduler
	pulse *pulse.Store
	bus   *eventbus.Bus
	scout *scout
	esc   *escalations
	hb    *Heartbeat
	stop  func()
}

func newWorld(t *testing.T, interval time.Duration, quietStart, quietEnd string) *world {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	loc, _ := time.LoadLocation("Europe/Berlin")
	w := &world{db: db, scout: &scout{}, esc: &escalations{}}
	if w.bus, err = eventbus.Open(ctx, db, eventbus.Options{}); err != nil {
		t.Fatal(err)
	}
	if w.pulse, err = pulse.Open(ctx, db, pulse.Options{}); err != nil {
		t.Fatal(err)
	}
	if w.sched, err = scheduler.Open(ctx, scheduler.Options{DB: db, Location: loc, Events: w.bus, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	w.hb, err = New(ctx, Options{DB: db, Model: w.scout, Escalate: w.esc, Pulse: w.pulse, Tasks: w.sched, Events: w.bus,
		Interval: interval, QuietStart: quietStart, QuietEnd: quietEnd, Location: loc,
		MainThread: func(context.Context) chat.ThreadID { return "web:main" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sched.RegisterJob(ctx, scheduler.ExtensionJob(Owner, w.hb.ScheduledJobs()[0])); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.sched.Run(rctx) }()
	var once sync.Once
	w.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			w.sched.Close()
		})
	}
	t.Cleanup(w.stop)
	return w
}

func (w *world) receipts(t *testing.T) []scheduler.Receipt {
	t.Helper()
	rs, err := w.sched.Receipts(context.Background(), "job:"+JobName, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// A simulated idle day — ordinary chat events on the bus, pulse and tasks
// unchanged — costs zero model calls and zero tokens.
func TestIdleDayMakesNoModelCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		advance(time.Until(time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)))
		w := newWorld(t, 5*time.Minute, "", "")
		ctx := context.Background()
		if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Finish the tax return", Priority: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.sched.Add(ctx, scheduler.NewTask{Text: "monthly report", Thread: "web:main",
			Spec: scheduler.Spec{Kind: scheduler.Monthly, Day: 20, Time: "09:00"}}); err != nil {
			t.Fatal(err)
		}
		for i := range 24 {
			advance(time.Hour)
			if err := w.bus.Publish(ctx, "message.received", map[string]int{"n": i}); err != nil {
				t.Fatal(err)
			}
		}
		if n := w.scout.count(); n != 0 {
			t.Fatalf("idle day: %d scout calls, want 0", n)
		}
		rs := w.receipts(t)
		if len(rs) != 24*12 {
			t.Errorf("%d heartbeat receipts, want %d", len(rs), 24*12)
		}
		tokens := 0
		for _, r := range rs {
			tokens += r.Usage.Total()
			if r.Outcome != scheduler.OutcomeFired {
				t.Errorf("receipt %+v", r)
			}
		}
		if tokens != 0 || !strings.Contains(rs[0].Reason, "no model call") || !strings.Contains(rs[len(rs)-1].Reason, "baseline") {
			t.Errorf("tokens %d, reasons %q … %q", tokens, rs[len(rs)-1].Reason, rs[0].Reason)
		}
		// A restart is not a change.
		w.stop()
		w2 := newWorldOn(t, w)
		advance(time.Hour)
		if n := w2.scout.count(); n != 0 {
			t.Errorf("after a restart: %d scout calls", n)
		}
	})
}

// newWorldOn restarts the scheduler and heartbeat on w's database.
func newWorldOn(t *testing.T, w *world) *world {
	t.Helper()
	ctx := context.Background()
	loc, _ := time.LoadLocation("Europe/Berlin")
	w2 := &world{db: w.db, pulse: w.pulse, bus: w.bus, scout: &scout{}, esc: &escalations{}}
	var err error
	if w2.sched, err = scheduler.Open(ctx, scheduler.Options{DB: w.db, Location: loc, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	if w2.hb, err = New(ctx, Options{DB: w.db, Model: w2.scout, Escalate: w2.esc, Pulse: w.pulse, Tasks: w2.sched, Events: w.bus,
		Interval: 5 * time.Minute, Location: loc}); err != nil {
		t.Fatal(err)
	}
	if err := w2.sched.RegisterJob(ctx, scheduler.ExtensionJob(Owner, w2.hb.ScheduledJobs()[0])); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w2.sched.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done; w2.sched.Close() })
	return w2
}

// A changed pulse item costs exactly one scout call; the scout's "no"
// escalates nothing, its "yes" escalates once to the main thread; a
// watched event (a failed turn) is a change too, an unwatched one is not.
func TestChangesAskTheScoutOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		advance(time.Until(time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)))
		w := newWorld(t, time.Hour, "", "")
		ctx := context.Background()
		advance(time.Hour) // baseline
		item, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Renew the passport before the trip", Priority: 1})
		if err != nil {
			t.Fatal(err)
		}
		advance(3 * time.Hour)
		if n := w.scout.count(); n != 1 {
			t.Fatalf("changed pulse item: %d scout calls, want 1", n)
		}
		req := w.scout.requests[0]
		if req.ResponseFormat == nil || !strings.Contains(req.Messages[0].Text(), "[P1] #1: Renew the passport") {
			t.Errorf("scout request %+v", req)
		}
		if w.esc.n() != 0 {
			t.Errorf("escalated without attention")
		}
		rs := w.receipts(t)
		if rs[2].Usage.Total() != 320 || !strings.Contains(rs[2].Reason, "nothing needs attention") {
			t.Errorf("receipt of the scout tick %+v", rs[2])
		}

		w.scout.mu.Lock()
		w.scout.verdicts = []Verdict{{Attention: true, Reason: "The trip is in 3 days and the passport is not renewed.", Nudge: "Remind the user."}}
		w.scout.mu.Unlock()
		prio := 1
		text := "Renew the passport (trip on Friday)"
		if _, err := w.pulse.Update(ctx, item.ID, pulse.Patch{Text: &text, Priority: &prio}); err != nil {
			t.Fatal(err)
		}
		advance(time.Hour)
		if n := w.scout.count(); n != 2 || w.esc.n() != 1 || w.esc.last != "web:main" || !strings.Contains(w.esc.got[0], "Remind the user.") {
			t.Fatalf("attention: %d calls, escalations %v to %s", n, w.esc.got, w.esc.last)
		}

		if err := w.bus.Publish(ctx, "message.replied", map[string]string{"x": "y"}); err != nil {
			t.Fatal(err)
		}
		advance(time.Hour)
		if n := w.scout.count(); n != 2 {
			t.Fatalf("unwatched event: %d scout calls", n)
		}
		if err := w.bus.Publish(ctx, "turn.failed", map[string]string{"error": "provider down"}); err != nil {
			t.Fatal(err)
		}
		advance(time.Hour)
		if n := w.scout.count(); n != 3 || !strings.Contains(w.scout.requests[2].Messages[0].Text(), "turn.failed") {
			t.Fatalf("watched event: %d scout calls", n)
		}
		advance(5 * time.Hour)
		if n := w.scout.count(); n != 3 {
			t.Errorf("quiet afterwards: %d scout calls", n)
		}
	})
}

// A failing scout leaves the state as it was: the next tick asks again. In
// quiet hours nothing runs.
func TestScoutFailureAndQuietHours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc, _ := time.LoadLocation("Europe/Berlin")
		advance(time.Until(time.Date(2026, 5, 4, 12, 0, 0, 0, loc)))
		w := newWorld(t, time.Hour, "22:00", "07:00")
		ctx := context.Background()
		advance(time.Hour)
		w.scout.mu.Lock()
		w.scout.fail = errors.New("scout offline")
		w.scout.mu.Unlock()
		if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Call the plumber"}); err != nil {
			t.Fatal(err)
		}
		advance(time.Hour)
		rs := w.receipts(t)
		if rs[0].Outcome != scheduler.OutcomeFailed || !strings.Contains(rs[0].Reason, "scout offline") {
			t.Fatalf("failed tick receipt %+v", rs[0])
		}
		w.scout.mu.Lock()
		w.scout.fail = nil
		w.scout.mu.Unlock()
		advance(time.Hour)
		if n := w.scout.count(); n != 2 {
			t.Fatalf("after the failure: %d calls, want 2 (the failed one and the retry)", n)
		}
		// 15:00 → next day 12:00: ticks from 22:00 to 06:00 are quiet.
		if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Late thought"}); err != nil {
			t.Fatal(err)
		}
		advance(time.Until(time.Date(2026, 5, 4, 21, 30, 0, 0, loc)))
		calls := w.scout.count()
		if _, err := w.pulse.Add(ctx, pulse.NewItem{Text: "Night thought"}); err != nil {
			t.Fatal(err)
		}
		advance(time.Until(time.Date(2026, 5, 5, 6, 30, 0, 0, loc)))
		if n := w.scout.count(); n != calls {
			t.Errorf("quiet hours: %d scout calls", n-calls)
		}
		advance(time.Hour) // 07:00 review picks up the night's change
		if n := w.scout.count(); n != calls+1 {
			t.Errorf("after quiet hours: %d scout calls, want 1", n-calls)
		}
		skipped := 0
		for _, r := range w.receipts(t) {
			if r.Outcome == scheduler.OutcomeSkipped && r.Reason == "quiet hours" {
				skipped++
			}
		}
		if skipped != 9 { // 22:00 … 06:00
			t.Errorf("%d quiet-hour receipts, want 9", skipped)
		}
	})
}

func TestQuiet(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := New(context.Background(), Options{DB: db, Model: &scout{}, Escalate: &escalations{}, QuietStart: "23:00", QuietEnd: "07:00"})
	if err != nil {
		t.Fatal(err)
	}
	for hm, want := range map[int]bool{22*60 + 59: false, 23 * 60: true, 3 * 60: true, 7 * 60: false, 12 * 60: false} {
		at := time.Date(2026, 1, 1, hm/60, hm%60, 0, 0, time.UTC)
		if got := h.Quiet(at); got != want {
			t.Errorf("Quiet(%s) = %v", at.Format("15:04"), got)
		}
	}
	for _, bad := range []Options{
		{DB: db, Model: &scout{}, Escalate: &escalations{}, QuietStart: "23:00"},
		{DB: db, Model: &scout{}, Escalate: &escalations{}, QuietStart: "25:00", QuietEnd: "07:00"},
		{DB: db, Escalate: &escalations{}},
	} {
		if _, err := New(context.Background(), bad); err == nil {
			t.Errorf("New(%+v) succeeded", bad)
		}
	}
}

type spawner struct{ reqs []workflow.SpawnRequest }

func (s *spawner) Spawn(_ context.Context, r workflow.SpawnRequest) (workflow.SpawnResult, error) {
	s.reqs = append(s.reqs, r)
	return workflow.SpawnResult{ID: "sub_1"}, nil
}

// Background work goes to a full-mode sub-session whose result reaches the
// main thread; a nudge for the user goes to the main agent.
func TestEscalationTargets(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	esc, sp := &escalations{}, &spawner{}
	h, err := New(context.Background(), Options{DB: db, Model: &scout{}, Escalate: esc, Worker: sp,
		MainThread: func(context.Context) chat.ThreadID { return "web:main" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.escalate(ctx, Verdict{Attention: true, Reason: "the flight price alert failed twice", Nudge: "Check the flight prices for Friday", Work: true}); err != nil {
		t.Fatal(err)
	}
	if len(sp.reqs) != 1 || sp.reqs[0].Mode != prompt.ModeFull || sp.reqs[0].Parent != "web:main" || sp.reqs[0].Objective != "Check the flight prices for Friday" {
		t.Fatalf("spawned %+v", sp.reqs)
	}
	if esc.n() != 0 {
		t.Fatal("background work also went to the main agent")
	}
	if err := h.escalate(ctx, Verdict{Attention: true, Reason: "passport", Nudge: "Remind the user", Work: false}); err != nil {
		t.Fatal(err)
	}
	if esc.n() != 1 || len(sp.reqs) != 1 {
		t.Fatalf("user nudge: %d escalations, %d spawns", esc.n(), len(sp.reqs))
	}
}
