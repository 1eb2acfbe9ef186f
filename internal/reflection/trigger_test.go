package reflection

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/workflow"
)

// stack is one life of the process: the database file opened, the event bus
// and the reflector built on it, both running (unless run is false: then
// the reflector is only subscribed, as between build and run).
type stack struct {
	db     *sql.DB
	bus    *eventbus.Bus
	r      *Reflector
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (f *fixture) start(t *testing.T, path string, run bool) *stack {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := eventbus.Open(ctx, db, eventbus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(ctx, Options{DB: db, DataDir: f.dir, Outcomes: f.outs, Tasks: f.tasks, Model: f.model(), Events: f.rec,
		Subscribe: bus.Subscribe})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	s := &stack{db: db, bus: bus, r: r, cancel: cancel}
	if run {
		s.wg.Go(func() { bus.Run(rctx) })
		s.wg.Go(func() { r.Run(rctx) })
	}
	return s
}

// stop ends the process: everything stops and the database is closed.
func (s *stack) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	s.wg.Wait()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

func (s *stack) publish(t *testing.T, topic string, n int) {
	t.Helper()
	for range n {
		if err := s.bus.Publish(context.Background(), topic, map[string]string{"session": "sub_x"}); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) failTask(id string, n int) {
	for range n {
		f.outs.add(workflow.Outcome{TaskID: id, Status: workflow.StateFailed, Error: "fetch failed", FinishedAt: time.Now()})
	}
}

// A failure burst seen before the process stopped runs its cycle after the
// restart, once, Debounce after it is read back.
func TestDurableTriggerSurvivesRestart(t *testing.T) {
	debounce := DefaultSettings().Debounce
	cases := []struct {
		name string
		// before runs in the first life, which is then stopped.
		before func(t *testing.T, f *fixture, path string)
		// cycles ran in the first life, and ran after the restart.
		cyclesBefore, cyclesAfter int
	}{
		{"burst handled, stopped before the debounce", func(t *testing.T, f *fixture, path string) {
			s := f.start(t, path, true)
			s.publish(t, workflow.TopicFailed, 3)
			synctest.Wait()
			time.Sleep(debounce / 2)
			synctest.Wait()
			s.stop(t)
		}, 0, 1},
		{"burst published, stopped before delivery", func(t *testing.T, f *fixture, path string) {
			s := f.start(t, path, false)
			s.publish(t, workflow.TopicTimeout, 1)
			s.publish(t, workflow.TopicFailed, 2)
			s.stop(t)
		}, 0, 1},
		{"stopped during the cycle", func(t *testing.T, f *fixture, path string) {
			s := f.start(t, path, true)
			f.mu.Lock()
			f.block = true // the analysis hangs until the stop
			f.mu.Unlock()
			s.publish(t, workflow.TopicFailed, 3)
			time.Sleep(debounce + time.Second)
			synctest.Wait()
			s.stop(t)
			f.mu.Lock()
			f.block = false
			f.mu.Unlock()
		}, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, time.Now)
				path := filepath.Join(t.TempDir(), "reverie.db")
				f.failTask("t_1", 3)
				c.before(t, f, path)
				if got := f.outs.cycles(); got != c.cyclesBefore {
					t.Fatalf("%d cycles before the restart, want %d", got, c.cyclesBefore)
				}
				s := f.start(t, path, true)
				defer s.stop(t)
				synctest.Wait()
				time.Sleep(debounce + time.Second)
				synctest.Wait()
				if got := f.outs.cycles() - c.cyclesBefore; got != c.cyclesAfter {
					t.Fatalf("%d cycles after the restart, want %d", got, c.cyclesAfter)
				}
				if !slices.Equal(f.tasks.pausedIDs(), []string{"t_1"}) {
					t.Fatalf("paused %v, want [t_1]", f.tasks.pausedIDs())
				}
				// The owed cycle is settled: nothing more runs.
				time.Sleep(time.Hour)
				synctest.Wait()
				if got := f.outs.cycles() - c.cyclesBefore; got != c.cyclesAfter {
					t.Fatalf("%d cycles an hour later, want %d", got, c.cyclesAfter)
				}
			})
		})
	}
}

func TestRunTriggers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set := DefaultSettings()
		f := newFixture(t, time.Now)
		path := filepath.Join(t.TempDir(), "reverie.db")
		s := f.start(t, path, true)
		step := func(d time.Duration, want int, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got := f.outs.cycles(); got != want {
				t.Fatalf("%s: %d cycles, want %d", what, got, want)
			}
		}

		// A burst of failures over four seconds: one cycle, Debounce after
		// the first.
		f.failTask("t_1", 3)
		for range 5 {
			s.publish(t, workflow.TopicFailed, 1)
			time.Sleep(time.Second)
		}
		step(set.Debounce-5*time.Second-time.Millisecond, 0, "just before the debounce ends")
		step(time.Millisecond, 1, "when the debounce ends")
		if !slices.Equal(f.tasks.pausedIDs(), []string{"t_1"}) || f.callCount() != 1 {
			t.Fatalf("after the burst: paused %v, %d model calls", f.tasks.pausedIDs(), f.callCount())
		}

		// Nine completions do nothing, the tenth runs a batch cycle.
		s.publish(t, workflow.TopicCompleted, 9)
		step(time.Minute, 1, "after 9 completions")
		s.publish(t, workflow.TopicCompleted, 1)
		step(set.Debounce, 2, "after 10 completions")

		// The fallback: 6 h after the last cycle with no event. A new
		// finding appears without an event and is found.
		f.tasks.setFailures(1, 5)
		step(set.Fallback-time.Minute-set.Debounce, 2, "before the fallback")
		step(2*time.Minute, 3, "after the fallback")
		if !slices.Contains(f.tasks.pausedIDs(), "t_2") {
			t.Fatalf("fallback cycle did not pause t_2: %v", f.tasks.pausedIDs())
		}

		// The fallback counts from the last cycle across a restart, not
		// from the start: 2 h after the last cycle the process restarts,
		// and the next fallback comes 4 h later.
		time.Sleep(2 * time.Hour)
		s.stop(t)
		s = f.start(t, path, true)
		defer s.stop(t)
		step(4*time.Hour-2*time.Minute, 3, "before the fallback after the restart")
		step(2*time.Minute, 4, "fallback after the restart")
	})
}

// The handler counts each event once, even when the bus redelivers it.
func TestHandleCountsOnce(t *testing.T) {
	ev := func(id int64, topic string) extension.Event { return extension.Event{ID: id, Topic: topic} }
	cases := []struct {
		name   string
		events []extension.Event
		want   string // the owed cycle
	}{
		{"nine completions", seq(1, 9, workflow.TopicCompleted), ""},
		{"ten completions", seq(1, 10, workflow.TopicCompleted), triggerBatch},
		{"a redelivered completion is not counted again",
			append(seq(1, 9, workflow.TopicCompleted), ev(9, workflow.TopicCompleted), ev(9, workflow.TopicCompleted)), ""},
		{"a redelivered failure owes nothing new", []extension.Event{ev(3, workflow.TopicFailed), ev(3, workflow.TopicFailed)}, triggerFailure},
		{"a failure outranks a batch", append(seq(1, 10, workflow.TopicCompleted), ev(11, workflow.TopicTimeout)), triggerFailure},
		{"other sub-session topics are ignored", []extension.Event{ev(1, "sub_session.started"), ev(2, "sub_session.spawned")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, time.Now)
			for _, e := range c.events {
				if err := f.r.handle(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			st, err := f.r.trigger(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.pending != c.want {
				t.Fatalf("owed %q, want %q", st.pending, c.want)
			}
			if c.want == triggerFailure && len(c.events) == 2 && st.generation != 1 {
				t.Fatalf("generation %d after a redelivery, want 1", st.generation)
			}
		})
	}
}

func seq(from, to int64, topic string) []extension.Event {
	var out []extension.Event
	for id := from; id <= to; id++ {
		out = append(out, extension.Event{ID: id, Topic: topic})
	}
	return out
}

// BenchmarkHandle measures what the durable trigger adds to each
// sub-session event: one UPDATE of the trigger row.
func BenchmarkHandle(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "r.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := New(ctx, Options{DB: db, Outcomes: &fakeOutcomes{}})
	if err != nil {
		b.Fatal(err)
	}
	topics := []string{workflow.TopicCompleted, workflow.TopicCompleted, workflow.TopicCompleted, workflow.TopicFailed}
	id := int64(0)
	for b.Loop() {
		id++
		if err := r.handle(ctx, extension.Event{ID: id, Topic: topics[id%4]}); err != nil {
			b.Fatal(err)
		}
	}
}

// Seed 001 runs the rule engine on a failure; a scheduled AI task that ran
// as an isolated inference fails without any sub-session, so its
// scheduler.task.failed event is the trigger, as sub_session.failed is for
// a sub-session. Other task kinds and outcomes trigger nothing.
func TestFailedAITaskTriggersRules(t *testing.T) {
	debounce := DefaultSettings().Debounce
	cases := []struct {
		name   string
		topic  string
		event  scheduler.TaskEvent
		cycles int
		paused []string
	}{
		{"isolated AI task failed", scheduler.TopicFailed,
			scheduler.TaskEvent{ID: "t_1", Kind: scheduler.KindAITask, Outcome: scheduler.OutcomeFailed, Reason: "isolated inference: 503"}, 1, []string{"t_1"}},
		{"reminder failed", scheduler.TopicFailed,
			scheduler.TaskEvent{ID: "t_1", Kind: scheduler.KindReminder, Outcome: scheduler.OutcomeFailed}, 0, nil},
		{"AI task fired", scheduler.TopicFired,
			scheduler.TaskEvent{ID: "t_1", Kind: scheduler.KindAITask, Outcome: scheduler.OutcomeFired}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, time.Now)
				f.tasks.setFailures(0, 3) // the scheduler's count of failed runs
				s := f.start(t, filepath.Join(t.TempDir(), "reverie.db"), true)
				defer s.stop(t)
				if err := s.bus.Publish(context.Background(), c.topic, c.event); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				time.Sleep(debounce + time.Second)
				synctest.Wait()
				if got := f.outs.cycles(); got != c.cycles {
					t.Fatalf("%d cycles, want %d", got, c.cycles)
				}
				if got := f.tasks.pausedIDs(); !slices.Equal(got, c.paused) {
					t.Fatalf("paused %v, want %v", got, c.paused)
				}
			})
		})
	}
}
