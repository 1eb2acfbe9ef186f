//go:build unix

package memory

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fileSpace keeps the rows in a shared mapping of an unlinked file (see
// vecSpace). The index's lock serialises grow and trim with every reader.
// When the fileSpace becomes unreachable (its index dropped: a model
// switch, a store no longer used) a cleanup unmaps and closes the file.
type fileSpace struct {
	mp *mapped
	// fallback is set once mapping failed: the rows moved to the heap.
	fallback bool
}

// mapped is a file and its current mapping; the cleanup holds it, not the
// fileSpace.
type mapped struct {
	f  *os.File
	mu sync.Mutex // the cleanup runs on its own goroutine
	m  []byte     // nil before the first grow
}

var _ vecSpace = (*fileSpace)(nil)

func mapFile(f *os.File) (vecSpace, error) {
	s := &fileSpace{mp: &mapped{f: f}}
	runtime.AddCleanup(s, func(mp *mapped) {
		mp.unmap()
		mp.f.Close()
	}, s.mp)
	return s, nil
}

func (mp *mapped) unmap() {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.m != nil {
		unix.Munmap(mp.m)
		mp.m = nil
	}
}

// remap sizes the file to size bytes and replaces the mapping with one of
// the whole file (which holds the rows, so the new mapping has them). The
// file's blocks are allocated here (fallocate), not when a row is first
// written through the mapping: a full disk then fails this call, and the
// rows move to the heap, instead of the write faulting with SIGBUS.
func (mp *mapped) remap(size int) ([]byte, error) {
	if err := allocate(mp.f, int64(size)); err != nil {
		return nil, fmt.Errorf("grow the vector file: %w", err)
	}
	m, err := unix.Mmap(int(mp.f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the vector file: %w", err)
	}
	mp.mu.Lock()
	old := mp.m
	mp.m = m
	mp.mu.Unlock()
	if old != nil {
		unix.Munmap(old)
	}
	return m, nil
}

// grow extends the file to n bytes (whole pages) and maps it anew. When the
// file cannot grow or be mapped, the rows move to the heap for good.
func (s *fileSpace) grow(old []int8, n int) []int8 {
	if n <= cap(old) {
		return old[:len(old):cap(old)]
	}
	if s.fallback {
		return heapSpace{}.grow(old, n)
	}
	page := os.Getpagesize()
	m, err := s.mp.remap((n + page - 1) / page * page)
	if err != nil {
		s.fallback = true
		out := heapSpace{}.grow(old, n) // copies while old is still mapped
		s.mp.unmap()
		return out
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(m))), len(m))[:len(old)]
}

// trim drops the mapping's pages from the process's resident set:
// MADV_DONTNEED on a shared file mapping keeps their contents in the file,
// and the next read faults them back in from the file cache.
func (s *fileSpace) trim() {
	s.mp.mu.Lock()
	defer s.mp.mu.Unlock()
	if !s.fallback && s.mp.m != nil {
		unix.Madvise(s.mp.m, unix.MADV_DONTNEED)
	}
}

func (s *fileSpace) kind() string {
	if s.fallback {
		return "heap"
	}
	return "file"
}
