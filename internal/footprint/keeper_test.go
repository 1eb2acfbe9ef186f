package footprint

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"
)

// fakeProcess is a private resident size that grows with use and drops on
// release, and the CPU time that use takes.
type fakeProcess struct {
	mu       sync.Mutex
	resident int64
	inUse    int64 // what a release cannot hand back (2 MiB more stay)
	cpuTime  time.Duration
	trims    []time.Duration
	start    time.Time
	noProc   bool
}

func (p *fakeProcess) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trims = append(p.trims, time.Since(p.start))
	p.resident = 2<<20 + p.inUse
}

// set sets the heap in use and the resident size (the runtime returning
// pages itself, or a burst's last turns), with no CPU time.
func (p *fakeProcess) set(inUse, resident int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse, p.resident = inUse, resident
}

func (p *fakeProcess) size() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.noProc {
		return 0, errors.New("open /proc/self/status: no such file or directory")
	}
	return p.resident, nil
}

// use grows the resident size by n, taking a second of CPU: a busy
// process.
func (p *fakeProcess) use(n int64) { p.useCPU(n, time.Second) }

// useCPU grows the resident size by n, taking cpu of CPU time.
func (p *fakeProcess) useCPU(n int64, cpu time.Duration) {
	p.mu.Lock()
	p.resident += n
	p.cpuTime += cpu
	p.mu.Unlock()
}

func (p *fakeProcess) cpu() (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cpuTime, nil
}

func (p *fakeProcess) trimTimes() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.trims...)
}

// runKeeper runs k on p (its release and its memory and CPU readings)
// until the returned stop, which fails the test if Run failed.
func (p *fakeProcess) runKeeper(t *testing.T, k *Keeper) (stop func()) {
	t.Helper()
	k.Release, k.resident, k.cpu = p.release, p.size, p.cpu
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- k.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// runAgentKeeper runs a keeper with the agent's settings (a check every
// 15 s, Slack 256 KiB, Quiet 64 KiB, a minute between busy releases) on p
// and returns 6 s later, past its first release at 5 s.
func (p *fakeProcess) runAgentKeeper(t *testing.T) (stop func()) {
	t.Helper()
	stop = p.runKeeper(t, &Keeper{Settle: 5 * time.Second, Every: 15 * time.Second, Slack: 256 << 10,
		Quiet: 64 << 10, Busy: time.Minute})
	time.Sleep(6 * time.Second)
	return stop
}

func TestKeeper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, start: time.Now()}
		k := &Keeper{Settle: 5 * time.Second, Every: time.Minute, Slack: 4 << 20, Quiet: 2 << 20}
		stop := p.runKeeper(t, k)

		time.Sleep(6 * time.Second) // the settle delay passes: first release
		synctest.Wait()
		p.use(1 << 20) // a little use: below the slack and Quiet, no release
		time.Sleep(time.Minute)
		synctest.Wait()
		p.use(5 << 20) // a turn grows the heap: released at the next check
		time.Sleep(time.Minute)
		synctest.Wait()
		time.Sleep(10 * time.Minute) // idle: nothing to do
		stop()
		got := p.trimTimes()
		want := []time.Duration{5 * time.Second, 5*time.Second + 2*time.Minute}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("releases at %v, want %v", got, want)
		}
	})
}

// TestKeeperQuiet: what use leaves behind a release that came before it
// had stopped (the database's checkpoint after a burst, a little CPU) goes
// back at the next check, the process being quiet, once it is Quiet or
// more; less stays until more use comes.
func TestKeeperQuiet(t *testing.T) {
	cases := []struct {
		name    string
		residue int64
		want    []time.Duration
	}{
		{"a residue of Quiet or more is released once quiet", 128 << 10,
			[]time.Duration{5 * time.Second, 35 * time.Second, 50 * time.Second}},
		{"a smaller residue stays", 32 << 10,
			[]time.Duration{5 * time.Second, 35 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &fakeProcess{resident: 30 << 20, start: time.Now()}
				stop := p.runAgentKeeper(t)
				synctest.Wait()
				// A burst of turns. The check at 20 s sees the process busy,
				// 15 s after a release (less than Busy): no release; the one
				// at 35 s sees it quiet: released.
				p.use(4 << 20)
				time.Sleep(30 * time.Second)
				synctest.Wait()
				p.useCPU(tc.residue, 20*time.Millisecond) // the checkpoint after the burst, at 36 s
				time.Sleep(15 * time.Second)
				synctest.Wait() // 51 s: checked at 50 s, quiet
				time.Sleep(10 * time.Minute)
				stop()
				if got := p.trimTimes(); !slices.Equal(got, tc.want) {
					t.Fatalf("releases at %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestKeeperBusy: while the process is busy, growth releases at most once
// every Busy, even when the private memory holds steady between checks.
func TestKeeperBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, start: time.Now()}
		stop := p.runAgentKeeper(t)
		// Twenty clients for three minutes: the memory grows by a
		// megabyte, then holds steady (the heap's plateau), the CPU busy
		// throughout.
		for i := range 12 {
			if i%2 == 0 {
				p.use(1 << 20)
			} else {
				p.use(0)
			}
			time.Sleep(15 * time.Second)
			synctest.Wait()
		}
		stop()
		want := []time.Duration{5 * time.Second, 65 * time.Second, 125 * time.Second, 185 * time.Second}
		if got := p.trimTimes(); !slices.Equal(got, want) {
			t.Fatalf("releases at %v, want %v", got, want)
		}
	})
}

// TestKeeperAfterBusyRelease: a release in the middle of a burst keeps the
// heap then in use; after the burst, with the runtime having returned some
// pages, the private memory sits below what that release left, and the
// first quiet check releases all the same (before, it stayed there).
func TestKeeperAfterBusyRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, start: time.Now()}
		stop := p.runAgentKeeper(t)
		p.set(8<<20, 12<<20) // the burst's turns hold 8 MiB
		for range 4 {        // busy: checks at 20, 35, 50 and 65 s
			p.use(1 << 20)
			time.Sleep(15 * time.Second)
			synctest.Wait()
		}
		// released at 65 s, busy: 10 MiB left. The burst ends; its
		// background work keeps the process busy until the check at 80 s,
		// and the runtime returns a MiB of what the burst freed.
		p.set(0, 9<<20)
		p.useCPU(0, time.Second)
		time.Sleep(15 * time.Second)
		synctest.Wait()
		time.Sleep(10 * time.Minute) // quiet from the check at 95 s on
		stop()
		want := []time.Duration{5 * time.Second, 65 * time.Second, 95 * time.Second}
		if got := p.trimTimes(); !slices.Equal(got, want) {
			t.Fatalf("releases at %v, want %v", got, want)
		}
	})
}

// Without /proc the heap is released once after the settle delay, then the
// keeper stops.
func TestKeeperWithoutProc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, noProc: true, start: time.Now()}
		k := &Keeper{Release: p.release, resident: p.size, cpu: p.cpu}
		if err := k.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := p.trimTimes(); len(got) != 1 || got[0] != DefaultSettle {
			t.Fatalf("releases at %v, want one at %v", got, DefaultSettle)
		}
	})
}

// With After, the first release waits for it, then Settle.
func TestKeeperAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &fakeProcess{resident: 30 << 20, start: time.Now()}
		loaded := make(chan struct{})
		k := &Keeper{Settle: 5 * time.Second, After: loaded}
		stop := p.runKeeper(t, k)
		time.Sleep(30 * time.Second) // the index loads for 30 s
		close(loaded)
		time.Sleep(10 * time.Second)
		stop()
		if got, want := p.trimTimes(), []time.Duration{35 * time.Second}; len(got) != 1 || got[0] != want[0] {
			t.Fatalf("releases at %v, want %v", got, want)
		}
	})
}

// TestReleaseEmptiesPools checks that Release leaves nothing in a
// sync.Pool: one collection would only move it to the pool's victim cache.
func TestReleaseEmptiesPools(t *testing.T) {
	var pool sync.Pool
	w := putBuffer(&pool)
	Release()
	if w.Value() != nil {
		t.Fatal("a pooled buffer outlived Release")
	}
	runtime.KeepAlive(&pool)
}

// putBuffer puts a new buffer in pool and returns a weak pointer to it.
func putBuffer(pool *sync.Pool) weak.Pointer[[]byte] {
	buf := make([]byte, 1<<20)
	pool.Put(&buf)
	return weak.Make(&buf)
}
