//go:build !linux

package footprint

import "errors"

// ResidentAnon is not measured on this system.
func ResidentAnon() (int64, error) {
	return 0, errors.New("private resident memory is not measured on this system")
}
