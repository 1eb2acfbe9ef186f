// Package benchproc holds what the benchmark programs under bench/ share
// about the processes they start and measure: a free loopback port for an
// agent to listen on and its memory figures and thread count from /proc.
package benchproc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RssAnon reads the process's RssAnon (its private resident memory) in KiB.
func RssAnon(pid int) (int64, error) {
	return KiB(fmt.Sprintf("/proc/%d/status", pid), "RssAnon:")
}

// Threads reads how many OS threads the process has.
func Threads(pid int) (int64, error) {
	return KiB(fmt.Sprintf("/proc/%d/status", pid), "Threads:")
}

// Pss reads the process's proportional set size in KiB.
func Pss(pid int) (int64, error) {
	return KiB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}

// MappedPss sums the proportional set size in KiB of the process's
// mappings of files whose path contains name (an unlinked file's path
// still shows, followed by " (deleted)").
func MappedPss(pid int, name string) (int64, error) {
	return mappedPss(fmt.Sprintf("/proc/%d/smaps", pid), name)
}

// mappedPss sums the Pss lines of the mappings in the smaps-format file
// whose pathname contains name.
func mappedPss(file, name string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	var sum int64
	in := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header: range perms offset dev inode [path]
			in = len(f) >= 6 && strings.Contains(strings.Join(f[5:], " "), name)
			continue
		}
		if in && f[0] == "Pss:" && len(f) >= 2 {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", file, err)
			}
			sum += n
		}
	}
	return sum, nil
}

// KiB reads the figure in kB (or the count, for a line without a unit)
// of the line of file that starts with key.
func KiB(file, key string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", key, file)
}
