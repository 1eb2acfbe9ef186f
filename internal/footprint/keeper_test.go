package footprint

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeProcess is a resident size that grows with use and drops on trim.
type fakeProcess struct {
	mu       sync.Mutex
	resident int64
	trims    []time.Duration
	start    time.Time
	failTrim bool
}

func (p *fakeProcess) trim() (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failTrim {
		return Result{}, errors.New("madvise: not supported")
	}
	p.trims = append(p.trims, time.Since(p.start))
	p.resident = 2 << 20
	return Result{Segments: 2}, nil
}

func (p *fakeProcess) size() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resident, nil
}

func (p *fakeProcess) use(n int64) {
	p.mu.Lock()
	p.resident += n
	p.mu.Unlock()
}

func (p *fakeProcess) trimTimes() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.trims...)
}

func TestKeeper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, start: time.Now()}
		k := &Keeper{Settle: 5 * time.Second, Every: time.Minute, Slack: 4 << 20, trim: p.trim, resident: p.size}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- k.Run(ctx) }()

		time.Sleep(6 * time.Second) // the settle delay passes: first trim
		synctest.Wait()
		p.use(1 << 20) // a little use: below the slack, no trim
		time.Sleep(time.Minute)
		synctest.Wait()
		p.use(5 << 20) // a turn brings pages back: trimmed at the next check
		time.Sleep(time.Minute)
		synctest.Wait()
		time.Sleep(10 * time.Minute) // idle: nothing to do
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := p.trimTimes()
		want := []time.Duration{5 * time.Second, 5*time.Second + 2*time.Minute}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("trims at %v, want %v", got, want)
		}
	})
}

// A platform that refuses the trim is tried once, then left alone.
func TestKeeperStopsWhenTrimFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, failTrim: true}
		k := &Keeper{trim: p.trim, resident: p.size}
		if err := k.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
