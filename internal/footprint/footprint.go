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
// grown the private memory by Slack (checked once a minute by reading
// /proc/self/status: no other cost while idle), so that what a burst of
// turns allocated and freed goes back within a minute or two. The slack is
// small (256 KiB): the Go runtime's own scavenger keeps freed heap up to
// its next collection's goal, about twice what is live, and a release costs
// one collection (milliseconds at an agent's heap size), at most once a
// minute. What use
// leaves live stays: an agent's idle footprint after use is higher than
// after a fresh start, and grows slowly with what it stores (the memory
// indexes keep ~180 B of heap per stored memory, their vectors, sketches,
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
	DefaultEvery  = time.Minute
	DefaultSlack  = 256 << 10
)

// Keeper releases freed heap once start-up has settled and then whenever
// the private resident memory has grown by Slack since the last release.
type Keeper struct {
	// Settle is the wait after Run starts before the first release
	// (0: DefaultSettle).
	Settle time.Duration
	// Every is how often the private resident size is checked
	// (0: DefaultEvery).
	Every time.Duration
	// Slack is the growth in bytes that triggers another release
	// (0: DefaultSlack).
	Slack int64
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

	// For tests: the resident-size probe (nil: ResidentAnon).
	resident func() (int64, error)
}

// Run releases until ctx ends. It returns nil; when the resident size
// cannot be measured (no /proc) it releases once and stops.
func (k *Keeper) Run(ctx context.Context) error {
	settle, every, slack := k.Settle, k.Every, k.Slack
	if settle <= 0 {
		settle = DefaultSettle
	}
	if every <= 0 {
		every = DefaultEvery
	}
	if slack <= 0 {
		slack = DefaultSlack
	}
	release, resident := k.Release, k.resident
	if release == nil {
		release = Release
	}
	if resident == nil {
		resident = ResidentAnon
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
	var base int64 = -1
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
		if base < 0 || now-base >= slack {
			release()
			if base, err = resident(); err != nil {
				return nil
			}
			log.Debug("released freed heap", "private_before_kib", now>>10, "private_after_kib", base>>10)
		}
		t.Reset(every)
	}
}
