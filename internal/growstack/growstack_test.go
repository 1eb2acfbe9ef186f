package growstack

import (
	"runtime/debug"
	"testing"
	"unsafe"
)

// deep uses about n KiB of stack.
//
//go:noinline
func deep(n int) byte {
	var b [1000]byte
	b[n%len(b)] = byte(n)
	if n <= 1 {
		return b[0]
	}
	return deep(n-1) + b[(n+1)%len(b)]
}

// After To16K or To64K a goroutine's calls within that much stack run
// without the runtime copying the stack to a larger one; a goroutine that
// does not call them has its stack copied (moved) by the same calls.
func TestGrowBeforeDeepCalls(t *testing.T) {
	// No collection may shrink a stack while the test looks at it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, tc := range []struct {
		name  string
		grow  func()
		kib   int
		moved bool
	}{
		{name: "16 KiB without growing", grow: func() {}, kib: 10, moved: true},
		{name: "16 KiB after To16K", grow: To16K, kib: 10, moved: false},
		{name: "64 KiB without growing", grow: func() {}, kib: 50, moved: true},
		{name: "64 KiB after To16K", grow: To16K, kib: 50, moved: true},
		{name: "64 KiB after To64K", grow: To64K, kib: 50, moved: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moved := make(chan bool)
			go func() {
				tc.grow()
				var here byte
				before := uintptr(unsafe.Pointer(&here))
				deep(tc.kib)
				moved <- uintptr(unsafe.Pointer(&here)) != before
			}()
			if got := <-moved; got != tc.moved {
				t.Errorf("stack moved = %v, want %v", got, tc.moved)
			}
		})
	}
}
