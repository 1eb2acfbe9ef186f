//go:build linux

package footprint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time the process has used, user and system.
func ProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("read the process's CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// ResidentAnon returns the process's private anonymous resident memory in
// bytes (RssAnon in /proc/self/status).
func ResidentAnon() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read process status: %w", err)
	}
	return parseStatus(b, "RssAnon:")
}

// parseStatus returns the size in bytes of the line of /proc/PID/status
// that starts with key ("RssAnon:").
func parseStatus(status []byte, key string) (int64, error) {
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			v = strings.TrimSpace(v)
			kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s %q: %w", key, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no " + key + " line in /proc/self/status")
}
