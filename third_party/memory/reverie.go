// Reverie: a trim an owner can ask for without holding the lock that
// guards an Allocator. See REVERIE.md.

package memory // import "modernc.org/memory"

import "sync/atomic"

// trimRequested is set by RequestTrim and taken by the next UintptrFree.
var trimRequested atomic.Bool

// RequestTrim asks the next Allocator that frees a block (UintptrFree,
// Free, UnsafeFree) to Trim right after that free, under whatever lock its
// owner holds for the free. It is for an Allocator the caller cannot reach,
// such as the one modernc.org/libc keeps behind its malloc and free: a
// process that has just had its C code free what it caches asks for a trim,
// then frees one block of its own, and the empty regions the Allocator
// retains leave the process's resident memory. Safe for concurrent use.
func RequestTrim() { trimRequested.Store(true) }

// trimIfRequested runs Trim once per RequestTrim.
func (a *Allocator) trimIfRequested() {
	if trimRequested.CompareAndSwap(true, false) {
		a.Trim()
	}
}
