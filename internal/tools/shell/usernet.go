package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// userNetTimeout bounds each step of connecting a command's network
// namespace (bubblewrap's pid, slirp4netns ready).
const userNetTimeout = 10 * time.Second

// userNet is the network of one command run with tools.shell.network:
// bubblewrap gives the command its own network namespace and slirp4netns
// connects it to the outside through a user-mode TCP/IP stack in the host's
// namespace, with --disable-host-loopback: the command reaches the internet
// and the LAN, but neither the host's loopback (the assistant's own API,
// databases and other local services listening on 127.0.0.1) nor
// slirp4netns's gateway to it.
type userNet struct {
	infoR, infoW   *os.File // bubblewrap writes the child's pid as JSON
	blockR, blockW *os.File // bubblewrap waits for a byte before the command
	dir            string   // holds resolv.conf
	resolv         string   // names slirp4netns's DNS (10.0.2.3)
	slirp          *exec.Cmd
}

func newUserNet() (*userNet, error) {
	u := &userNet{}
	var err error
	if u.infoR, u.infoW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	if u.blockR, u.blockW, err = os.Pipe(); err != nil {
		u.close(nil)
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	if u.dir, err = os.MkdirTemp("", "reverie-net-"); err != nil {
		u.close(nil)
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	u.resolv = filepath.Join(u.dir, "resolv.conf")
	if err := os.WriteFile(u.resolv, []byte("nameserver 10.0.2.3\n"), 0o644); err != nil {
		u.close(nil)
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	return u, nil
}

// startUserNet runs once cmd (bubblewrap) has started: it reads the
// sandbox's pid, starts slirp4netns on its network namespace, waits until
// the interface is configured, then lets the command run.
func (s *Shell) startUserNet(ctx context.Context, u *userNet, cmd *exec.Cmd) error {
	// The child holds its ends now.
	u.infoW.Close()
	u.blockR.Close()
	_ = u.infoR.SetReadDeadline(time.Now().Add(userNetTimeout))
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(u.infoR).Decode(&info); err != nil || info.ChildPID <= 0 {
		return fmt.Errorf("network namespace: no pid from bubblewrap: %v", err)
	}
	// bubblewrap brings up the namespace's loopback itself, after it has
	// told the pid: slirp4netns configuring the namespace meanwhile makes
	// bubblewrap fail ("loopback: Failed RTM_NEWADDR").
	if err := loopbackUp(ctx, info.ChildPID); err != nil {
		return err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	defer readyR.Close()
	u.slirp = exec.CommandContext(ctx, s.slirp, "--configure", "--mtu=65520", "--disable-host-loopback",
		"--ready-fd", "3", strconv.Itoa(info.ChildPID), "tap0")
	u.slirp.ExtraFiles = []*os.File{readyW}
	u.slirp.WaitDelay = killGrace
	out := newCapped(4 << 10)
	u.slirp.Stdout, u.slirp.Stderr = out, out
	err = u.slirp.Start()
	readyW.Close()
	if err != nil {
		u.slirp = nil
		return fmt.Errorf("network namespace: start slirp4netns: %w", err)
	}
	_ = readyR.SetReadDeadline(time.Now().Add(userNetTimeout))
	if _, err := io.ReadFull(readyR, make([]byte, 1)); err != nil {
		return fmt.Errorf("network namespace: slirp4netns not ready: %v: %s", err, out.String())
	}
	if _, err := u.blockW.Write([]byte{1}); err != nil {
		return fmt.Errorf("network namespace: start the command: %w", err)
	}
	return nil
}

// loopbackUp waits until the network namespace of pid has its loopback
// address routed (127.0.0.1 in its FIB), which bubblewrap sets up before
// it waits on its block descriptor.
func loopbackUp(ctx context.Context, pid int) error {
	path := "/proc/" + strconv.Itoa(pid) + "/net/fib_trie"
	deadline := time.NewTimer(userNetTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte("127.0.0.1")) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("network namespace: bubblewrap did not bring up its loopback (%s): %v", path, err)
		case <-tick.C:
		}
	}
}

// close stops slirp4netns and releases the rest.
func (u *userNet) close(log *slog.Logger) {
	if u.slirp != nil && u.slirp.Process != nil {
		_ = u.slirp.Process.Kill()
		if err := u.slirp.Wait(); err != nil && log != nil && !isKilled(err) {
			log.Warn("slirp4netns ended with an error", "err", err)
		}
	}
	for _, f := range []*os.File{u.infoR, u.infoW, u.blockR, u.blockW} {
		if f != nil {
			f.Close()
		}
	}
	if u.dir != "" {
		_ = os.RemoveAll(u.dir)
	}
}

func isKilled(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}
