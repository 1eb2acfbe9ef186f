package eventbus

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/redact"
)

func TestTopicValidation(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		ok    bool
	}{
		{"dotted", "sub_session.completed", true},
		{"single word", "heartbeat", true},
		{"max length", strings.Repeat("a", MaxTopicLen), true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", MaxTopicLen+1), false},
		{"space", "chat inbound", false},
		{"tab", "chat\tinbound", false},
		{"newline", "chat.inbound\n", false},
		{"control", "chat\x00inbound", false},
		{"invalid utf8", "chat.\xffinbound", false},
	}
	db, _ := tempDB(t)
	b := openBus(t, db, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := b.Publish(context.Background(), tc.topic, nil)
			if tc.ok && err != nil {
				t.Fatalf("Publish(%q) = %v, want nil", tc.topic, err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidTopic) {
				t.Fatalf("Publish(%q) = %v, want ErrInvalidTopic", tc.topic, err)
			}
			if !tc.ok {
				err := b.PublishBatch(context.Background(), []Message{{Topic: "ok"}, {Topic: tc.topic}})
				if !errors.Is(err, ErrInvalidTopic) {
					t.Fatalf("PublishBatch with %q = %v, want ErrInvalidTopic", tc.topic, err)
				}
			}
		})
	}
	st, err := b.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(3); st.Events != want {
		t.Fatalf("log holds %d events, want %d (invalid batches must insert nothing)", st.Events, want)
	}
}

func TestPayloadEncoding(t *testing.T) {
	type note struct {
		Text string `json:"text"`
		N    int    `json:"n"`
	}
	raw := json.RawMessage(`{"kept":  "as is"}`)
	tests := []struct {
		name    string
		payload any
		want    string
		wantErr bool
	}{
		{"struct", note{Text: "hi", N: 2}, `{"text":"hi","n":2}`, false},
		{"nil", nil, `null`, false},
		{"raw passes through", raw, `{"kept":  "as is"}`, false},
		{"raw pointer", &raw, `{"kept":  "as is"}`, false},
		{"nil raw", json.RawMessage(nil), `null`, false},
		{"string", "x", `"x"`, false},
		{"invalid raw", json.RawMessage(`{"a":`), "", true},
		{"unmarshalable", make(chan int), "", true},
	}
	db, _ := tempDB(t)
	b := openBus(t, db, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := b.PublishID(context.Background(), "test.payload", tc.payload)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidPayload) {
					t.Fatalf("err = %v, want ErrInvalidPayload", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			evs, err := b.Recent(context.Background(), "test.payload", id-1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].ID != id || string(evs[0].Payload) != tc.want {
				t.Fatalf("stored %+v, want id %d payload %s", evs, id, tc.want)
			}
		})
	}
}

// Test 1: each subscriber gets exactly its matching events, in order.
func TestSubscribersGetMatchingEventsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _ := tempDB(t)
		b := openBus(t, db, Options{})
		subs := map[string]*recorder{}
		prefixes := map[string]string{"chat": "chat.", "memory": "memory.", "all": ""}
		for name, prefix := range prefixes {
			subs[name] = newRecorder(100)
			if err := b.Subscribe(name, prefix, subs[name].handle); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string][]int64{}
		publish := func(topic string) {
			id := mustPublish(t, b, topic, map[string]string{"topic": topic})
			for name, prefix := range prefixes {
				if strings.HasPrefix(topic, prefix) {
					want[name] = append(want[name], id)
				}
			}
		}
		// Some events before Run (delivered once it starts), some after,
		// some in a batch.
		for _, topic := range []string{"chat.inbound", "memory.saved", "chat.outbound", "reminder.due"} {
			publish(topic)
		}
		stop := runBus(t, b)
		for i := range 40 {
			publish([]string{"chat.inbound", "memory.saved", "chatter.noise", "memory.deleted", "reflection.done"}[i%5])
		}
		var batch []Message
		for i := range 30 {
			batch = append(batch, Message{Topic: []string{"memory.batch", "chat.batch", "other"}[i%3], Payload: i})
		}
		if err := b.PublishBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		evs, err := b.Recent(context.Background(), "", 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[len(evs)-len(batch):] {
			for name, prefix := range prefixes {
				if strings.HasPrefix(ev.Topic, prefix) {
					want[name] = append(want[name], ev.ID)
				}
			}
		}
		for name, r := range subs {
			r.waitN(t, len(want[name]))
		}
		quiesce() // nothing more is delivered
		stop()
		for name, r := range subs {
			got := r.snapshot()
			if !slices.Equal(ids(got), want[name]) {
				t.Errorf("%s (prefix %q) got %v, want %v", name, prefixes[name], ids(got), want[name])
			}
			for _, d := range got {
				if d.Attempt != 1 || !strings.HasPrefix(d.Topic, prefixes[name]) {
					t.Errorf("%s: unexpected delivery %+v", name, d)
				}
			}
		}
		st, err := b.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Subscribers {
			if s.Backlog != 0 || !s.Registered || s.DeadLetters != 0 {
				t.Errorf("stats of %s: %+v", s.Name, s)
			}
		}
	})
}

// Test 2: a handler failing twice is retried with backoff; the next event
// waits for it.
func TestRetryWithBackoffKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _ := tempDB(t)
		const base, maxB = time.Second, time.Minute
		b := openBus(t, db, Options{BaseBackoff: base, MaxBackoff: maxB})
		type call struct {
			delivery
			at time.Time
		}
		var calls []call
		r := newRecorder(10)
		r.fn = func(ctx context.Context, ev extension.Event) error {
			calls = append(calls, call{delivery{ev.ID, ev.Topic, ev.Attempt}, time.Now()})
			if ev.Topic == "flaky" && ev.Attempt < 3 {
				return errors.New("not yet")
			}
			return nil
		}
		if err := b.Subscribe("s", "", r.handle); err != nil {
			t.Fatal(err)
		}
		runBus(t, b)
		start := time.Now()
		first := mustPublish(t, b, "flaky", nil)
		second := mustPublish(t, b, "steady", nil)
		r.waitN(t, 2)
		want := []delivery{{first, "flaky", 1}, {first, "flaky", 2}, {first, "flaky", 3}, {second, "steady", 1}}
		got := make([]delivery, len(calls))
		for i, c := range calls {
			got[i] = c.delivery
		}
		if !slices.Equal(got, want) {
			t.Fatalf("deliveries %s, want %s", fmtDeliveries(got), fmtDeliveries(want))
		}
		// Waits with equal jitter: attempt n waits within [d/2, d],
		// d = base·2^(n-1). "At once" allows for SQLite's busy handler:
		// when the publisher and the dispatcher write at the same moment,
		// one sleeps 1, 2, 5… ms, and in the bubble that sleep is on the
		// clock (1 run in ~150 delivered 1 ms late); it stays far below
		// any backoff (base/2).
		const busySlack = 100 * time.Millisecond
		if late := calls[0].at.Sub(start); late > busySlack {
			t.Errorf("first delivery after %v, want immediately", late)
		}
		for i, d := range []time.Duration{base, 2 * base} {
			wait := calls[i+1].at.Sub(calls[i].at)
			if wait < d/2 || wait > d+busySlack {
				t.Errorf("wait before attempt %d = %v, want within [%v, %v]", i+2, wait, d/2, d)
			}
		}
		if late := calls[3].at.Sub(calls[2].at); late > busySlack {
			t.Errorf("next event delivered %v after the retried one succeeded, want at once", late)
		}
	})
}

func TestBackoffBounds(t *testing.T) {
	b := &Bus{opts: Options{BaseBackoff: 500 * time.Millisecond, MaxBackoff: 5 * time.Minute}.withDefaults()}
	tests := []struct {
		name    string
		attempt int
		max     time.Duration
	}{
		{"first", 1, 500 * time.Millisecond},
		{"second", 2, time.Second},
		{"fifth", 5, 8 * time.Second},
		{"capped", 12, 5 * time.Minute},
		{"far past cap", 200, 5 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				d := b.backoff(tc.attempt)
				if d < tc.max/2 || d > tc.max {
					t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tc.attempt, d, tc.max/2, tc.max)
				}
			}
		})
	}
}

// Tests 3 and 4: failures (error, panic, timeout) are retried; an event
// failing every time is dead-lettered, the next one is delivered, and
// Requeue redelivers the dead letter.
func TestFailuresDeadLetterAndRequeue(t *testing.T) {
	fail := map[string]func(ctx context.Context) error{
		"error": func(context.Context) error { return errors.New("boom") },
		"panic": func(context.Context) error { panic("handler exploded") },
		"timeout": func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		},
	}
	wantErr := map[string]string{
		"error":   "boom",
		"panic":   "handler panicked: handler exploded",
		"timeout": "handler timed out after 5s",
	}
	for _, mode := range []string{"error", "panic", "timeout"} {
		t.Run(mode+" then success", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db, _ := tempDB(t)
				b := openBus(t, db, Options{MaxAttempts: 3, HandlerTimeout: 5 * time.Second})
				r := newRecorder(10)
				r.fn = func(ctx context.Context, ev extension.Event) error {
					if ev.Attempt == 1 {
						return fail[mode](ctx)
					}
					return nil
				}
				if err := b.Subscribe("s", "", r.handle); err != nil {
					t.Fatal(err)
				}
				runBus(t, b)
				id := mustPublish(t, b, "job.run", nil)
				r.waitN(t, 1)
				want := []delivery{{id, "job.run", 1}, {id, "job.run", 2}}
				if got := r.snapshot(); !slices.Equal(got, want) {
					t.Fatalf("deliveries %s, want %s", fmtDeliveries(got), fmtDeliveries(want))
				}
				dls, err := b.DeadLetters(context.Background(), "s", 0)
				if err != nil || len(dls) != 0 {
					t.Fatalf("dead letters %+v, %v; want none", dls, err)
				}
			})
		})
		t.Run(mode+" poison", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db, _ := tempDB(t)
				b := openBus(t, db, Options{MaxAttempts: 3, HandlerTimeout: 5 * time.Second})
				var healed atomic.Bool
				r := newRecorder(10)
				r.fn = func(ctx context.Context, ev extension.Event) error {
					if ev.Topic == "poison" && !healed.Load() {
						return fail[mode](ctx)
					}
					return nil
				}
				if err := b.Subscribe("s", "", r.handle); err != nil {
					t.Fatal(err)
				}
				runBus(t, b)
				poison := mustPublish(t, b, "poison", map[string]int{"n": 1})
				next := mustPublish(t, b, "fine", nil)
				if d := r.waitN(t, 1); d[0].ID != next {
					t.Fatalf("delivered %+v, want event %d", d, next)
				}
				quiesce() // the acknowledgement is written after the handler returns
				want := []delivery{{poison, "poison", 1}, {poison, "poison", 2}, {poison, "poison", 3}, {next, "fine", 1}}
				if got := r.snapshot(); !slices.Equal(got, want) {
					t.Fatalf("deliveries %s, want %s", fmtDeliveries(got), fmtDeliveries(want))
				}
				dls, err := b.DeadLetters(context.Background(), "", 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(dls) != 1 || dls[0].Subscriber != "s" || dls[0].Event.ID != poison || dls[0].Attempts != 3 ||
					dls[0].Event.Topic != "poison" || string(dls[0].Event.Payload) != `{"n":1}` ||
					!strings.Contains(dls[0].Error, wantErr[mode]) {
					t.Fatalf("dead letters %+v, want event %d after 3 attempts with %q", dls, poison, wantErr[mode])
				}
				st, err := b.Stats(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if s := st.Subscribers[0]; s.DeadLetters != 1 || s.Cursor != next || s.Backlog != 0 {
					t.Fatalf("stats %+v", s)
				}

				if err := b.Requeue(context.Background(), "s", next); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Requeue of a delivered event = %v, want ErrNotFound", err)
				}
				healed.Store(true)
				if err := b.Requeue(context.Background(), "s", poison); err != nil {
					t.Fatal(err)
				}
				if d := r.waitN(t, 1); d[0] != (delivery{poison, "poison", 1}) {
					t.Fatalf("requeued delivery %+v, want event %d attempt 1", d, poison)
				}
				quiesce()
				if dls, err := b.DeadLetters(context.Background(), "s", 0); err != nil || len(dls) != 0 {
					t.Fatalf("dead letters after requeue %+v, %v; want none", dls, err)
				}
				if st, err := b.Stats(context.Background()); err != nil || st.Subscribers[0].Requeued != 0 {
					t.Fatalf("stats after requeue %+v, %v", st, err)
				}
			})
		})
	}
}

func TestRequeueFailingAgainDeadLettersAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _ := tempDB(t)
		b := openBus(t, db, Options{MaxAttempts: 2})
		r := newRecorder(10)
		r.fn = func(ctx context.Context, ev extension.Event) error {
			if ev.Topic == "poison" {
				return errors.New("still broken")
			}
			return nil
		}
		if err := b.Subscribe("s", "", r.handle); err != nil {
			t.Fatal(err)
		}
		runBus(t, b)
		poison := mustPublish(t, b, "poison", nil)
		mustPublish(t, b, "fine", nil)
		r.waitN(t, 1)
		if err := b.Requeue(context.Background(), "s", poison); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// The dispatcher is now waiting out the requeued event's backoff;
		// let it finish.
		for {
			dls, err := b.DeadLetters(context.Background(), "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(dls) == 1 {
				if dls[0].Event.ID != poison || dls[0].Attempts != 2 || dls[0].Error != "still broken" {
					t.Fatalf("dead letter %+v", dls[0])
				}
				break
			}
			<-time.After(time.Minute) // fake time: advances to the backoff timer
			synctest.Wait()
		}
		var attempts []int
		for _, d := range r.snapshot() {
			if d.ID == poison {
				attempts = append(attempts, d.Attempt)
			}
		}
		if want := []int{1, 2, 1, 2}; !slices.Equal(attempts, want) {
			t.Fatalf("poison attempts %v, want %v", attempts, want)
		}
	})
}

// Test 5: close the bus mid-stream and reopen on the same file: the rest is
// delivered, and the interrupted delivery continues its attempt count.
func TestRestartRecovery(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reverie.db")
	const total = 20
	var published []int64
	var firstRun []delivery
	func() {
		db := openDB(t, file)
		b := openBus(t, db, Options{})
		r := newRecorder(total)
		stuck := make(chan struct{})
		r.fn = func(ctx context.Context, ev extension.Event) error {
			if ev.ID > published[4] {
				close(stuck)
				<-ctx.Done() // stuck mid-delivery until shutdown
				return ctx.Err()
			}
			return nil
		}
		if err := b.Subscribe("s", "work.", r.handle); err != nil {
			t.Fatal(err)
		}
		for i := range total {
			published = append(published, mustPublish(t, b, "work.item", i))
			mustPublish(t, b, "noise", i)
		}
		stop := runBus(t, b)
		<-stuck
		stop()
		firstRun = r.snapshot()
		db.Close()
	}()
	if want := published[:6]; !slices.Equal(ids(firstRun), want) {
		t.Fatalf("first run delivered %v, want %v", ids(firstRun), want)
	}

	db := openDB(t, file)
	b := openBus(t, db, Options{})
	r := newRecorder(total)
	if err := b.Subscribe("s", "work.", r.handle); err != nil {
		t.Fatal(err)
	}
	runBus(t, b)
	got := r.waitN(t, total-5)
	if !slices.Equal(ids(got), published[5:]) {
		t.Fatalf("after restart delivered %v, want %v", ids(got), published[5:])
	}
	if got[0].Attempt != 2 {
		t.Errorf("interrupted event redelivered with attempt %d, want 2", got[0].Attempt)
	}
	for _, d := range got[1:] {
		if d.Attempt != 1 {
			t.Errorf("event %d delivered with attempt %d, want 1", d.ID, d.Attempt)
		}
	}
}

// A clean stop withdraws the next delivery recorded in advance: after a
// restart the next event is attempt 1.
func TestCleanRestartKeepsAttemptCount(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reverie.db")
	for run := 1; run <= 2; run++ {
		db := openDB(t, file)
		b := openBus(t, db, Options{})
		r := newRecorder(1)
		if err := b.Subscribe("s", "", r.handle); err != nil {
			t.Fatal(err)
		}
		stop := runBus(t, b)
		id := mustPublish(t, b, "tick", run)
		if d := r.waitN(t, 1); d[0] != (delivery{id, "tick", 1}) {
			t.Fatalf("run %d delivered %+v, want event %d attempt 1", run, d[0], id)
		}
		stop()
		st, err := b.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Subscribers[0]; s.Cursor != id || s.InFlightAttempts != 0 {
			t.Fatalf("run %d: stats after stop %+v", run, s)
		}
		var inflight, attempts int64
		if err := db.QueryRow(`SELECT inflight_id, inflight_attempts FROM event_cursors WHERE subscriber = 's'`).Scan(&inflight, &attempts); err != nil {
			t.Fatal(err)
		}
		if inflight != 0 || attempts != 0 {
			t.Fatalf("run %d: cursor keeps in-flight record (%d, %d) after a clean stop", run, inflight, attempts)
		}
		db.Close()
	}
}

// A poison event that takes the process down on every delivery is still
// dead-lettered: attempts are persisted before each delivery.
func TestCrashLoopDeadLetters(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reverie.db")
	const maxAttempts = 3
	var poison, next int64
	for run := 1; run <= maxAttempts+1; run++ {
		db := openDB(t, file)
		b := openBus(t, db, Options{MaxAttempts: maxAttempts})
		r := newRecorder(10)
		crashed := make(chan struct{})
		r.fn = func(ctx context.Context, ev extension.Event) error {
			if ev.ID == poison {
				// Simulate the process dying inside the handler:
				// hold the delivery until the bus is torn down.
				close(crashed)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
		if err := b.Subscribe("s", "", r.handle); err != nil {
			t.Fatal(err)
		}
		if run == 1 {
			poison = mustPublish(t, b, "poison", nil)
			next = mustPublish(t, b, "fine", nil)
		}
		stop := runBus(t, b)
		if run <= maxAttempts {
			<-crashed
			stop()
			if got := r.snapshot(); len(got) != 1 || got[0] != (delivery{poison, "poison", run}) {
				t.Fatalf("run %d: deliveries %s, want poison attempt %d", run, fmtDeliveries(got), run)
			}
		} else {
			if d := r.waitN(t, 1); d[0].ID != next {
				t.Fatalf("final run delivered %+v, want %d", d, next)
			}
			stop()
			if got := r.snapshot(); len(got) != 1 {
				t.Fatalf("final run deliveries %s, want only event %d", fmtDeliveries(got), next)
			}
			dls, err := b.DeadLetters(context.Background(), "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(dls) != 1 || dls[0].Event.ID != poison || dls[0].Attempts != maxAttempts || dls[0].Error != errInterrupted {
				t.Fatalf("dead letters %+v", dls)
			}
		}
		db.Close()
	}
}

func TestNewSubscriberStartsAtEndOfLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _ := tempDB(t)
		b := openBus(t, db, Options{})
		mustPublish(t, b, "old", nil)
		mustPublish(t, b, "old", nil)
		r := newRecorder(10)
		if err := b.Subscribe("late", "", r.handle); err != nil {
			t.Fatal(err)
		}
		before := mustPublish(t, b, "before.run", nil) // after Subscribe, before Run
		runBus(t, b)
		after := mustPublish(t, b, "after.run", nil)
		quiesce()
		if got, want := ids(r.snapshot()), []int64{before, after}; !slices.Equal(got, want) {
			t.Fatalf("delivered %v, want %v (no history)", got, want)
		}
	})
}

func TestSubscribeErrors(t *testing.T) {
	db, _ := tempDB(t)
	b := openBus(t, db, Options{})
	h := func(context.Context, extension.Event) error { return nil }
	r := newRecorder(1)
	if err := b.Subscribe("a", "", r.handle); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		sub    string
		prefix string
		h      extension.Handler
		want   error
	}{
		{"duplicate", "a", "", h, ErrDuplicateSubscriber},
		{"empty name", "", "", h, ErrInvalidSubscriber},
		{"nil handler", "b", "", nil, ErrInvalidSubscriber},
		{"bad prefix", "c", "a b", h, ErrInvalidTopic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := b.Subscribe(tc.sub, tc.prefix, tc.h); !errors.Is(err, tc.want) {
				t.Fatalf("Subscribe = %v, want %v", err, tc.want)
			}
		})
	}
	stop := runBus(t, b)
	mustPublish(t, b, "x", nil)
	r.waitN(t, 1) // Run has started
	if err := b.Subscribe("late", "", h); !errors.Is(err, ErrRunning) {
		t.Fatalf("Subscribe after Run = %v, want ErrRunning", err)
	}
	if err := b.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
	stop()
	if err := b.Forget(context.Background(), "a"); !errors.Is(err, ErrRegistered) {
		t.Fatalf("Forget of a registered subscriber = %v, want ErrRegistered", err)
	}
}

// Test 7: two watchers; a slow one with buffer 1 never blocks Publish.
func TestWatchFanOut(t *testing.T) {
	db, _ := tempDB(t)
	b := openBus(t, db, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustPublish(t, b, "chat.before", nil) // before Watch: not seen
	fast := b.Watch(ctx, "", 100)
	chatOnly := b.Watch(ctx, "chat.", 100)
	slow := b.Watch(ctx, "", 1) // never read until the end
	var want, wantChat []int64
	for i := range 20 {
		topic := []string{"chat.inbound", "memory.saved"}[i%2]
		id := mustPublish(t, b, topic, i)
		want = append(want, id)
		if i%2 == 0 {
			wantChat = append(wantChat, id)
		}
	}
	batch := make([]Message, 20)
	for i := range batch {
		batch[i] = Message{Topic: "chat.batch", Payload: i}
	}
	if err := b.PublishBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	last, err := b.Recent(context.Background(), "chat.batch", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range last {
		want = append(want, ev.ID)
		wantChat = append(wantChat, ev.ID)
	}
	recv := func(ch <-chan extension.Event, n int) []int64 {
		var got []int64
		for range n {
			ev := <-ch
			got = append(got, ev.ID)
			if ev.Attempt != 0 || len(ev.Payload) == 0 || ev.Time.IsZero() {
				t.Errorf("watched event %+v", ev)
			}
		}
		return got
	}
	if got := recv(fast, len(want)); !slices.Equal(got, want) {
		t.Errorf("fast watcher got %v, want %v", got, want)
	}
	if got := recv(chatOnly, len(wantChat)); !slices.Equal(got, wantChat) {
		t.Errorf("chat watcher got %v, want %v", got, wantChat)
	}
	st, err := b.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if wantDropped := int64(len(want) - 1); st.WatchDropped != wantDropped {
		t.Errorf("dropped %d, want %d", st.WatchDropped, wantDropped)
	}
	cancel()
	for _, ch := range []<-chan extension.Event{fast, chatOnly} {
		if ev, ok := <-ch; ok {
			t.Errorf("received %+v after cancel, want closed channel", ev)
		}
	}
	if got := recv(slow, 1); got[0] != want[0] {
		t.Errorf("slow watcher kept %v, want the first event %d", got, want[0])
	}
	if _, ok := <-slow; ok {
		t.Error("slow watcher not closed after cancel")
	}
	if _, ok := <-b.Watch(ctx, "", 1); ok {
		t.Error("Watch with a done context returned an open channel")
	}
}

// Test 8: idle costs nothing — no queries and no handler calls while a
// day of fake time passes with nothing to deliver.
func TestIdleDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, queries := countingDB(t, filepath.Join(t.TempDir(), "reverie.db"))
		b := openBus(t, db, Options{})
		r := newRecorder(10)
		for _, name := range []string{"a", "b", "c"} {
			if err := b.Subscribe(name, name+".", r.handle); err != nil {
				t.Fatal(err)
			}
		}
		runBus(t, b)
		synctest.Wait() // dispatchers loaded their cursors and found nothing
		before := queries.Load()
		<-time.After(24 * time.Hour) // fake time
		synctest.Wait()
		if n := queries.Load() - before; n != 0 {
			t.Fatalf("%d statements ran while idle for 24h, want 0", n)
		}
		if calls := r.snapshot(); len(calls) != 0 {
			t.Fatalf("handler called while idle: %+v", calls)
		}
		// A publish wakes only the matching subscriber.
		before = queries.Load()
		id := mustPublish(t, b, "b.ping", nil)
		quiesce()
		if got := r.snapshot(); len(got) != 1 || got[0].ID != id {
			t.Fatalf("deliveries %+v, want event %d", got, id)
		}
		// Publish (1) + the woken dispatcher: read (end of log and events),
		// record the attempt, acknowledge (3).
		if n := queries.Load() - before; n != 4 {
			t.Errorf("%d statements for one publish and delivery, want 4", n)
		}
	})
}

// Test 9: Run returns nil after cancel with every goroutine gone, also
// while handlers and backoffs are in progress.
func TestRunStopsCleanly(t *testing.T) {
	before := goleak.IgnoreCurrent()
	db, _ := tempDB(t)
	b := openBus(t, db, Options{BaseBackoff: time.Hour, MaxBackoff: time.Hour})
	inHandler := make(chan struct{})
	failed := make(chan struct{}, 1)
	blocking := func(ctx context.Context, ev extension.Event) error {
		close(inHandler)
		<-ctx.Done()
		return ctx.Err()
	}
	failing := func(ctx context.Context, ev extension.Event) error {
		select {
		case failed <- struct{}{}:
		default:
		}
		return errors.New("retry in an hour")
	}
	idle := func(context.Context, extension.Event) error { return nil }
	for name, h := range map[string]extension.Handler{"blocking": blocking, "failing": failing, "idle": idle} {
		if err := b.Subscribe(name, name+".", h); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	mustPublish(t, b, "blocking.x", nil)
	mustPublish(t, b, "failing.x", nil)
	watch := b.Watch(ctx, "", 10)
	<-inHandler
	<-failed
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	for range watch {
	}
	goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

func TestRecentAndPrune(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _ := tempDB(t)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var offset atomic.Int64
		clock := func() time.Time { return t0.Add(time.Duration(offset.Load())) }
		advance := func(d time.Duration) { offset.Add(int64(d)) }
		b := openBus(t, db, Options{Retention: 24 * time.Hour, Now: clock, MaxAttempts: 1})
		r := newRecorder(100)
		r.fn = func(ctx context.Context, ev extension.Event) error {
			if ev.Topic == "chat.bad" {
				return errors.New("bad")
			}
			return nil
		}
		if err := b.Subscribe("chat", "chat.", r.handle); err != nil {
			t.Fatal(err)
		}
		var all []int64
		for i := range 10 {
			all = append(all, mustPublish(t, b, []string{"chat.in", "memory.x"}[i%2], i))
		}
		bad := mustPublish(t, b, "chat.bad", nil)
		runBus(t, b)
		quiesce()

		got, err := b.Recent(context.Background(), "chat.", 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{all[0], all[2], all[4]}; !slices.Equal(eventIDs(got), want) {
			t.Fatalf("Recent page 1 = %v, want %v", eventIDs(got), want)
		}
		got, err = b.Recent(context.Background(), "chat.", got[2].ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{all[6], all[8], bad}; !slices.Equal(eventIDs(got), want) {
			t.Fatalf("Recent page 2 = %v, want %v", eventIDs(got), want)
		}
		if !got[0].Time.Equal(t0) || string(got[0].Payload) != "6" {
			t.Fatalf("Recent event %+v", got[0])
		}

		// A subscriber that has not caught up holds its events back.
		advance(2 * time.Hour)
		lagging := mustPublish(t, b, "memory.late", nil)
		if _, err := db.Exec(`INSERT INTO event_cursors (subscriber, prefix, last_id, updated_at) VALUES ('gone', 'memory.', ?, 0)`, all[5]); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Prune(context.Background()); err != nil || n != 0 {
			t.Fatalf("Prune inside retention = %d, %v; want 0", n, err)
		}
		advance(48 * time.Hour)
		n, err := b.Prune(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		left, err := b.Recent(context.Background(), "", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		// Kept: memory events after gone's cursor, and the dead letter.
		want := []int64{all[7], all[9], bad, lagging}
		if !slices.Equal(eventIDs(left), want) || n != int64(len(all)+2-len(want)) {
			t.Fatalf("after Prune (deleted %d) the log holds %v, want %v", n, eventIDs(left), want)
		}
		if err := b.Forget(context.Background(), "gone"); err != nil {
			t.Fatal(err)
		}
		if err := b.Forget(context.Background(), "gone"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Forget = %v, want ErrNotFound", err)
		}
		if _, err := b.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		left, _ = b.Recent(context.Background(), "", 0, 100)
		if !slices.Equal(eventIDs(left), []int64{bad}) {
			t.Fatalf("after Forget and Prune the log holds %v, want only the dead letter %d", eventIDs(left), bad)
		}
		// ids are never reused after pruning.
		if id := mustPublish(t, b, "chat.new", nil); id <= lagging {
			t.Fatalf("new id %d reuses a pruned id (<= %d)", id, lagging)
		}
	})
}

func eventIDs(evs []extension.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// A payload holding a registered secret is stored, watched and delivered
// with [REDACTED], through Publish and PublishBatch.
func TestPayloadSecretsAreRedacted(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	secrets := &redact.Secrets{}
	secrets.Add(key)
	db, _ := tempDB(t)
	b := openBus(t, db, Options{Secrets: secrets})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := b.Watch(ctx, "", 10)
	mustPublish(t, b, "agent.turn_failed", map[string]string{"error": "HTTP 401: Incorrect API key provided: " + key})
	mustPublish(t, b, "raw", json.RawMessage(`{"url":"https://x/?key=`+key+`"}`))
	if err := b.PublishBatch(context.Background(), []Message{{Topic: "batch", Payload: []string{key}}}); err != nil {
		t.Fatal(err)
	}
	var stored []string
	rows, err := db.Query(`SELECT payload FROM events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, p)
	}
	want := []string{`{"error":"HTTP 401: Incorrect API key provided: [REDACTED]"}`, `{"url":"https://x/?key=[REDACTED]"}`, `["[REDACTED]"]`}
	if !slices.Equal(stored, want) {
		t.Errorf("stored %q\nwant %q", stored, want)
	}
	for i := range want {
		if ev := <-watch; string(ev.Payload) != want[i] {
			t.Errorf("watched %s, want %s", ev.Payload, want[i])
		}
	}
}
