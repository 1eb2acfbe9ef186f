package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned (wrapped in a *LockedError) by Lock when another
// agent holds the data dir.
var ErrLocked = errors.New("data dir is locked by another Reverie agent")

// LockedError says which process holds the lock.
type LockedError struct {
	Dir string
	PID int // 0 when the holder's pid could not be read
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("another Reverie agent (pid %d) is running on this data dir %s; stop it first or use another --data dir", e.PID, e.Dir)
	}
	return fmt.Sprintf("another Reverie agent is running on this data dir %s; stop it first or use another --data dir", e.Dir)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock takes the exclusive, non-blocking lock on dir/.lock and writes this
// process's pid into it. It fails at once with a *LockedError (errors.Is
// ErrLocked) when another agent holds it, in this or another process. The
// lock lasts until release is called or the process exits; release is safe
// to call more than once.
func Lock(dir string) (release func() error, err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	if err := flock(f); err != nil {
		pid := readPID(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &LockedError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := writePID(f); err != nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("write data dir lock: %w", err)
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			// The file stays: removing it would let a process that opened it
			// just before lock an unlinked inode while a third creates a new
			// file and locks that too.
			uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN)
			cerr := f.Close()
			if err := errors.Join(uerr, cerr); err != nil {
				rerr = fmt.Errorf("release data dir lock: %w", err)
			}
		})
		return rerr
	}, nil
}

func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// writePID records the holder's PID for the "locked by" message. It is not
// synced to disk: the lock is the flock, which a crash releases anyway, and a
// PID lost with the page cache only leaves that message without a number
// (an fsync here cost most of the start-up's milliseconds).
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

func readPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
