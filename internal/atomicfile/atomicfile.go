// Package atomicfile replaces files so that a crash leaves either the old or
// the new content, never a mix.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file at path atomically: the data goes to a temp file
// in the same directory (created, with mode 0700, when missing) with mode
// perm, is synced, renamed over path, and the directory is synced (best
// effort: not every file system syncs directories). On error the temp file
// is removed and path is unchanged.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
