//go:build !linux

package footprint

import (
	"errors"
	"time"
)

// ResidentAnon is not measured on this system.
func ResidentAnon() (int64, error) {
	return 0, errors.New("private resident memory is not measured on this system")
}

// ProcessCPU is not measured on this system.
func ProcessCPU() (time.Duration, error) {
	return 0, errors.New("process CPU time is not measured on this system")
}
