//go:build !unix

package memory

import (
	"errors"
	"os"
)

// mapFile is not available without Unix mappings: the rows stay in the heap.
func mapFile(f *os.File) (vecSpace, error) {
	return nil, errors.New("no file mappings on this system")
}
