// Package growstack grows the calling goroutine's stack at once to the size
// the work ahead of it needs, while the stack is still shallow.
//
// A goroutine starts with a small stack (the runtime's average, 2–8 KiB)
// and the runtime doubles it whenever a call needs more, copying every
// frame and adjusting each pointer into the stack: the deeper the stack,
// the dearer the copy. A turn runs through SQLite's deep frames (the
// transpiled C of modernc.org/sqlite) on goroutines that start for it, and
// under 20 clients each turn made seven or eight such copies, ever deeper
// (the router's worker 4 → 8 → 16 → 32 KiB, the recall and the episode
// write 4 → 8 → 16 KiB): runtime.newstack was ~3 % of the agent's CPU
// (issue 32). To16K or To64K at the start of such a goroutine needs one
// frame of that size, so the runtime grows the stack to it in one copy of
// a few shallow frames. The stack is no larger than the goroutine grew it
// anyway, and it is freed when the goroutine ends.
//
// The garbage collector still halves the stack of a goroutine it finds
// using less than a quarter of it (a turn waiting for its model), and the
// deep calls after that grow it again: this saves the growth before the
// first collection, about half of it under the load.
//
// CockroachDB does the same (its util/growstack) with a frame declared in
// assembly. Here the frame is a local array in a branch that never runs:
// the compiler reserves it, so the function's entry checks for that much
// stack, but never zeroes it; this works on every architecture.
package growstack

// never is false; that the compiler cannot know it keeps the arrays below
// in the frames.
var never bool

// To16K makes the calling goroutine's stack at least 16 KiB.
//
//go:noinline
func To16K() {
	if never {
		var frame [8 << 10]byte
		keep(frame[:])
	}
}

// To64K makes the calling goroutine's stack at least 64 KiB.
//
//go:noinline
func To64K() {
	if never {
		var frame [32 << 10]byte
		keep(frame[:])
	}
}

//go:noinline
func keep(b []byte) {
	for i := range b {
		b[i] = byte(i)
	}
}
