//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/supervisor"
)

// args is the command line `reverie run` would write for opts.
func args(opts supervisor.Options) []string {
	return supervisor.Flags{Options: opts}.Args()
}

func TestCommandLineErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		says string
	}{
		{name: "another build's protocol", args: []string{fmt.Sprintf("-protocol=%d", supervisor.Protocol+1), "-flag-of-the-future", "--", "true"},
			says: fmt.Sprintf("reverie-supervisor: reverie-supervisor speaks protocol %d, reverie asked for %d: install both from the same build",
				supervisor.Protocol, supervisor.Protocol+1)},
		{name: "started by hand", args: []string{"reverie", "agent"}, says: "started by `reverie run`"},
		{name: "unknown flag", args: append(args(supervisor.Options{Command: []string{"true"}})[:1], "-nope", "--", "true"), says: "nope"},
		{name: "bad log level", args: append(args(supervisor.Options{Command: []string{"true"}})[:1], "-log-level=loud", "--", "true"), says: "loud"},
		{name: "bad secrets fd", args: append(args(supervisor.Options{Command: []string{"true"}})[:1], "-secrets-fd=1000", "--", "true"), says: "secret values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(context.Background(), tc.args, &stderr); code != supervisor.ExitConfigError {
				t.Errorf("exit code %d, want %d (ExitConfigError)", code, supervisor.ExitConfigError)
			}
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("stderr = %q, want it to say %q", stderr.String(), tc.says)
			}
		})
	}
}

// The exit code follows the agent's, as `reverie run`'s in-process
// supervisor's does.
func TestExitCodes(t *testing.T) {
	sh, err := os.Stat("/bin/sh")
	if err != nil || sh.IsDir() {
		t.Skip("no /bin/sh")
	}
	tests := []struct {
		name  string
		agent int
		want  int
	}{
		{name: "finished", agent: 0, want: 0},
		{name: "invalid configuration", agent: supervisor.ExitConfigError, want: supervisor.ExitConfigError},
		{name: "locked", agent: supervisor.ExitLocked, want: supervisor.ExitLocked},
		{name: "data dir", agent: supervisor.ExitDataDir, want: supervisor.ExitDataDir},
		{name: "environment", agent: supervisor.ExitEnvironment, want: supervisor.ExitEnvironment},
		{name: "crash loop", agent: 1, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), args(supervisor.Options{
				Command:        []string{"/bin/sh", "-c", fmt.Sprintf("exit %d", tc.agent)},
				BackoffMin:     time.Millisecond,
				BackoffMax:     time.Millisecond,
				CrashLoopLimit: 2,
			}), &stderr)
			if code != tc.want {
				t.Errorf("exit code %d, want %d\n%s", code, tc.want, stderr.String())
			}
		})
	}
}

// Secret values arrive through the inherited descriptor, are redacted from
// the logs, and the descriptor is closed.
func TestSecretsAreRedacted(t *testing.T) {
	const secret = "sk-the-secret-0123456789"
	dir := t.TempDir()
	restart := filepath.Join(dir, "restart.request")
	if err := os.WriteFile(restart, []byte("leaked "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := supervisor.WriteSecrets(w, []string{secret}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// run closes the descriptor it is given: give it its own.
	fd, err := syscall.Dup(int(r.Fd()))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), supervisor.Flags{
		Options:   supervisor.Options{Command: []string{"true"}, RestartFile: restart},
		SecretsFD: fd,
	}.Args(), &stderr)
	if code != 0 {
		t.Fatalf("exit code %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "removed a restart request") || strings.Contains(stderr.String(), secret) ||
		!strings.Contains(stderr.String(), "[REDACTED]") {
		t.Errorf("the restart reason with the secret was not logged redacted:\n%s", stderr.String())
	}
	if _, err := syscall.Dup(fd); err == nil {
		t.Errorf("descriptor %d is still open", fd)
	}
}
