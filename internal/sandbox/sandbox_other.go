//go:build !linux

package sandbox

import (
	"errors"
	"io"
)

// errNeedsLinux: Landlock, capabilities and the resource limits the
// launcher sets are Linux's; elsewhere execute_shell runs without this
// layer (the shell tool reports which layers are active).
var errNeedsLinux = errors.New("confining a command needs Linux (Landlock)")

// ABI is 0 with an error: there is no Landlock outside Linux.
func ABI() (int, error) { return 0, errNeedsLinux }

// Main refuses: outside Linux the launcher cannot confine a command.
func Main(args []string, stderr io.Writer) int {
	w := stderr
	if spec, _, err := parse(args); err == nil && spec.StatusFD > 0 {
		w = fdWriter(spec.StatusFD)
	}
	return fail(w, errNeedsLinux)
}
