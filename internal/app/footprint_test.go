package app

import (
	"os/user"
	"testing"

	"github.com/reverie-ai/reverie/internal/footprint"
)

// This test binary is linked externally when cgo is on (the sandbox's
// Landlock package uses cgo), so the dynamic linker has relocated a
// read-only (RELRO) part of it. Trimming must leave that part alone: with
// it dropped, the next call into libc jumps to address 0.
func TestTrimKeepsRelocatedPages(t *testing.T) {
	if _, err := footprint.Trim(); err != nil {
		t.Skip(err)
	}
	if _, err := user.Current(); err != nil {
		t.Fatal(err)
	}
}
