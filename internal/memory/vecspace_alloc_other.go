//go:build unix && !linux

package memory

import (
	"errors"
	"os"
)

// allocate cannot reserve the file's blocks without Linux's fallocate (a
// write through the mapping to an unallocated block of a full disk would
// fault): the rows stay in the heap.
func allocate(f *os.File, size int64) error {
	return errors.New("no fallocate on this system")
}
