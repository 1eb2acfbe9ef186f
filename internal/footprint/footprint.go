// Package footprint keeps the private memory of a long-running Reverie
// process close to what it really uses.
//
// Start-up allocates far more heap than an idle agent keeps live: every
// package's init (the model SDKs register hundreds of types), configuration
// decoding, migrations, recovery. The Go runtime gives freed heap back to
// the OS only gradually, so a freshly started agent shows megabytes of
// private (anonymous) memory it no longer uses. Release, called once
// start-up is over, collects and hands that memory back at once
// (debug.FreeOSMemory).
//
// A Keeper does this once start-up has settled and again whenever use has
// grown the private memory (checked every 15 s by reading
// /proc/self/status and the process's CPU time: no other cost while idle),
// so that what a burst of turns allocated and freed goes back within a
// minute. Once use has stopped (the process used less than 2 % of a CPU
// since the previous check) a growth of Quiet (64 KiB) since the last
// release is enough: what runs just after a burst (the database's
// checkpoint, background reads) leaves a few hundred KiB behind a release
// that came before it, which the next quiet check hands back. A release
// that came while the process was busy is followed by one at the first
// quiet check whatever the growth: it kept the heap then in use, and a
// burst's end can leave the private memory at about that level. While the
// process is busy, a growth of Slack (256 KiB) releases at most once a
// minute, as a busy process would otherwise collect every check. Either threshold is small:
// the Go runtime's own scavenger keeps freed heap up to its next
// collection's goal, about twice what is live, and a release costs one
// collection (milliseconds at an agent's heap size). What use
// leaves live stays: an agent's idle footprint after use is higher than
// after a fresh start, and grows slowly with what it stores (the memory
// indexes keep ~150 B of heap per stored memory (BenchmarkIndexFootprint:
// ~15 B the index, ~131 B the full-text index), their vectors, sketches,
// metadata and term lists being file pages the release drops; the first
// turns build the tools' schemas, the API's routes, codecs' caches; the
// heap stays more fragmented than at start). bench/footprint.sh measures
// both; docs/architecture.md#footprint has the figures.
//
// The executable's own pages (code and constants) are deliberately left
// alone: dropping them from the process's mappings lowers RSS but not what
// the machine pays (they stay in the page cache and in the cgroup's
// accounting), so the figure that counts is RssAnon or Pss, not VmRSS.
package footprint

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"
)

// Release runs two garbage collections and returns all freed heap to the
// OS. One would leave what sync.Pools hold: a collection only moves a
// pool's contents to its victim cache, the next drops them (after a burst
// of turns, ~0.6 MB of the model SDK's JSON encoding buffers). It is safe
// to call at any time from any goroutine.
func Release() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Keeper defaults.
const (
	DefaultSettle = 5 * time.Second
	DefaultEvery  = 15 * time.Second
	DefaultSlack  = 256 << 10
	DefaultQuiet  = 64 << 10
	DefaultBusy   = time.Minute
)

// Keeper releases freed heap once start-up has settled and then whenever
// the private resident memory has grown since the last release: by Quiet
// once the process is quiet, by Slack (at most once every Busy) while it
// is busy.
type Keeper struct {
	// Settle is the wait after Run starts before the first release
	// (0: DefaultSettle).
	Settle time.Duration
	// Every is how often the private resident size is checked
	// (0: DefaultEvery).
	Every time.Duration
	// Slack is the growth in bytes that triggers another release while
	// the process is busy (0: DefaultSlack).
	Slack int64
	// Quiet is the growth in bytes that triggers another release once the
	// process is quiet: it used less than quietCPU of a CPU since the
	// previous check (0: DefaultQuiet).
	Quiet int64
	// Busy is the least time between two releases while the process is
	// busy (0: DefaultBusy).
	Busy time.Duration
	// After, when set, holds the first release back until it is closed
	// (then Settle more): start-up work that runs after ready and leaves
	// much garbage behind, such as loading the memory index, is part of
	// what the first release hands back.
	After <-chan struct{}
	// Logger receives a debug line per release (nil: discarded).
	Logger *slog.Logger
	// Release hands freed memory back (nil: Release). A process whose C
	// libraries cache memory of their own frees it here too, before
	// calling Release.
	Release func()

	// For tests: the resident-size probe (nil: ResidentAnon) and the
	// CPU-time probe (nil: ProcessCPU).
	resident func() (int64, error)
	cpu      func() (time.Duration, error)
}

// quietCPU is the share of one CPU under which the process counts as
// quiet between two checks: an idle agent uses a few milliseconds a
// minute, one running turns or a burst's aftermath far more.
const quietCPU = 0.02

// Run releases until ctx ends. It returns nil; when the resident size
// cannot be measured (no /proc) it releases once and stops.
func (k *Keeper) Run(ctx context.Context) error {
	settle := orDefault(k.Settle, DefaultSettle)
	every := orDefault(k.Every, DefaultEvery)
	slack := orDefault(k.Slack, DefaultSlack)
	quiet := orDefault(k.Quiet, DefaultQuiet)
	busy := orDefault(k.Busy, DefaultBusy)
	release, resident := k.Release, k.resident
	if release == nil {
		release = Release
	}
	if resident == nil {
		resident = ResidentAnon
	}
	cpu := k.cpu
	if cpu == nil {
		cpu = ProcessCPU
	}
	log := k.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if k.After != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-k.After:
		}
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	var (
		base     int64 = -1 // after the last release
		released time.Time
		used     time.Duration = -1 // CPU time at the last check
		// unsettled: the last release came while the process was busy.
		// What it left was the heap in use at that moment; what the rest
		// of the busy spell freed can sit at about that level once the
		// runtime has returned some pages itself, never Quiet above it,
		// so the first quiet check releases whatever the growth.
		unsettled bool
	)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, err := resident()
		if err != nil {
			release()
			log.Debug("cannot measure private memory; released freed heap once", "err", err)
			return nil
		}
		// quiet: the process used little CPU since the last check (an
		// unreadable CPU time counts as busy)
		was := used
		used, err = cpu()
		if err != nil {
			used = -1
		}
		quietNow := was >= 0 && used >= 0 && float64(used-was) < quietCPU*float64(every)
		first := base < 0
		if first || (quietNow && (unsettled || now-base >= quiet)) || (now-base >= slack && time.Since(released) >= busy) {
			release()
			released = time.Now()
			unsettled = !first && !quietNow
			before := now
			if now, err = resident(); err != nil {
				return nil
			}
			log.Debug("released freed heap", "private_before_kib", before>>10, "private_after_kib", now>>10)
			base = now
		}
		t.Reset(every)
	}
}

// orDefault returns v, or def when v is not positive.
func orDefault[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
