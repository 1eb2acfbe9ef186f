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
	maps, err := os.ReadFile("/proc/self/smaps")
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

// mapping is one mapping of /proc/self/smaps.
type mapping struct {
	start, end uintptr
	path       string
}

// readOnlyMappings parses /proc/self/smaps and returns the private,
// file-backed mappings without write permission whose pages all still equal
// the file: none was copied on write (Anonymous 0 kB). A mapping made
// read-only after the dynamic linker relocated it (RELRO, in binaries
// linked with cgo) holds such copies; dropping them would bring back the
// unrelocated bytes, so it is left alone.
func readOnlyMappings(smaps []byte) []mapping {
	var out []mapping
	var cur *mapping
	clean := false
	flush := func() {
		if cur != nil && clean {
			out = append(out, *cur)
		}
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			// A mapping header: address perms offset dev inode pathname.
			flush()
			if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
				continue
			}
			perms := f[1]
			if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
				continue
			}
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil || end <= start {
				continue
			}
			cur = &mapping{start: uintptr(start), end: uintptr(end), path: strings.Join(f[5:], " ")}
			clean = false
			continue
		}
		if cur != nil && f[0] == "Anonymous:" && len(f) >= 2 {
			clean = f[1] == "0"
		}
	}
	flush()
	return out
}
