//go:build linux

package footprint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ResidentFile returns the process's resident file-backed memory in bytes
// (RssFile in /proc/self/status).
func ResidentFile() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read process status: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse RssFile %q: %w", strings.TrimSpace(v), err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no RssFile in /proc/self/status")
}

// dropExecutablePages madvises away this process's mappings of its own
// executable that are not writable.
func dropExecutablePages() (Result, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return Result{}, fmt.Errorf("find the executable: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Result{}, fmt.Errorf("read the memory map: %w", err)
	}
	var res Result
	for _, m := range readOnlyMappings(maps) {
		fi, err := os.Stat(m.path)
		if err != nil || !os.SameFile(fi, exe) {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return res, fmt.Errorf("release %s pages at %#x: %w", m.path, m.start, errno)
		}
		res.Segments++
		res.Bytes += int64(m.end - m.start)
	}
	return res, nil
}

// mapping is one line of /proc/self/maps.
type mapping struct {
	start, end uintptr
	path       string
}

// readOnlyMappings parses /proc/self/maps and returns the private,
// file-backed mappings without write permission.
func readOnlyMappings(maps []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode pathname
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		perms := f[1]
		if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{start: uintptr(start), end: uintptr(end), path: strings.Join(f[5:], " ")})
	}
	return out
}
