// Package clitest drives the terminal chat under a pseudo-terminal in
// tests: a Terminal is a pty pair whose output is collected and searched,
// and whose input is typed by the test.
//
// Output is compared after removing escape sequences and all whitespace:
// the terminal renderer moves the cursor instead of writing blanks and
// redraws only what changed, so the text on screen is reliable but its
// spacing in the byte stream is not.
package clitest

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
)

// Timeout bounds every wait.
const Timeout = 20 * time.Second

// Keys typed on a terminal.
const (
	Enter     = "\r"
	AltEnter  = "\x1b\r"
	CtrlC     = "\x03"
	CtrlD     = "\x04"
	Up        = "\x1b[A"
	Down      = "\x1b[B"
	Backspace = "\x7f"
)

// Terminal is a pseudo-terminal: the program under test uses TTY (its
// standard input and output), the test reads what it draws and types.
type Terminal struct {
	t *testing.T
	// TTY is the terminal side for the program.
	TTY    *os.File
	master *os.File

	mu      sync.Mutex
	out     bytes.Buffer
	mark    int           // WaitFor searches the normalized output from here
	changed chan struct{} // closed and replaced when output arrives
	readErr error
	done    chan struct{}
}

// New opens a pseudo-terminal of cols×rows; it is closed when the test
// ends.
func New(t *testing.T, cols, rows int) *Terminal {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatalf("set terminal size: %v", err)
	}
	tm := &Terminal{t: t, TTY: tty, master: master, changed: make(chan struct{}), done: make(chan struct{})}
	go tm.read()
	t.Cleanup(func() {
		tty.Close()
		master.Close()
		<-tm.done
	})
	return tm
}

func (tm *Terminal) read() {
	defer close(tm.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := tm.master.Read(buf)
		tm.mu.Lock()
		tm.out.Write(buf[:n])
		if err != nil {
			tm.readErr = err
		}
		close(tm.changed)
		tm.changed = make(chan struct{})
		tm.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Type writes keys to the terminal as if typed.
func (tm *Terminal) Type(keys ...string) {
	tm.t.Helper()
	for _, k := range keys {
		if _, err := io.WriteString(tm.master, k); err != nil {
			tm.t.Fatalf("type %q: %v", k, err)
		}
	}
}

// Normalize is how output and expectations are compared: escape sequences
// and whitespace removed.
func Normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, ansi.Strip(s))
}

// WaitFor waits until text appears in the output after the previous
// match, and returns the output from the previous match to this one,
// normalized. It fails the test after Timeout or when the terminal closes
// first.
func (tm *Terminal) WaitFor(text string) string {
	tm.t.Helper()
	want := Normalize(text)
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		tm.mu.Lock()
		all := Normalize(tm.out.String())
		from := min(tm.mark, len(all))
		got := all[from:]
		if i := strings.Index(got, want); i >= 0 {
			tm.mark = from + i + len(want)
			tm.mu.Unlock()
			return got[:i+len(want)]
		}
		changed, rerr := tm.changed, tm.readErr
		tm.mu.Unlock()
		if len(got) > 3000 {
			got = got[len(got)-3000:]
		}
		if rerr != nil {
			tm.t.Fatalf("the terminal closed (%v) before %q appeared; the output since the last match was:\n%s", rerr, want, got)
		}
		select {
		case <-changed:
		case <-deadline.C:
			tm.t.Fatalf("waited %v for %q on the terminal; the output since the last match was:\n%s", Timeout, want, got)
		}
	}
}

// Output is everything the program wrote, normalized.
func (tm *Terminal) Output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return Normalize(tm.out.String())
}
