package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
)

const thread chat.ThreadID = "web:test"

// A simulated 30 days across the spring-forward change in Europe/Berlin:
// every expected run of a daily (inside the gap), weekly, monthly,
// interval-with-window and cron task fires exactly once, on time.
func TestThirtyDaysAcrossDST(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 3, 15, 0, 0, 0, 0, loc)
		end := time.Date(2026, 4, 14, 0, 0, 0, 0, loc)
		sleepUntil(begin)
		rec := &recorder{}
		s := open(t, openDB(t), Options{Executor: rec, Location: loc})
		stop := start(t, s)
		specs := map[string]Spec{
			"daily":    {Kind: Daily, Time: "02:30"},
			"weekly":   {Kind: Weekly, Time: "18:30", Weekdays: []string{"mon", "thu"}},
			"monthly":  {Kind: Monthly, Day: 31, Time: "08:00"},
			"interval": {Kind: Interval, Every: Duration(3 * time.Hour), WindowStart: "08:00", WindowEnd: "20:00"},
			"cron":     {Kind: Cron, Cron: "15 */6 * * *"},
		}
		ids := map[string]string{}
		for name, spec := range specs {
			ids[name] = mustAdd(t, s, NewTask{Text: name, Thread: thread, Spec: spec}).ID
		}
		sleepUntil(end)
		stop()

		// The expected runs, written out independently of Schedule.
		want := map[string][]time.Time{}
		wall := func(d time.Time, h, m int) time.Time {
			if d.Month() == time.March && d.Day() == 29 && h == 2 {
				h = 3 // the gap: 02:xx runs at 03:xx CEST
			}
			return time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, loc)
		}
		for d := begin; d.Before(end); d = d.AddDate(0, 0, 1) {
			want["daily"] = append(want["daily"], wall(d, 2, 30))
			if d.Weekday() == time.Monday || d.Weekday() == time.Thursday {
				want["weekly"] = append(want["weekly"], wall(d, 18, 30))
			}
			if d.Month() == time.March && d.Day() == 31 {
				want["monthly"] = append(want["monthly"], wall(d, 8, 0))
			}
			for _, h := range []int{8, 11, 14, 17, 20} {
				want["interval"] = append(want["interval"], wall(d, h, 0))
			}
			for _, h := range []int{0, 6, 12, 18} {
				want["cron"] = append(want["cron"], wall(d, h, 15))
			}
		}
		for name, w := range want {
			got := rec.byText(name)
			if !slices.EqualFunc(got, w, time.Time.Equal) {
				t.Errorf("%s fired at\n%v\nwant\n%v", name, fmtTimes(got, loc), fmtTimes(w, loc))
			}
			rs := receipts(t, s, ids[name])
			if o := outcomes(rs); o[OutcomeFired] != len(w) || len(rs) != len(w) {
				t.Errorf("%s: receipts %v (%d rows), want %d fired", name, o, len(rs), len(w))
			}
			for _, r := range rs {
				if r.CatchUp || !r.StartedAt.Equal(r.ScheduledAt) {
					t.Errorf("%s: receipt %+v: not on time", name, r)
				}
			}
		}
		if len(want["daily"]) != 30 || len(want["interval"]) != 150 {
			t.Fatalf("bad expectation: %d daily, %d interval runs", len(want["daily"]), len(want["interval"]))
		}
	})
}

// Three days of downtime: the latest missed run within the catch-up window
// runs once; every other missed run has a skipped receipt.
func TestDowntimeCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		day0 := time.Date(2026, 5, 4, 8, 0, 0, 0, loc)
		sleepUntil(day0)
		db := openDB(t)
		rec := &recorder{}
		s := open(t, db, Options{Executor: rec, Location: loc})
		stop := start(t, s)
		daily := mustAdd(t, s, NewTask{Text: "daily", Thread: thread, Spec: Spec{Kind: Daily, Time: "09:00"}})
		hourly := mustAdd(t, s, NewTask{Text: "hourly", Thread: thread, Spec: Spec{Kind: Interval, Every: Duration(time.Hour)}})
		once := mustAdd(t, s, NewTask{Text: "once", Thread: thread, Spec: Spec{Kind: Once, At: day0.Add(30 * time.Hour)}})
		sleepUntil(day0.Add(2*time.Hour + 30*time.Minute)) // 10:30: daily fired at 09:00, hourly at 09:00 and 10:00
		stop()
		if n := len(rec.deliveries()); n != 3 {
			t.Fatalf("%d deliveries before the downtime, want 3: %+v", n, rec.deliveries())
		}

		restart := time.Date(2026, 5, 7, 12, 0, 0, 0, loc) // three days later
		sleepUntil(restart)
		s2 := open(t, db, Options{Executor: rec, Location: loc})
		start(t, s2)
		synctest.Wait()

		// daily: 05-05 09:00 and 05-06 09:00 are older than 24h; 05-07 09:00 runs once.
		if got := rec.byText("daily"); len(got) != 2 || !got[1].Equal(restart) {
			t.Errorf("daily ran at %v, want the catch-up at the restart", fmtTimes(got, loc))
		}
		rs := receipts(t, s2, daily.ID)
		if o := outcomes(rs); o[OutcomeFired] != 2 || o[OutcomeSkipped] != 2 {
			t.Errorf("daily receipts %v, want 2 fired and 2 skipped", o)
		}
		last := rs[len(rs)-1]
		if !last.CatchUp || !last.ScheduledAt.Equal(time.Date(2026, 5, 7, 9, 0, 0, 0, loc)) || last.Outcome != OutcomeFired {
			t.Errorf("catch-up receipt %+v", last)
		}
		for _, r := range rs[1:3] {
			if r.Outcome != OutcomeSkipped || !strings.Contains(r.Reason, "catch-up window") {
				t.Errorf("skipped receipt %+v", r)
			}
		}

		// hourly: 11:00 on day 0 … 12:00 on day 3 were missed (74 runs);
		// the 12:00 one runs, 24 within the window are merged into it, the
		// 49 older ones are skipped as stale.
		if got := rec.byText("hourly"); len(got) != 3 {
			t.Errorf("hourly ran %d times, want 2 before and 1 after the downtime", len(got))
		}
		o := outcomes(receipts(t, s2, hourly.ID))
		if o[OutcomeFired] != 3 || o[OutcomeSkipped] != 73 {
			t.Errorf("hourly receipts %v, want 3 fired, 73 skipped", o)
		}

		// once: missed by more than the window: skipped, done, not lost.
		if got := rec.byText("once"); len(got) != 0 {
			t.Errorf("stale one-time reminder delivered at %v", got)
		}
		task, err := s2.Get(context.Background(), once.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rs := receipts(t, s2, once.ID); task.Status != StatusDone || len(rs) != 1 || rs[0].Outcome != OutcomeSkipped {
			t.Errorf("once: status %s, receipts %+v", task.Status, rs)
		}
		// Next runs are armed again.
		if task, _ := s2.Get(context.Background(), daily.ID); !task.NextRun.Equal(time.Date(2026, 5, 8, 9, 0, 0, 0, loc)) {
			t.Errorf("daily next run %s", task.NextRun.In(loc))
		}
	})
}

// A one-time reminder missed by less than the window is delivered late,
// once; a reminder set for "tomorrow 9:00" in a non-UTC zone fires then.
func TestOneTimeReminders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tokyo, err := time.LoadLocation("Asia/Tokyo")
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 6, 1, 22, 0, 0, 0, tokyo)
		sleepUntil(now)
		db := openDB(t)
		rec := &recorder{}
		s := open(t, db, Options{Executor: rec, Location: tokyo})
		stop := start(t, s)
		when, err := ParseWhen("tomorrow 9:00", time.Now(), tokyo)
		if err != nil {
			t.Fatal(err)
		}
		tomorrow := mustAdd(t, s, NewTask{Text: "stand-up", Thread: thread, Spec: Spec{Kind: Once, At: when}})
		late := mustAdd(t, s, NewTask{Text: "late", Thread: thread, Spec: Spec{Kind: Once, At: now.Add(2 * time.Hour)}})
		if want := time.Date(2026, 6, 2, 9, 0, 0, 0, tokyo); !tomorrow.NextRun.Equal(want) {
			t.Fatalf("next run %s, want %s", tomorrow.NextRun.In(tokyo), want)
		}
		stop()
		sleepUntil(now.Add(5 * time.Hour)) // down while "late" was due
		start(t, open(t, db, Options{Executor: rec, Location: tokyo}))
		sleepUntil(time.Date(2026, 6, 3, 0, 0, 0, 0, tokyo))
		if got := rec.byText("late"); len(got) != 1 || !got[0].Equal(now.Add(5*time.Hour)) {
			t.Errorf("late reminder delivered at %v", got)
		}
		if got := rec.byText("stand-up"); len(got) != 1 || !got[0].Equal(time.Date(2026, 6, 2, 9, 0, 0, 0, tokyo)) {
			t.Errorf("stand-up delivered at %v", got)
		}
		if rs := receipts(t, s, late.ID); len(rs) != 1 || !rs[0].CatchUp {
			t.Errorf("late receipts %+v", rs)
		}
		for _, d := range rec.deliveries() {
			if d.Thread != thread || !strings.HasPrefix(d.Text, "Reminder: ") {
				t.Errorf("delivery %+v", d)
			}
		}
	})
}

// Restarting with pending schedules loses nothing, and nothing runs twice.
func TestRestartKeepsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 7, 1, 12, 0, 0, 0, loc)
		sleepUntil(begin)
		db := openDB(t)
		rec := &recorder{}
		s := open(t, db, Options{Executor: rec, Location: loc})
		stop := start(t, s)
		for i, spec := range []Spec{
			{Kind: Once, At: begin.Add(3 * time.Hour)},
			{Kind: Daily, Time: "13:00"},
			{Kind: Cron, Cron: "30 * * * *"},
		} {
			mustAdd(t, s, NewTask{Text: string(rune('a' + i)), Thread: thread, Spec: spec})
		}
		sleepUntil(begin.Add(20 * time.Minute))
		stop() // nothing was due yet
		// Several quick restarts, each before anything is due.
		for range 3 {
			stop := start(t, open(t, db, Options{Executor: rec, Location: loc}))
			sleepUntil(time.Now().Add(time.Minute))
			stop()
		}
		start(t, open(t, db, Options{Executor: rec, Location: loc}))
		sleepUntil(begin.Add(4 * time.Hour))
		for text, n := range map[string]int{"a": 1, "b": 1, "c": 4} { // c: 12:30 … 15:30
			if got := rec.byText(text); len(got) != n {
				t.Errorf("%s ran %d times (%v), want %d", text, len(got), fmtTimes(got, loc), n)
			}
		}
		for _, d := range rec.deliveries() {
			if d.At.Minute() != 0 && d.At.Minute() != 30 {
				t.Errorf("late delivery %+v", d)
			}
		}
	})
}

func TestPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 8, 1, 10, 0, 0, 0, loc)
		sleepUntil(begin)
		rec := &recorder{}
		s := open(t, openDB(t), Options{Executor: rec, Location: loc})
		start(t, s)
		ctx := context.Background()
		task := mustAdd(t, s, NewTask{Text: "water the plants", Thread: thread, Spec: Spec{Kind: Daily, Time: "09:00"}})
		once := mustAdd(t, s, NewTask{Text: "once", Thread: thread, Spec: Spec{Kind: Once, At: begin.Add(time.Hour)}})
		sleepUntil(begin.Add(24 * time.Hour)) // ran on 08-02
		paused, err := s.Pause(ctx, task.ID)
		if err != nil || paused.Status != StatusPaused || !paused.NextRun.IsZero() {
			t.Fatalf("Pause: %+v, %v", paused, err)
		}
		if _, err := s.Pause(ctx, once.ID); err == nil {
			t.Fatal("paused a finished task")
		}
		if _, err := s.Pause(ctx, task.ID); err != nil {
			t.Fatalf("pausing twice: %v", err)
		}
		sleepUntil(begin.Add(72 * time.Hour)) // 08-03 and 08-04 pass paused
		resumed, err := s.Resume(ctx, task.ID)
		if err != nil || resumed.Status != StatusActive {
			t.Fatalf("Resume: %+v, %v", resumed, err)
		}
		if want := time.Date(2026, 8, 5, 9, 0, 0, 0, loc); !resumed.NextRun.Equal(want) {
			t.Errorf("resumed next run %s, want %s", resumed.NextRun.In(loc), want)
		}
		sleepUntil(begin.Add(96 * time.Hour))
		got := rec.byText("water the plants")
		want := []time.Time{time.Date(2026, 8, 2, 9, 0, 0, 0, loc), time.Date(2026, 8, 5, 9, 0, 0, 0, loc)}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("ran at %v, want %v", fmtTimes(got, loc), fmtTimes(want, loc))
		}
		if rs := receipts(t, s, task.ID); len(rs) != 2 {
			t.Errorf("paused days left receipts: %+v", rs)
		}
		// A one-time task whose time passed during a pause runs on resume.
		later := mustAdd(t, s, NewTask{Text: "later", Thread: thread, Spec: Spec{Kind: Once, At: time.Now().Add(time.Hour)}})
		if _, err := s.Pause(ctx, later.ID); err != nil {
			t.Fatal(err)
		}
		sleepUntil(time.Now().Add(2 * time.Hour))
		if _, err := s.Resume(ctx, later.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := rec.byText("later"); len(got) != 1 {
			t.Errorf("resumed past reminder ran %d times", len(got))
		}
		// Cancel.
		c, err := s.Cancel(ctx, task.ID)
		if err != nil || c.Status != StatusCancelled {
			t.Fatalf("Cancel: %+v, %v", c, err)
		}
		if _, err := s.Resume(ctx, task.ID); !errors.Is(err, ErrFinished) || err.Error() != "task "+task.ID+" has finished (cancelled)" {
			t.Errorf("resume cancelled: %v", err)
		}
		if _, err := s.Cancel(ctx, "t_nothere"); !errors.Is(err, ErrNotFound) || err.Error() != `task "t_nothere" not found` {
			t.Errorf("cancel unknown: %v", err)
		}
		sleepUntil(time.Now().Add(48 * time.Hour))
		if got := rec.byText("water the plants"); len(got) != 2 {
			t.Errorf("cancelled task ran: %v", fmtTimes(got, loc))
		}
	})
}

func TestAddRejectsBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sleepUntil(time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC))
		s := open(t, openDB(t), Options{Location: berlin(t)})
		tests := []struct {
			name string
			task NewTask
			want error
		}{
			{"past time for once", NewTask{Text: "x", Thread: thread, Spec: Spec{Kind: Once, At: time.Now().Add(-time.Minute)}}, ErrPast},
			{"now for once", NewTask{Text: "x", Thread: thread, Spec: Spec{Kind: Once, At: time.Now()}}, ErrPast},
			{"unknown zone", NewTask{Text: "x", Thread: thread, Spec: Spec{Kind: Daily, Time: "09:00", Zone: "Europe/Atlantis"}}, ErrUnknownZone},
			{"invalid cron", NewTask{Text: "x", Thread: thread, Spec: Spec{Kind: Cron, Cron: "every day"}}, ErrInvalidSpec},
			{"zero interval", NewTask{Text: "x", Thread: thread, Spec: Spec{Kind: Interval}}, ErrInvalidSpec},
			{"no text", NewTask{Thread: thread, Spec: Spec{Kind: Daily, Time: "09:00"}}, ErrInvalidTask},
			{"text too long", NewTask{Text: strings.Repeat("x", MaxTextChars+1), Thread: thread, Spec: Spec{Kind: Daily, Time: "09:00"}}, ErrInvalidTask},
			{"bad thread", NewTask{Text: "x", Thread: "web:\x00", Spec: Spec{Kind: Daily, Time: "09:00"}}, ErrInvalidTask},
			{"sub-session without prompt", NewTask{Text: "x", SubSession: true, Spec: Spec{Kind: Daily, Time: "09:00"}}, ErrInvalidTask},
		}
		for _, tc := range tests {
			if _, err := s.Add(context.Background(), tc.task); !errors.Is(err, tc.want) {
				t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			}
		}
		if ts, err := s.List(context.Background(), ListOptions{Statuses: []Status{}}); err != nil || len(ts) != 0 {
			t.Fatalf("bad input stored something: %v, %v", ts, err)
		}
	})
}

// Extension jobs: registered at each start, caught up after downtime, set
// inactive when no longer registered; a run still going skips the next.
func TestJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 9, 1, 0, 0, 0, 0, loc)
		sleepUntil(begin)
		db := openDB(t)
		ctx := context.Background()
		var quick, slow, gone atomic.Int32
		s := open(t, db, Options{Location: loc, RunTimeout: time.Hour})
		reg := func(s *Scheduler, name, sched string, fn JobFunc) {
			t.Helper()
			if err := s.RegisterJob(ctx, Job{Name: name, Schedule: sched, Run: fn}); err != nil {
				t.Fatal(err)
			}
		}
		reg(s, "pulse/review", "@every 1h", func(ctx context.Context) (RunReport, error) {
			quick.Add(1)
			return RunReport{Usage: usage(10, 2), Note: "looked"}, nil
		})
		reg(s, "x/slow", "*/10 * * * *", func(ctx context.Context) (RunReport, error) {
			slow.Add(1)
			select {
			case <-time.After(25 * time.Minute):
			case <-ctx.Done():
				return RunReport{}, ctx.Err()
			}
			return RunReport{}, nil
		})
		reg(s, "x/gone", "@every 1h", func(ctx context.Context) (RunReport, error) { gone.Add(1); return RunReport{}, nil })
		stop := start(t, s)
		sleepUntil(begin.Add(3 * time.Hour))
		if quick.Load() != 3 || gone.Load() != 3 {
			t.Errorf("hourly jobs ran %d and %d times, want 3", quick.Load(), gone.Load())
		}
		// slow: started at :10, :40, 1:10, …; :20, :30 skipped while running.
		rs := receipts(t, s, "job:x/slow")
		o := outcomes(rs)
		if o[OutcomeFired] != 5 || o[OutcomeRunning] != 1 || o[OutcomeSkipped] != 12 {
			t.Errorf("slow job receipts %v, want 5 fired, 1 running, 12 skipped", o)
		}
		if rs[1].Reason != "the previous run is still running" {
			t.Errorf("skip reason %q", rs[1].Reason)
		}
		if rs := receipts(t, s, "job:pulse/review"); rs[0].Usage.InputTokens != 10 || rs[0].Reason != "looked" {
			t.Errorf("job receipt %+v", rs[0])
		}
		stop()

		// Down for 5 hours; restart registers only two of the jobs.
		sleepUntil(begin.Add(8*time.Hour + 30*time.Minute))
		s2 := open(t, db, Options{Location: loc})
		reg(s2, "pulse/review", "@every 1h", func(ctx context.Context) (RunReport, error) { quick.Add(1); return RunReport{}, nil })
		reg(s2, "x/slow", "0 0 1 1 *", func(ctx context.Context) (RunReport, error) { return RunReport{}, nil }) // changed schedule
		start(t, s2)
		synctest.Wait()
		if quick.Load() != 4 {
			t.Errorf("after downtime the hourly job ran %d times in total, want 3 + 1 catch-up", quick.Load())
		}
		sleepUntil(begin.Add(10 * time.Hour))
		if quick.Load() != 6 || gone.Load() != 3 { // + 09:00 and 10:00
			t.Errorf("quick %d, gone %d", quick.Load(), gone.Load())
		}
		jobs, err := s2.List(ctx, ListOptions{Jobs: true, Statuses: []Status{StatusInactive}})
		if err != nil || len(jobs) != 1 || jobs[0].Job != "x/gone" {
			t.Errorf("inactive jobs %+v, %v", jobs, err)
		}
		if task, _ := s2.Get(ctx, "job:x/slow"); !task.NextRun.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, loc)) {
			t.Errorf("re-scheduled job next run %s", task.NextRun)
		}
		if _, err := s2.Cancel(ctx, "job:pulse/review"); !errors.Is(err, ErrJobTask) ||
			err.Error() != "task job:pulse/review is a job of its extension and cannot be cancelled; pause it instead" {
			t.Errorf("cancel job: %v", err)
		}
		if ts, _ := s2.List(ctx, ListOptions{}); len(ts) != 0 {
			t.Errorf("List without Jobs lists jobs: %+v", ts)
		}
		if err := s2.RegisterJob(ctx, Job{Name: "bad", Schedule: "@every 0s", Run: func(context.Context) (RunReport, error) { return RunReport{}, nil }}); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("zero job interval: %v", err)
		}
	})
}

// A run cut off by shutdown is given back and caught up at the next start;
// a run cut off by a crash is recorded as failed; a failing run is a
// failed receipt with the reason; a panic does not take Run down.
func TestInterruptedAndFailingRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 10, 1, 8, 0, 0, 0, loc)
		sleepUntil(begin)
		db := openDB(t)
		ctx := context.Background()
		var runs atomic.Int32
		block := func(ctx context.Context) (RunReport, error) {
			runs.Add(1)
			<-ctx.Done()
			return RunReport{}, ctx.Err()
		}
		s := open(t, db, Options{Location: loc})
		if err := s.RegisterJob(ctx, Job{Name: "x/long", Schedule: "0 9 * * *", Run: block}); err != nil {
			t.Fatal(err)
		}
		stop := start(t, s)
		sleepUntil(begin.Add(time.Hour + time.Minute))
		stop()
		rs := receipts(t, s, "job:x/long")
		if len(rs) != 1 || rs[0].Outcome != OutcomeSkipped || !strings.Contains(rs[0].Reason, "shutdown") {
			t.Fatalf("receipts after shutdown %+v", rs)
		}
		sleepUntil(time.Now().Add(10 * time.Minute))
		s2 := open(t, db, Options{Location: loc})
		done := func(ctx context.Context) (RunReport, error) { runs.Add(1); return RunReport{}, nil }
		if err := s2.RegisterJob(ctx, Job{Name: "x/long", Schedule: "0 9 * * *", Run: done}); err != nil {
			t.Fatal(err)
		}
		stop2 := start(t, s2)
		synctest.Wait()
		rs = receipts(t, s2, "job:x/long")
		if runs.Load() != 2 || len(rs) != 2 || rs[1].Outcome != OutcomeFired || !rs[1].CatchUp {
			t.Fatalf("after restart: %d runs, receipts %+v", runs.Load(), rs)
		}

		stop2()

		// A crash leaves a running receipt: the next start marks it failed.
		if _, err := db.Exec(`INSERT INTO scheduler_receipts (task_id, scheduled_at, started_at, outcome) VALUES ('t_x', ?, ?, 'running')`,
			time.Now().UnixNano(), time.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{fail: errors.New("channel down")}
		s3 := open(t, db, Options{Location: loc, Executor: rec})
		if err := s3.RegisterJob(ctx, Job{Name: "x/panic", Schedule: "@every 1h", Run: func(context.Context) (RunReport, error) { panic("boom") }}); err != nil {
			t.Fatal(err)
		}
		failing := mustAdd(t, s3, NewTask{Text: "f", Thread: thread, Spec: Spec{Kind: Interval, Every: Duration(time.Hour)}})
		start(t, s3)
		sleepUntil(time.Now().Add(3*time.Hour + time.Minute))
		if rs := receipts(t, s3, "t_x"); rs[0].Outcome != OutcomeFailed || !strings.Contains(rs[0].Reason, "interrupted") {
			t.Errorf("crashed run receipt %+v", rs[0])
		}
		if rs := receipts(t, s3, "job:x/panic"); len(rs) != 3 || rs[0].Outcome != OutcomeFailed || rs[0].Reason != "panic: boom" {
			t.Errorf("panicking job receipts %+v", rs)
		}
		task, _ := s3.Get(ctx, failing.ID)
		if task.Failures != 3 || task.LastOutcome != OutcomeFailed {
			t.Errorf("failing task %+v", task)
		}
		if rs := receipts(t, s3, failing.ID); rs[0].Reason != "channel down" {
			t.Errorf("failure reason %q", rs[0].Reason)
		}
	})
}

// A job with its own Timeout (a nightly dream) may run longer than
// RunTimeout; the others are cut at RunTimeout.
func TestJobTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
		sleepUntil(begin)
		s := open(t, openDB(t), Options{Location: time.UTC, RunTimeout: 10 * time.Minute})
		work := func(ctx context.Context) (RunReport, error) {
			select {
			case <-time.After(30 * time.Minute):
				return RunReport{Note: "done"}, nil
			case <-ctx.Done():
				return RunReport{}, ctx.Err()
			}
		}
		for _, j := range []Job{
			{Name: "x/long", Schedule: "0 1 * * *", Run: work, Timeout: time.Hour},
			{Name: "x/short", Schedule: "0 1 * * *", Run: work},
		} {
			if err := s.RegisterJob(context.Background(), j); err != nil {
				t.Fatal(err)
			}
		}
		stop := start(t, s)
		sleepUntil(begin.Add(2 * time.Hour))
		stop()
		if rs := receipts(t, s, "job:x/long"); len(rs) != 1 || rs[0].Outcome != OutcomeFired || rs[0].Reason != "done" {
			t.Errorf("long job receipts %+v", rs)
		}
		if rs := receipts(t, s, "job:x/short"); len(rs) != 1 || rs[0].Outcome != OutcomeFailed || !strings.Contains(rs[0].Reason, "timed out after 10m0s") {
			t.Errorf("short job receipts %+v", rs)
		}
	})
}
