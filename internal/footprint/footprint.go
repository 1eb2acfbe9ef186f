// Package footprint keeps the resident memory of a long-running Reverie
// process close to what it really uses.
//
// Start-up touches far more of the binary than an idle agent ever needs
// again: every package's init (the model SDKs register hundreds of types),
// configuration decoding, migrations, recovery. The kernel maps those pages
// in 64 KiB runs (fault-around), so a freshly started agent shows most of
// its text and read-only data as resident although it will not run that
// code again. Trim, called once start-up is over, hands the pages back:
// freed heap memory goes to the OS (debug.FreeOSMemory), and the process's
// own mappings of the executable's read-only segments (code and constant
// data, never the writable data segment) are dropped with
// madvise(MADV_DONTNEED). Those pages stay in the page cache; whatever is
// needed later is mapped again on first touch at the cost of a minor fault.
// Nothing is lost or changed: read-only, file-backed pages always equal the
// file.
//
// A Keeper does this once start-up has settled and again whenever use has
// brought enough pages back (checked once a minute by reading
// /proc/self/status: no other cost while idle), so the idle footprint is the
// same after a day of use as after a fresh start.
//
// Trim is safe to call at any time from any goroutine; it is a no-op apart
// from the heap release on systems other than Linux.
package footprint

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
)

// Result says what Trim released.
type Result struct {
	// Segments is the number of read-only executable mappings dropped.
	Segments int
	// Bytes is the size of those mappings (not all of it was resident).
	Bytes int64
}

// Trim releases freed heap and the resident pages of the executable's
// read-only segments. An error means only the second part failed (for
// example /proc is not mounted); the heap is released regardless.
func Trim() (Result, error) {
	debug.FreeOSMemory()
	return dropExecutablePages()
}

// Keeper defaults.
const (
	DefaultSettle = 5 * time.Second
	DefaultEvery  = time.Minute
	DefaultSlack  = 4 << 20
)

// Keeper trims once start-up has settled and then whenever the resident
// file-backed memory has grown by Slack since the last trim.
type Keeper struct {
	// Settle is the wait after Run starts before the first trim
	// (0: DefaultSettle).
	Settle time.Duration
	// Every is how often the resident size is checked (0: DefaultEvery).
	Every time.Duration
	// Slack is the growth in bytes that triggers another trim
	// (0: DefaultSlack).
	Slack int64
	// Logger receives a debug line per trim (nil: discarded).
	Logger *slog.Logger

	// For tests: the trim and the resident-size probe (nil: Trim and
	// ResidentFile).
	trim     func() (Result, error)
	resident func() (int64, error)
}

// Run trims until ctx ends. It returns nil; a failing trim is logged and
// stops further trims (the platform does not support them).
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
	trim, resident := k.trim, k.resident
	if trim == nil {
		trim = Trim
	}
	if resident == nil {
		resident = ResidentFile
	}
	log := k.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
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
			log.Debug("cannot measure resident memory; not trimming", "err", err)
			return nil
		}
		if base < 0 || now-base >= slack {
			res, err := trim()
			if err != nil {
				log.Debug("could not release pages; not trying again", "err", err)
				return nil
			}
			if base, err = resident(); err != nil {
				return nil
			}
			log.Debug("released pages", "segments", res.Segments, "resident_before_kib", now>>10, "resident_after_kib", base>>10)
		}
		t.Reset(every)
	}
}
