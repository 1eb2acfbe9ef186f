//go:build !linux

package footprint

import "errors"

func dropExecutablePages() (Result, error) { return Result{}, nil }

// ResidentFile is not measured on this system.
func ResidentFile() (int64, error) {
	return 0, errors.New("resident memory is not measured on this system")
}
