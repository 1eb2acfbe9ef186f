package api

import (
	"errors"
	"syscall"
)

// ErrDiskFull: the disk holding the data directory is full (507). Services
// need not wrap it: IsDiskFull also recognises the operating system's and
// SQLite's own errors for a full disk anywhere in an error's chain.
var ErrDiskFull = errors.New("the disk holding the data directory is full")

// SQLite result codes that mean a full disk (https://sqlite.org/rescode.html).
const (
	// sqliteFull is SQLITE_FULL, the primary code of a write that found
	// no space.
	sqliteFull = 13
	// sqliteIOErrShmSize is SQLITE_IOERR_SHMSIZE: the shared-memory file
	// of a WAL database could not be grown ("disk I/O error (4874)" when a
	// database is opened on a full disk).
	sqliteIOErrShmSize = 10 | 19<<8
)

// IsDiskFull reports whether err says the disk is full: ErrDiskFull,
// ENOSPC or EDQUOT, or an SQLite result code of SQLITE_FULL or
// SQLITE_IOERR_SHMSIZE from any error in the chain with a Code() int method
// (modernc.org/sqlite's *Error), so that callers need no SQLite import. It
// is the one place that decides; the web extension answers 507 on it and the
// agent exits with its data-dir code.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	return anyInChain(err, func(e error) bool {
		coded, ok := e.(interface{ Code() int })
		if !ok {
			return false
		}
		c := coded.Code()
		return c&0xff == sqliteFull || c == sqliteIOErrShmSize
	})
}

// anyInChain reports whether f holds for err or any error it wraps
// (Unwrap() error and Unwrap() []error, depth first).
func anyInChain(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if anyInChain(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
