// Package shell runs the execute_shell tool's commands: /bin/sh -c inside the
// workspace, with a timeout, a capped output and, when bubblewrap is
// available, a sandbox (read-only system directories, the workspace
// read-write, a private /tmp, every namespace unshared so the network is off
// unless configured, a cleared environment).
//
// Each Run owns its child process: the process group (and, sandboxed, the
// whole PID namespace) is killed on timeout or cancellation before Run
// returns. A Shell is safe for concurrent use.
package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/tools/workspace"
)

// Mode says whether commands must, may or must not run in the sandbox.
type Mode string

const (
	// ModeAuto uses bubblewrap when it works and runs unsandboxed (saying so
	// in every result) otherwise.
	ModeAuto Mode = "auto"
	// ModeRequired refuses to build a Shell without a working bubblewrap.
	ModeRequired Mode = "required"
	// ModeOff never sandboxes.
	ModeOff Mode = "off"
)

// Sandbox names reported in results.
const (
	SandboxBubblewrap = "bubblewrap"
	SandboxNone       = "none"
)

// ErrSandboxUnavailable is returned by New in ModeRequired when bubblewrap
// is missing or fails its self-test.
var ErrSandboxUnavailable = errors.New("shell sandbox (bubblewrap) unavailable")

// Config configures a Shell. Zero durations and sizes take the defaults.
type Config struct {
	Workspace *workspace.Workspace
	Mode      Mode
	// Network re-shares the host network inside the sandbox.
	Network        bool
	DefaultTimeout time.Duration // default 60s
	MaxTimeout     time.Duration // default 10m
	MaxOutput      int           // bytes of merged stdout+stderr kept; default 32 KiB
	// Bwrap is the bubblewrap binary; "" looks "bwrap" up on PATH.
	Bwrap string
}

// Defaults for zero Config fields.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxTime   = 10 * time.Minute
	DefaultMaxOutput = 32 << 10
	selfTestTimeout  = 10 * time.Second
	killGrace        = 2 * time.Second
)

// Shell runs commands.
type Shell struct {
	cfg    Config
	bwrap  string // empty when not sandboxed
	reason string // why there is no sandbox, when there is none
	logger *slog.Logger
}

// New builds a Shell. Unless Mode is off it looks for bubblewrap and runs a
// self-test command inside it; in ModeRequired a failure is an error
// wrapping ErrSandboxUnavailable.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Shell, error) {
	if cfg.Workspace == nil {
		return nil, errors.New("shell: no workspace")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeAuto
	case ModeAuto, ModeRequired, ModeOff:
	default:
		return nil, fmt.Errorf("shell: sandbox mode %q: want auto, required or off", cfg.Mode)
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTime
	}
	if cfg.DefaultTimeout > cfg.MaxTimeout {
		cfg.DefaultTimeout = cfg.MaxTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	s := &Shell{cfg: cfg, logger: logger}
	if cfg.Mode == ModeOff {
		s.reason = "disabled by configuration (shell.sandbox: off)"
		logger.Warn("shell sandbox disabled by configuration: commands run directly on the host")
		return s, nil
	}
	path, err := probe(ctx, cfg.Bwrap)
	if err != nil {
		if cfg.Mode == ModeRequired {
			return nil, fmt.Errorf("%w: %v", ErrSandboxUnavailable, err)
		}
		s.reason = err.Error()
		logger.Warn("shell sandbox unavailable: commands run directly on the host", "reason", err)
		return s, nil
	}
	s.bwrap = path
	logger.Info("shell sandbox active", "bwrap", path, "network", cfg.Network)
	return s, nil
}

// Sandbox is SandboxBubblewrap or SandboxNone.
func (s *Shell) Sandbox() string {
	if s.bwrap != "" {
		return SandboxBubblewrap
	}
	return SandboxNone
}

// NetworkEnabled reports whether sandboxed commands can reach the network.
// Unsandboxed commands always can.
func (s *Shell) NetworkEnabled() bool {
	return s.bwrap == "" || s.cfg.Network
}

// Status describes the sandbox in one line, for diagnostics.
func (s *Shell) Status() string {
	if s.bwrap != "" {
		net := "network off"
		if s.cfg.Network {
			net = "network on"
		}
		return fmt.Sprintf("bubblewrap (%s, %s)", s.bwrap, net)
	}
	return "none: " + s.reason
}

// SandboxStatus probes this machine for a working bubblewrap, without any
// configuration, and describes the result in one line (for reverie doctor).
func SandboxStatus(ctx context.Context) string {
	path, err := probe(ctx, "")
	if err != nil {
		return "unavailable: " + err.Error() + " (install the bubblewrap package; until then execute_shell runs commands unsandboxed when shell.sandbox is auto)"
	}
	return "bubblewrap available at " + path
}

// probe finds bubblewrap and runs a trivial sandboxed command.
func probe(ctx context.Context, bwrap string) (string, error) {
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return "", fmt.Errorf("bubblewrap not found: %w", err)
	}
	dir, err := os.MkdirTemp("", "reverie-bwrap-probe-")
	if err != nil {
		return "", fmt.Errorf("bubblewrap self-test: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	defer cancel()
	args := append(bwrapArgs(dir, dir, false), "/bin/sh", "-c", "echo sandbox-ok")
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bubblewrap self-test failed (are unprivileged user namespaces disabled?): %v: %s", err, strings.TrimSpace(string(out)))
	}
	if strings.TrimSpace(string(out)) != "sandbox-ok" {
		return "", fmt.Errorf("bubblewrap self-test printed %q", out)
	}
	return path, nil
}

// etcEntries are the parts of /etc made visible in the sandbox: users, name
// resolution, TLS roots, the dynamic loader, time zone and Debian's
// alternatives (many commands are symbolic links through it).
var etcEntries = []string{
	"/etc/passwd", "/etc/group", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf",
	"/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/timezone", "/etc/mime.types", "/etc/os-release",
	"/etc/gitconfig", "/etc/inputrc", "/etc/profile",
}

const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// bwrapArgs builds the bubblewrap options for a command run in workdir with
// ws bound read-write; the command follows.
func bwrapArgs(ws, workdir string, network bool) []string {
	args := []string{"--die-with-parent", "--new-session", "--unshare-all"}
	if network {
		args = append(args, "--share-net")
	}
	args = append(args, "--ro-bind", "/usr", "/usr")
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		info, err := os.Lstat(d)
		switch {
		case err != nil:
		case info.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case info.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, e := range etcEntries {
		args = append(args, "--ro-bind-try", e, e)
	}
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--tmpfs", "/tmp",
		"--bind", ws, ws,
		// The root itself (where bubblewrap created the mount points) is
		// read-only: only the workspace and /tmp are writable.
		"--remount-ro", "/",
		"--chdir", workdir,
		"--clearenv",
		"--setenv", "PATH", sandboxPath,
		"--setenv", "HOME", ws,
		"--setenv", "TMPDIR", "/tmp",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "TERM", "dumb",
		"--",
	)
	return args
}

// Args are the arguments of execute_shell.
type Args struct {
	Command        string `json:"command" jsonschema:"the command line, run with /bin/sh -c"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"seconds before the command is killed (default 60; capped by configuration)"`
	Workdir        string `json:"workdir,omitempty" jsonschema:"working directory relative to the workspace (default: the workspace root)"`
}

// Result is what execute_shell returns.
type Result struct {
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int `json:"exit_code"`
	// Output is stdout and stderr merged, capped (head and tail kept).
	Output   string `json:"output"`
	TimedOut bool   `json:"timed_out"`
	Sandbox  string `json:"sandbox"`
	// Note explains anything unusual: no sandbox, a clamped timeout.
	Note string `json:"note,omitempty"`
}

// Run executes one command and waits for it (and its process group) to end.
// A non-zero exit or a timeout is a Result, not an error; errors are for
// refused arguments, a command that could not start and cancellation of ctx.
func (s *Shell) Run(ctx context.Context, a Args) (Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return Result{}, errors.New("command is empty")
	}
	var notes []string
	timeout := s.cfg.DefaultTimeout
	if a.TimeoutSeconds < 0 {
		return Result{}, errors.New("timeout_seconds must not be negative")
	}
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
		if timeout > s.cfg.MaxTimeout {
			timeout = s.cfg.MaxTimeout
			notes = append(notes, fmt.Sprintf("timeout lowered to the configured maximum of %s", s.cfg.MaxTimeout))
		}
	}
	return s.run(ctx, a, timeout, notes)
}

func (s *Shell) run(ctx context.Context, a Args, timeout time.Duration, notes []string) (Result, error) {
	ws := s.cfg.Workspace
	workdir := ws.Dir()
	if a.Workdir != "" {
		rel, err := ws.Rel(a.Workdir)
		if err != nil {
			return Result{}, fmt.Errorf("workdir: %w", err)
		}
		info, err := ws.Stat(rel)
		if err != nil {
			return Result{}, fmt.Errorf("workdir: %w", err)
		}
		if !info.IsDir() {
			return Result{}, fmt.Errorf("workdir %s is not a directory", rel)
		}
		workdir = ws.Abs(rel)
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var cmd *exec.Cmd
	if s.bwrap != "" {
		args := append(bwrapArgs(ws.Dir(), workdir, s.cfg.Network), "/bin/sh", "-c", a.Command)
		cmd = exec.CommandContext(runCtx, s.bwrap, args...)
	} else {
		cmd = exec.CommandContext(runCtx, "/bin/sh", "-c", a.Command)
		cmd.Dir = workdir
		cmd.Env = hostEnv(ws.Dir())
		notes = append(notes, "WARNING: no sandbox is active ("+s.reason+"): the command ran directly on the host with this user's full permissions, network access and files outside the workspace")
	}
	out := newCapped(s.cfg.MaxOutput)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// Kill the whole process group: the shell and everything it started.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = killGrace

	start := time.Now()
	err := cmd.Run()
	res := Result{ExitCode: 0, Sandbox: s.Sandbox()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		// The command ended but something it started kept the output open.
		notes = append(notes, "a background process kept the output open and was cut off")
	default:
		if runCtx.Err() == nil {
			return Result{}, fmt.Errorf("start command: %w", err)
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Result{}, fmt.Errorf("command interrupted: %w", ctxErr)
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
		res.ExitCode = -1
		notes = append(notes, fmt.Sprintf("the command was killed after %s", timeout))
	}
	res.Output = out.String()
	res.Note = strings.Join(notes, "; ")
	s.logger.Debug("shell command finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"sandbox", res.Sandbox, "duration", time.Since(start), "output_bytes", out.total)
	return res, nil
}

// hostEnv is the environment of an unsandboxed command: enough to work,
// without the secrets (API keys, tokens) of Reverie's own environment. HOME
// is the workspace, as in the sandbox.
func hostEnv(home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = sandboxPath
	}
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8", "TERM=dumb"}
	if user := os.Getenv("USER"); user != "" {
		env = append(env, "USER="+user)
	}
	return env
}

// capped keeps the first and last halves of what is written to it once the
// total exceeds its limit. exec.Cmd calls Write from one goroutine at a time
// when Stdout and Stderr are the same writer.
type capped struct {
	limit int
	head  []byte
	tail  []byte // ring buffer of the last limit-len(head) bytes
	pos   int    // next write index in tail once it is full
	total int64
}

func newCapped(limit int) *capped {
	return &capped{limit: limit}
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	headMax := c.limit / 2
	if room := headMax - len(c.head); room > 0 {
		take := min(room, len(p))
		c.head = append(c.head, p[:take]...)
		p = p[take:]
	}
	tailMax := c.limit - headMax
	for len(p) > 0 && tailMax > 0 {
		if len(c.tail) < tailMax {
			take := min(tailMax-len(c.tail), len(p))
			c.tail = append(c.tail, p[:take]...)
			p = p[take:]
			continue
		}
		if len(p) >= tailMax {
			copy(c.tail, p[len(p)-tailMax:])
			c.pos = 0
			break
		}
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % tailMax
		p = p[k:]
	}
	return n, nil
}

// String renders the kept output, marking the cut.
func (c *capped) String() string {
	tail := append(append([]byte{}, c.tail[c.pos:]...), c.tail[:c.pos]...)
	kept := int64(len(c.head) + len(tail))
	if c.total <= kept {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	head := c.head
	for len(head) > 0 && !utf8.Valid(head) && len(c.head)-len(head) < utf8.UTFMax {
		head = head[:len(head)-1]
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	var b bytes.Buffer
	b.Write(head)
	fmt.Fprintf(&b, "\n\n[… output truncated: %d of %d bytes omitted …]\n\n", c.total-kept, c.total)
	b.Write(tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}
