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
// Trim is safe to call at any time from any goroutine; it is a no-op apart
// from the heap release on systems other than Linux.
package footprint

import "runtime/debug"

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
