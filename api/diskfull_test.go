package api

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

// sqliteError has the Code method of modernc.org/sqlite's *Error.
type sqliteError struct{ code int }

func (e *sqliteError) Error() string { return fmt.Sprintf("sqlite error (%d)", e.code) }
func (e *sqliteError) Code() int     { return e.code }

func TestIsDiskFull(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"sentinel wrapped", fmt.Errorf("save memory: %w", ErrDiskFull), true},
		{"ENOSPC from a file write", fmt.Errorf("write skill: %w", &fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), true},
		{"EDQUOT", &fs.PathError{Op: "write", Path: "/x", Err: syscall.EDQUOT}, true},
		{"SQLITE_FULL", fmt.Errorf("insert: %w", &sqliteError{13}), true},
		{"SQLITE_IOERR_SHMSIZE at open", fmt.Errorf("open database: %w", &sqliteError{4874}), true},
		{"inside a join", errors.Join(errors.New("other"), fmt.Errorf("commit: %w", &sqliteError{13})), true},
		{"SQLITE_BUSY", &sqliteError{5}, false},
		{"plain SQLITE_IOERR", &sqliteError{10}, false},
		{"SQLITE_CORRUPT", &sqliteError{11}, false},
		{"permission denied", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, false},
		{"invalid request", fmt.Errorf("%w: bad id", ErrInvalid), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsDiskFull(tt.err); got != tt.want {
				t.Errorf("IsDiskFull(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
