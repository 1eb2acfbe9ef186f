//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/reverie-ai/reverie/internal/supervisor"
)

// leanSupervisorName is the lean supervisor's executable, looked for in the
// directory of reverie's own.
const leanSupervisorName = "reverie-supervisor"

// execLeanSupervisor returns the way main starts the lean supervisor on
// unix: execve in place of this process (same pid, so whoever started
// `reverie run` signals and waits for the supervisor exactly as before).
func execLeanSupervisor() leanSupervisor {
	return func(f supervisor.Flags, secrets, env []string) error {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find own executable: %w", err)
		}
		path := filepath.Join(filepath.Dir(exe), leanSupervisorName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: no %s", errNoLeanSupervisor, path)
		}
		var secretsJSON bytes.Buffer
		if err := supervisor.WriteSecrets(&secretsJSON, secrets); err != nil {
			return err
		}
		// The secrets go through a pipe whose read end the supervisor
		// inherits (it must not be close-on-exec), never on the command
		// line. Holding ForkLock until execve keeps a concurrent fork from
		// inheriting the pipe too.
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		var p [2]int
		if err := syscall.Pipe(p[:]); err != nil {
			return fmt.Errorf("make the pipe for the secret values: %w", err)
		}
		if err := writeAllNonblocking(p[1], secretsJSON.Bytes()); err != nil {
			syscall.Close(p[0])
			return err
		}
		f.SecretsFD = p[0]
		err = syscall.Exec(path, append([]string{path}, f.Args()...), env)
		syscall.Close(p[0])
		return fmt.Errorf("start %s: %w", path, err)
	}
}

// writeAllNonblocking writes b to the pipe's write end fd and closes it. The
// write does not block: secret values that do not fit in the pipe's buffer
// (64 KiB on Linux, far more than a few API keys) are an error rather than a
// hang, since nobody reads before the exec.
func writeAllNonblocking(fd int, b []byte) error {
	defer syscall.Close(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("write the secret values: %w", err)
	}
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write the secret values to the pipe (%d bytes left): %w", len(b), err)
		}
		b = b[n:]
	}
	return nil
}
