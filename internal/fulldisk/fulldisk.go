// Package fulldisk gives tests a directory on a file system that really
// runs out of space: a small tmpfs mounted for the test, so that writes fail
// with ENOSPC and SQLite with SQLITE_FULL the way they do on a full disk.
// Mounting needs root (CAP_SYS_ADMIN); Mount says why when it cannot, and
// the caller decides whether to skip. Only tests import it.
package fulldisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Mount mounts a tmpfs of size bytes on a new directory under t.TempDir()
// and returns the directory; it is unmounted when the test ends. The error
// says why it could not be mounted (not root, no permission in this
// container).
func Mount(t testing.TB, size int64) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		return "", errors.New("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return "", fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the test tmpfs %s: %v", dir, err)
		}
	})
	return dir, nil
}

// Fill writes a filler file in dir until the file system is full and
// returns a function that deletes it again (freeing the space).
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, ".fulldisk-filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatalf("create the filler file: %v", err)
	}
	buf := make([]byte, 64<<10)
	for {
		_, err := f.Write(buf)
		if errors.Is(err, syscall.ENOSPC) {
			// The last blocks: fill what a 64 KiB write could not.
			for len(buf) > 1 {
				buf = buf[:len(buf)/2]
				for {
					if _, err := f.Write(buf); err != nil {
						break
					}
				}
			}
			break
		}
		if err != nil {
			f.Close()
			t.Fatalf("fill the disk: %v", err)
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close the filler file: %v", err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("remove the filler file: %v", err)
		}
	}
}
