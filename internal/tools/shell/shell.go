// Package shell runs the execute_shell tool's commands: /bin/sh -c inside the
// workspace, with a timeout, a capped output and up to two sandbox layers.
//
//   - bubblewrap, when it works: read-only system directories, the workspace
//     read-write, a private /tmp, every namespace unshared so the network is
//     off unless configured, a cleared environment.
//   - Landlock (package sandbox), when the kernel supports it: the command is
//     started through Reverie's own executable (sandbox.Subcommand), which
//     confines itself (system directories read-only, only the workspace and
//     a private temporary directory writable, TCP refused unless the network
//     is configured on, no_new_privs) and then executes /bin/sh. Inside
//     bubblewrap it is a second wall; without bubblewrap it is the only one.
//
// Every Result names the active layers ("bubblewrap+landlock", "bubblewrap",
// "landlock" or "none") and its note says what is missing and why. Prepare
// tests each layer once (a command run through it) before the first command
// uses it; the agent runs it in the background once it is ready.
//
// Config.Limits bound each command (limits.go): processes and memory by a
// cgroup of its own when Reverie can create one (cgroup v2 under a
// delegated parent, or cgroup v1 hierarchies as root), else by resource
// limits the launcher sets; file size and CPU time always by resource
// limits. Result.Limits says which are in force and how, Result.LimitHit
// which the command reached. The cgroup is emptied (SIGKILL) and removed
// when the command ends, so nothing it started outlives it.
//
// Each Run owns its child process: the process group (and, with bubblewrap,
// the whole PID namespace) is killed on timeout or cancellation before Run
// returns. A Shell is safe for concurrent use.
package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/sandbox"
	"github.com/reverie-ai/reverie/internal/tools/workspace"
)

// Mode says whether commands must, may or must not run in the sandbox.
type Mode string

const (
	// ModeAuto uses every sandbox layer that works and runs unsandboxed
	// (saying so in every result) when none does.
	ModeAuto Mode = "auto"
	// ModeRequired is ModeAuto, but New fails when no layer works.
	ModeRequired Mode = "required"
	// ModeOff never sandboxes.
	ModeOff Mode = "off"
)

// Sandbox layers reported in results (Result.Sandbox).
const (
	SandboxBubblewrap = "bubblewrap"
	SandboxLandlock   = "landlock"
	SandboxBoth       = "bubblewrap+landlock"
	SandboxNone       = "none"
)

// ErrSandboxUnavailable is returned by New in ModeRequired when neither
// bubblewrap nor Landlock works.
var ErrSandboxUnavailable = errors.New("shell sandbox unavailable (neither bubblewrap nor landlock works)")

// Config configures a Shell. Zero durations and sizes take the defaults.
type Config struct {
	Workspace *workspace.Workspace
	Mode      Mode
	// Network re-shares the host network inside bubblewrap and leaves it
	// unrestricted by Landlock.
	Network        bool
	DefaultTimeout time.Duration // default 60s
	MaxTimeout     time.Duration // default 10m
	MaxOutput      int           // bytes of merged stdout+stderr kept; default 32 KiB
	// Bwrap is the bubblewrap binary; "" looks "bwrap" up on PATH.
	Bwrap string
	// Limits bound each command's processes, memory, file size and CPU
	// time (zero fields: unlimited; DefaultLimits are the configuration's
	// defaults). They need the sandbox launcher: with Mode off, or when the
	// launcher does not work, no limit applies and results say so.
	Limits Limits
	// ReadOnly are absolute paths commands may read (never write) at the
	// same place, besides the workspace and the system directories: the
	// skills directory, whose scripts run from their folder. Paths missing
	// when a command starts are left out.
	ReadOnly []string

	// launcher replaces os.Executable as the program serving
	// sandbox.Subcommand, and landlockABI the kernel probe (tests).
	launcher    string
	landlockABI func() (int, error)
	// noCgroup makes the limits use resource limits only (tests).
	noCgroup bool
}

// Defaults for zero Config fields.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxTime   = 10 * time.Minute
	DefaultMaxOutput = 32 << 10
	selfTestTimeout  = 10 * time.Second
	killGrace        = 2 * time.Second
)

// innerLauncher is where bubblewrap mounts the launcher inside the sandbox.
const innerLauncher = "/run/reverie/sandbox-exec"

// Shell runs commands.
type Shell struct {
	cfg      Config
	bwrap    string // bubblewrap binary; empty when bubblewrap is not used
	launcher string // executable serving sandbox.Subcommand; empty when not used
	abi      int    // Landlock ABI the launcher enforces; 0 when Landlock is off
	reason   string // why bubblewrap is not used
	llReason string // why Landlock is not used
	note     string // what every result says about the layers ("" with both)
	// limits is how Limits are enforced; replaced (without cgroups) when
	// a command's cgroup cannot be created or joined.
	limits  atomic.Pointer[limitPlan]
	tmpSize int64  // size of bubblewrap's /tmp tmpfs; 0: unbounded
	tmpNote string // why /tmp is not bounded although a memory limit is set
	// slirp is slirp4netns, which gives a command with network its own
	// network namespace with a way out but no way to the host's loopback
	// (the assistant's own API, other local services); "" when network
	// is off, bubblewrap is not used or slirp4netns is not installed (the
	// host's network is then shared, and results say so).
	slirp  string
	logger *slog.Logger

	// Prepare's state: the fields above (but cfg and logger) are written by
	// setup, one at a time, and read only once prepared is true.
	prepareMu  sync.Mutex
	preparing  chan struct{} // closed when the running setup ends
	prepared   bool
	prepareErr error

	expectOnce sync.Once
	expect     string // Describe before Prepare has finished (expected)
}

// New builds a Shell. Unless Mode is off, the sandbox layers are tested
// (bubblewrap and Landlock looked for, a self-test command run through each
// layer that will be used) by Prepare: the first command waits for it, and
// the agent runs it in the background once it is ready, so that start-up does
// not wait for child processes. In ModeRequired, New fails at once (wrapping
// ErrSandboxUnavailable) when neither layer is present at all (no bubblewrap
// on the PATH, no Landlock in the kernel); a layer that is present but fails
// its self-test makes Prepare, and so every command, fail the same way.
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
	if cfg.landlockABI == nil {
		cfg.landlockABI = sandbox.ABI
	}
	s := &Shell{cfg: cfg, logger: logger}
	if cfg.Limits.Processes < 0 || cfg.Limits.Memory < 0 || cfg.Limits.FileSize < 0 || cfg.Limits.CPUSeconds < 0 {
		return nil, fmt.Errorf("shell: limits must not be negative: %+v", cfg.Limits)
	}
	if cfg.Mode == ModeOff {
		s.reason = "disabled by configuration (shell.sandbox: off)"
		plan := planLimits(cfg.Limits, false, false, cgroupsOff)
		s.limits.Store(&plan)
		s.note = s.noneWarning()
		logger.Warn("shell sandbox disabled by configuration: commands run directly on the host")
		s.prepared = true
		return s, nil
	}
	if cfg.Mode == ModeRequired {
		if err := s.anyLayerPresent(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// anyLayerPresent is ModeRequired's check at New: bubblewrap on the PATH or
// Landlock in the kernel (Prepare then tests them).
func (s *Shell) anyLayerPresent() error {
	abi, err := s.cfg.landlockABI()
	if err == nil && abi >= 1 {
		return nil
	}
	llReason := "not supported by this kernel"
	if err != nil {
		llReason = err.Error()
	}
	bwrap := s.cfg.Bwrap
	if bwrap == "" {
		bwrap = "bwrap"
	}
	if _, err := exec.LookPath(bwrap); err != nil {
		return fmt.Errorf("%w: bubblewrap: %s; landlock: %s", ErrSandboxUnavailable, fmt.Errorf("bubblewrap not found: %w", err), llReason)
	}
	return nil
}

// Prepare tests the sandbox layers once (see New); later and concurrent
// calls wait for that test and return its outcome: nil, or in ModeRequired
// an error wrapping ErrSandboxUnavailable when no layer works. The test is
// bounded by its own timeout and, once started, not cut short by ctx: a
// sandbox killed half way can leave processes behind (bubblewrap's inner
// process is in a session of its own), and a cancelled turn must not leave
// the shell marked unsandboxed. A ctx already done when Prepare would start
// the test returns its error and starts nothing; ctx also ends the wait of a
// caller that did not start the test.
func (s *Shell) Prepare(ctx context.Context) error {
	for {
		s.prepareMu.Lock()
		if s.prepared {
			s.prepareMu.Unlock()
			return s.prepareErr
		}
		if wait := s.preparing; wait != nil {
			s.prepareMu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if ctx.Err() != nil {
			s.prepareMu.Unlock()
			return context.Cause(ctx)
		}
		running := make(chan struct{})
		s.preparing = running
		s.prepareMu.Unlock()

		err := s.setup(context.WithoutCancel(ctx))
		s.prepareMu.Lock()
		s.preparing, s.prepared, s.prepareErr = nil, true, err
		s.prepareMu.Unlock()
		close(running)
		return err
	}
}

// Prepared reports whether the sandbox self-test has finished (Prepare
// returned, or the sandbox is off).
func (s *Shell) Prepared() bool {
	s.prepareMu.Lock()
	defer s.prepareMu.Unlock()
	return s.prepared
}

// await is Prepare for the accessors, which have no context.
func (s *Shell) await() { _ = s.Prepare(context.Background()) }

// setup finds and tests the sandbox layers and plans the limits.
func (s *Shell) setup(ctx context.Context) error {
	cfg, logger := s.cfg, s.logger
	// bubblewrap's /tmp is memory: bound it like the command's memory.
	s.tmpSize = cfg.Limits.Memory
	if !s.setupBoth(ctx) {
		if path, err := probe(ctx, cfg.Bwrap); err != nil {
			s.reason = err.Error()
		} else {
			s.bwrap = path
			if s.tmpSize > 0 && !tmpfsSizeWorks(ctx, path, s.tmpSize) {
				s.tmpSize = 0
				s.tmpNote = "/tmp not size-limited (this bubblewrap has no --size)"
			}
		}
		s.setupLandlock(ctx)
	}
	var failed error
	switch {
	case s.bwrap == "" && s.abi == 0:
		if cfg.Mode == ModeRequired {
			failed = fmt.Errorf("%w: bubblewrap: %s; landlock: %s", ErrSandboxUnavailable, s.reason, s.llReason)
			logger.Error("shell sandbox required but unavailable: execute_shell refuses every command", "err", failed)
		} else {
			logger.Warn("shell sandbox unavailable: commands run directly on the host", "bubblewrap", s.reason, "landlock", s.llReason)
		}
		s.note = s.noneWarning()
	case s.abi == 0:
		s.note = "sandbox: bubblewrap only (landlock unavailable: " + s.llReason + ")"
		logger.Warn("shell sandbox: bubblewrap only", "landlock", s.llReason)
	case s.bwrap == "":
		s.note = "sandbox: landlock only (bubblewrap unavailable: " + s.reason + "): " + s.landlockLimits()
		logger.Warn("shell sandbox: landlock only", "bubblewrap", s.reason, "landlock_abi", s.abi)
	}
	if s.bwrap == "" {
		s.tmpSize, s.tmpNote = 0, ""
	}
	if cfg.Network && s.bwrap != "" {
		if path, err := exec.LookPath("slirp4netns"); err == nil {
			s.slirp = path
		} else {
			s.note = joinNotes(s.note, sharedNetNote)
			logger.Warn("shell network shares the host's: commands can reach its loopback services (the assistant's own API among them); install slirp4netns to isolate them")
		}
	} else if cfg.Network {
		s.note = joinNotes(s.note, sharedNetNote)
	}
	plan := s.planLimits(cfg.noCgroup, "")
	if plan.missing != "" {
		logger.Warn("shell resource limits incomplete", "missing", plan.missing)
	}
	logger.Info("shell sandbox", "layers", s.sandbox(), "status", s.status(), "limits", plan.desc)
	return failed
}

// setupBoth is the common case in one start instead of two (it keeps
// start-up short): with bubblewrap installed and Landlock in the kernel,
// one self-test through bubblewrap and the launcher with Landlock proves
// both layers. It reports false, changing nothing, when that test cannot
// run or fails; New then tests each layer on its own and says which failed.
func (s *Shell) setupBoth(ctx context.Context) bool {
	abi, err := s.cfg.landlockABI()
	if err != nil || abi < 1 {
		return false
	}
	bwrap := s.cfg.Bwrap
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return false
	}
	exe := s.cfg.launcher
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return false
		}
	}
	s.bwrap = path
	if err := s.selfTest(ctx, exe, true); err != nil {
		s.bwrap = ""
		return false
	}
	s.launcher, s.abi = exe, abi
	return true
}

// setupLandlock probes the kernel and self-tests the launcher, with
// Landlock when the kernel has it. A launcher that works without Landlock
// is still used: it sets no_new_privs (setuid programs such as sudo gain
// nothing), though that is not reported as a layer.
func (s *Shell) setupLandlock(ctx context.Context) {
	abi, err := s.cfg.landlockABI()
	if err != nil || abi < 1 {
		abi = 0
		s.llReason = "not supported by this kernel"
		if err != nil {
			s.llReason = err.Error()
		}
	}
	exe := s.cfg.launcher
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			s.llReason = fmt.Sprintf("sandbox launcher: %v", err)
			return
		}
	}
	if abi > 0 {
		err := s.selfTest(ctx, exe, true)
		if err == nil {
			s.launcher, s.abi = exe, abi
			return
		}
		s.llReason = err.Error()
	}
	if err := s.selfTest(ctx, exe, false); err != nil {
		s.logger.Warn("sandbox launcher unusable; commands start without no_new_privs", "error", err)
		if abi > 0 {
			return // llReason says what failed with Landlock
		}
		s.llReason += "; " + err.Error()
		return
	}
	s.launcher = exe
}

// selfTest runs one command through the launcher (inside bubblewrap when
// it is used) and, with Landlock, checks that a write outside the writable
// directory is refused.
func (s *Shell) selfTest(ctx context.Context, exe string, landlock bool) error {
	dir, err := os.MkdirTemp("", "reverie-landlock-probe-")
	if err != nil {
		return fmt.Errorf("sandbox launcher self-test: %w", err)
	}
	defer os.RemoveAll(dir)
	rw := filepath.Join(dir, "rw")
	if err := os.Mkdir(rw, 0o700); err != nil {
		return fmt.Errorf("sandbox launcher self-test: %w", err)
	}
	// Outside the writable directories but writable without Landlock:
	// bubblewrap's private /tmp, or the probe directory on the host.
	outside := filepath.Join(dir, "outside")
	if s.bwrap != "" {
		outside = "/tmp/landlock-probe"
	}
	script := "echo sandbox-ok"
	if landlock {
		script += "; if ( : > " + shellQuote(outside) + " ) 2>/dev/null; then echo landlock-inactive; fi"
	}
	ctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	defer cancel()
	cmd := s.command(ctx, launch{ws: rw, workdir: rw, tmp: rw, launcher: exe, landlock: landlock, selfTest: true}, script)
	// At the timeout, the whole process group goes, and output a straggler
	// keeps open does not hold Wait.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = killGrace
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	failure, err := runLaunched(cmd, nil)
	got := strings.TrimSpace(out.String())
	switch {
	case failure != "":
		return fmt.Errorf("sandbox launcher self-test: %s", failure)
	case err != nil:
		return fmt.Errorf("sandbox launcher self-test failed: %v: %s", err, got)
	case strings.Contains(got, "landlock-inactive"):
		return errors.New("sandbox launcher self-test: landlock did not refuse a write outside the workspace")
	case got != "sandbox-ok":
		return fmt.Errorf("sandbox launcher self-test printed %q", got)
	}
	return nil
}

// planLimits plans and stores how the limits are enforced; why, when not
// empty, says why cgroups are not used.
func (s *Shell) planLimits(noCgroup bool, why string) *limitPlan {
	check := cgroupsTried
	if noCgroup {
		check = cgroupsOff
	}
	p := planLimits(s.cfg.Limits, s.launcher != "", s.bwrap != "", check)
	if why != "" {
		p.missing = joinNotes(p.missing, why)
	}
	p.desc = withTmpLimit(p.desc, s.tmpSize)
	p.missing = joinNotes(p.missing, s.tmpNote)
	s.limits.Store(&p)
	return &p
}

// withTmpLimit adds bubblewrap's /tmp size (0: unbounded, not named) to a
// plan's description of the limits.
func withTmpLimit(desc string, tmpSize int64) string {
	if tmpSize <= 0 {
		return desc
	}
	return strings.TrimPrefix(desc+", /tmp "+formatBytes(tmpSize), "none, ")
}

// dropCgroups stops using cgroups after one failed, and says so in every
// result from now on.
func (s *Shell) dropCgroups(err error) *limitPlan {
	s.logger.Warn("shell resource limits: cgroups failed, using resource limits only", "error", err)
	return s.planLimits(true, "cgroups failed ("+err.Error()+"), so resource limits apply instead")
}

func joinNotes(notes ...string) string {
	return strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
}

// Limits describes the resource limits in force, e.g. "processes 256
// (cgroup), memory 1 GiB (cgroup), file size 256 MiB, cpu 60s per
// process", or "none".
func (s *Shell) Limits() string {
	s.await()
	return s.limits.Load().desc
}

// Sandbox names the active layers: SandboxBoth, SandboxBubblewrap,
// SandboxLandlock or SandboxNone.
func (s *Shell) Sandbox() string {
	s.await()
	return s.sandbox()
}

func (s *Shell) sandbox() string {
	switch {
	case s.bwrap != "" && s.abi > 0:
		return SandboxBoth
	case s.bwrap != "":
		return SandboxBubblewrap
	case s.abi > 0:
		return SandboxLandlock
	}
	return SandboxNone
}

// NetworkEnabled reports whether commands can open network connections:
// with the network configured on, or without a layer that blocks it
// (bubblewrap, or Landlock ABI 4+ which refuses TCP).
func (s *Shell) NetworkEnabled() bool {
	s.await()
	return s.networkEnabled()
}

func (s *Shell) networkEnabled() bool {
	return s.cfg.Network || (s.bwrap == "" && s.abi < 4)
}

// Status describes the sandbox in one line, for diagnostics.
func (s *Shell) Status() string {
	s.await()
	return s.status()
}

func (s *Shell) status() string {
	net := "network off"
	if s.networkEnabled() {
		net = "network on"
	}
	return s.layerStatus(net) + "; limits: " + s.limits.Load().desc
}

func (s *Shell) layerStatus(net string) string {
	switch s.sandbox() {
	case SandboxBoth:
		return fmt.Sprintf("bubblewrap+landlock (%s, landlock ABI %d, %s)", s.bwrap, s.abi, net)
	case SandboxBubblewrap:
		return fmt.Sprintf("bubblewrap (%s, %s; landlock unavailable: %s)", s.bwrap, net, s.llReason)
	case SandboxLandlock:
		return fmt.Sprintf("landlock (ABI %d, %s; bubblewrap unavailable: %s)", s.abi, net, s.reason)
	}
	if s.cfg.Mode == ModeOff {
		return "none: " + s.reason
	}
	return "none: bubblewrap: " + s.reason + "; landlock: " + s.llReason
}

// Describe is the sentence of execute_shell's description that says what
// the sandbox allows. It never waits for the self-test: once Prepare has
// finished it describes what was tested; before that (a turn that starts
// while the test runs, or a one-shot `reverie send` that tests the sandbox
// only on its first shell command) it describes the layers present on this
// machine, which the test confirms in the common case, and says that a
// command's result names the layers in force. The command itself always
// waits for the test (Run).
func (s *Shell) Describe() string {
	s.prepareMu.Lock()
	prepared, err := s.prepared, s.prepareErr
	s.prepareMu.Unlock()
	if !prepared {
		return s.expected()
	}
	if err != nil {
		return "This tool is unavailable: " + err.Error() + "."
	}
	return describeLayers(s.bwrap != "", s.abi, s.networkEnabled(), s.limits.Load().desc)
}

// expected describes the sandbox from the layers present (bubblewrap on
// the PATH, Landlock in the kernel), before their self-test has run. It is
// computed once: the probes are cheap but a turn asks for it every time.
func (s *Shell) expected() string {
	s.expectOnce.Do(func() {
		abi, err := s.cfg.landlockABI()
		if err != nil || abi < 1 {
			abi = 0
		}
		bwrap := s.cfg.Bwrap
		if bwrap == "" {
			bwrap = "bwrap"
		}
		_, err = exec.LookPath(bwrap)
		hasBwrap := err == nil
		launcher := abi > 0 || s.cfg.launcher != ""
		if !launcher {
			_, lerr := os.Executable()
			launcher = lerr == nil
		}
		// The self-test creates the cgroups; this only looks for them.
		check := cgroupsPredicted
		if s.cfg.noCgroup {
			check = cgroupsOff
		}
		plan := planLimits(s.cfg.Limits, launcher, hasBwrap, check)
		if hasBwrap { // bubblewrap's /tmp is bounded like memory (setup)
			plan.desc = withTmpLimit(plan.desc, s.cfg.Limits.Memory)
		}
		net := s.cfg.Network || (!hasBwrap && abi < 4)
		s.expect = describeLayers(hasBwrap, abi, net, plan.desc) +
			` (The sandbox is tested before the first command runs; if a layer fails its test, the result's "sandbox" and "note" say what is in force.)`
	})
	return s.expect
}

// describeLayers is Describe's sentence for a set of layers.
func describeLayers(bwrap bool, abi int, network bool, limits string) string {
	if !bwrap && abi == 0 {
		return `WARNING: no sandbox is active; commands run directly on the host with the assistant's permissions. Never run destructive commands without the user's explicit consent.`
	}
	d := `Commands run in a sandbox: only the workspace and a private /tmp are writable, system directories are read-only, HOME is the workspace`
	if !bwrap {
		d = `Commands run in a sandbox: only the workspace and a private temporary directory ($TMPDIR, not /tmp) are writable, system directories are read-only, other files (outside the workspace) cannot be read, HOME is the workspace`
	}
	if network {
		d += `, and the network is available.`
	} else {
		d += `, and there is no network access (use fetch_url and search_web instead).`
	}
	if limits != "none" {
		d += " Limits per command: " + limits + "."
	}
	return d
}

// landlockLimits says what Landlock alone does not isolate.
func (s *Shell) landlockLimits() string {
	var open []string
	if !s.cfg.Network {
		switch {
		case s.abi < 4:
			open = append(open, "the network")
		case s.abi < 10:
			open = append(open, "UDP (TCP is refused)")
		}
	}
	open = append(open, "other processes are visible (not their memory or environment)")
	return "only the workspace and $TMPDIR are writable and only system files readable; not isolated: " + strings.Join(open, ", ")
}

func (s *Shell) noneWarning() string {
	reason := s.reason
	if s.cfg.Mode != ModeOff {
		reason = "bubblewrap: " + s.reason + "; landlock: " + s.llReason
	}
	return "WARNING: no sandbox is active (" + reason + "): the command ran directly on the host with this user's full permissions, network access and files outside the workspace"
}

// SandboxStatus probes this machine for a working bubblewrap and for
// Landlock, without any configuration, and describes the result in one
// line (for reverie doctor): it starts with "bubblewrap" when bubblewrap
// works.
func SandboxStatus(ctx context.Context) string {
	ll := "landlock unavailable"
	if abi, err := sandbox.ABI(); err != nil {
		ll += " (" + err.Error() + ")"
	} else {
		ll = fmt.Sprintf("landlock ABI %d", abi)
	}
	path, err := probe(ctx, "")
	if err != nil {
		return "unavailable: " + err.Error() + " (install the bubblewrap package; until then execute_shell runs commands with " + ll + " only, or unsandboxed, when shell.sandbox is auto)"
	}
	return "bubblewrap available at " + path + "; " + ll
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
	args := append(bwrapArgs(dir, dir, nil, false, "", 0), "/bin/sh", "-c", "echo sandbox-ok")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = killGrace
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bubblewrap self-test failed (are unprivileged user namespaces disabled?): %v: %s", err, strings.TrimSpace(string(out)))
	}
	if strings.TrimSpace(string(out)) != "sandbox-ok" {
		return "", fmt.Errorf("bubblewrap self-test printed %q", out)
	}
	return path, nil
}

// tmpfsSizeWorks reports whether bubblewrap at path takes --size (0.7 and
// later) for its /tmp.
func tmpfsSizeWorks(ctx context.Context, path string, size int64) bool {
	ctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--ro-bind", "/", "/", "--size", strconv.FormatInt(size, 10), "--tmpfs", "/tmp", "--", "/bin/sh", "-c", "echo size-ok")
	cmd.WaitDelay = killGrace
	out, err := cmd.Output()
	return err == nil && strings.TrimSpace(string(out)) == "size-ok"
}

const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// bwrapArgs builds the bubblewrap options for a command run in workdir with
// ws bound read-write and, when launcher is set, the launcher mounted at
// innerLauncher; the command follows.
func bwrapArgs(ws, workdir string, ro []string, network bool, launcher string, tmpSize int64) []string {
	args := []string{"--die-with-parent", "--new-session", "--unshare-all"}
	if network {
		args = append(args, "--share-net")
	}
	args = append(args, bwrapMounts(ws, workdir, ro, launcher, tmpSize)...)
	return args
}

// sharedNetNote is what results say when network on means the host's.
const sharedNetNote = "network: the host's own (its loopback services, the assistant's API among them, are reachable; slirp4netns isolates them)"

// userNetArgs are bwrapArgs for a command with its own network namespace
// that slirp4netns connects (see startUserNet): bubblewrap writes the
// child's pid to infoFD and waits for a byte on blockFD before the command
// runs.
func userNetArgs(ws, workdir string, ro []string, launcher string, tmpSize int64, infoFD, blockFD int, resolv string) []string {
	args := []string{"--die-with-parent", "--new-session", "--unshare-all",
		"--info-fd", strconv.Itoa(infoFD), "--block-fd", strconv.Itoa(blockFD)}
	mounts := bwrapMounts(ws, workdir, ro, launcher, tmpSize)
	// The name server is slirp4netns's (the host's may be on its
	// loopback, out of reach).
	mounts = append(mounts[:len(mounts)-1], "--ro-bind", resolv, "/etc/resolv.conf", "--")
	return append(args, mounts...)
}

// bwrapMounts are bubblewrap's file system and environment options.
func bwrapMounts(ws, workdir string, ro []string, launcher string, tmpSize int64) []string {
	var args []string
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
	for _, e := range sandbox.EtcPaths() {
		args = append(args, "--ro-bind-try", e, e)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	if tmpSize > 0 {
		args = append(args, "--size", strconv.FormatInt(tmpSize, 10))
	}
	args = append(args, "--tmpfs", "/tmp", "--bind", ws, ws)
	for _, p := range ro {
		args = append(args, "--ro-bind", p, p)
	}
	if launcher != "" {
		args = append(args, "--ro-bind", launcher, innerLauncher)
	}
	args = append(args,
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

// existing returns the paths of ps that exist now.
func existing(ps []string) []string {
	var out []string
	for _, p := range ps {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// launch says how to start one command.
type launch struct {
	ws, workdir string
	tmp         string // private temporary directory without bubblewrap; "" for the host's
	launcher    string // "" starts /bin/sh directly
	landlock    bool
	selfTest    bool // /tmp is left out of the writable paths (Landlock must refuse it)
	limits      sandbox.Limits
	cg          *cgroupRun // nil without cgroups
	net         *userNet   // nil: the host's network (or none)
}

// statusFD is the launcher's status pipe in the child (exec.Cmd's first
// ExtraFiles entry); bubblewrap passes it through.
const statusFD = 3

// command builds the process running script under bubblewrap (when used)
// and the launcher (when set). A command with a launcher must be run with
// runLaunched.
func (s *Shell) command(ctx context.Context, l launch, script string) *exec.Cmd {
	argv := []string{"/bin/sh", "-c", script}
	ro := existing(s.cfg.ReadOnly)
	if l.launcher != "" {
		spec := sandbox.Spec{ReadWrite: []string{l.ws}, ReadOnly: ro, Network: s.cfg.Network, Landlock: l.landlock, StatusFD: statusFD, Limits: l.limits}
		if l.cg != nil {
			for i := range l.cg.procs {
				spec.CgroupFDs = append(spec.CgroupFDs, statusFD+1+i)
			}
		}
		exe := l.launcher
		switch {
		case s.bwrap != "":
			exe = innerLauncher
			// Both are bubblewrap's private tmpfs; the self-test proves
			// Landlock by a write to /tmp.
			spec.ReadWrite = append(spec.ReadWrite, "/dev/shm")
			if !l.selfTest {
				spec.ReadWrite = append(spec.ReadWrite, "/tmp")
			}
		case l.tmp != "" && l.tmp != l.ws:
			spec.ReadWrite = append(spec.ReadWrite, l.tmp)
		}
		argv = append([]string{exe}, spec.Args(argv...)...)
	}
	var cmd *exec.Cmd
	switch {
	case s.bwrap != "" && l.net != nil:
		// The descriptors after the status pipe (runLaunched) and the
		// cgroups' files.
		fd := statusFD
		if l.launcher != "" {
			fd++
		}
		if l.cg != nil {
			fd += len(l.cg.procs)
		}
		args := append(userNetArgs(l.ws, l.workdir, ro, l.launcher, s.tmpSize, fd, fd+1, l.net.resolv), argv...)
		cmd = exec.CommandContext(ctx, s.bwrap, args...)
	case s.bwrap != "":
		args := append(bwrapArgs(l.ws, l.workdir, ro, s.cfg.Network, l.launcher, s.tmpSize), argv...)
		cmd = exec.CommandContext(ctx, s.bwrap, args...)
	default:
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = l.workdir
		cmd.Env = hostEnv(l.ws, l.tmp)
	}
	// Own process group: the timeout kills the shell and everything it
	// started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if l.cg != nil {
		// runLaunched puts the status pipe first (statusFD).
		cmd.ExtraFiles = append(cmd.ExtraFiles, l.cg.procs...)
		if l.cg.v2fd != nil {
			startInCgroup(cmd.SysProcAttr, int(l.cg.v2fd.Fd()))
		}
	}
	if s.bwrap != "" && l.net != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, l.net.infoW, l.net.blockR)
	}
	return cmd
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
	// Sandbox names the active layers: "bubblewrap+landlock",
	// "bubblewrap", "landlock" or "none".
	Sandbox string `json:"sandbox"`
	// Limits are the resource limits in force (Shell.Limits).
	Limits string `json:"limits"`
	// LimitHit names the limits the command reached ("processes",
	// "memory", "file_size", "cpu_seconds"), as far as they can be told:
	// the cgroups' counters (a fork refused, a process killed for memory),
	// a process killed by SIGXFSZ or SIGXCPU. Reaching RLIMIT_NPROC or
	// RLIMIT_AS only makes a fork or an allocation fail, which the command
	// reports in its output.
	LimitHit []string `json:"limit_hit,omitempty"`
	// Note explains anything unusual: a missing sandbox layer or limit, a
	// clamped timeout.
	Note string `json:"note,omitempty"`
}

// Run executes one command and waits for it (and its process group) to end.
// A non-zero exit or a timeout is a Result, not an error; errors are for
// refused arguments, a command that could not start (or be confined) and
// cancellation of ctx.
func (s *Shell) Run(ctx context.Context, a Args) (Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return Result{}, errors.New("command is empty")
	}
	if err := s.Prepare(ctx); err != nil {
		return Result{}, err
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
	plan := s.limits.Load()
	var cg *cgroupRun
	if plan.cg != nil {
		var err error
		if cg, err = plan.cg.start(); err != nil {
			plan = s.dropCgroups(err)
		} else {
			defer func() {
				if err := cg.close(); err != nil {
					s.logger.Warn("remove a command's cgroup", "error", err)
				}
			}()
		}
	}
	l := launch{ws: ws.Dir(), workdir: workdir, launcher: s.launcher, landlock: s.abi > 0, limits: plan.rlimits, cg: cg}
	if l.launcher != "" && l.limits.Processes > 0 && s.bwrap == "" {
		// Without a user namespace RLIMIT_NPROC counts every process of
		// the user: allow the limit on top of those running now.
		l.limits.Processes += uint64(userTasks(os.Getuid()))
	}
	if s.bwrap == "" && s.abi > 0 {
		// Landlock alone leaves /tmp unwritable: the command gets its own
		// temporary directory, removed when it ends.
		tmp, err := os.MkdirTemp("", "reverie-shell-")
		if err != nil {
			return Result{}, fmt.Errorf("private temporary directory: %w", err)
		}
		defer func() {
			if err := os.RemoveAll(tmp); err != nil {
				s.logger.Warn("remove a command's temporary directory", "dir", tmp, "error", err)
			}
		}()
		l.tmp = tmp
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.slirp != "" {
		un, err := newUserNet()
		if err != nil {
			return Result{}, err
		}
		defer un.close(s.logger)
		l.net = un
	}
	cmd := s.command(runCtx, l, a.Command)
	callerNotes := slices.Clone(notes)
	notes = append(notes, slices.DeleteFunc([]string{s.note, plan.missing}, func(n string) bool { return n == "" })...)
	out := newCapped(s.cfg.MaxOutput)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// Kill the whole process group: the shell and everything it started.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = killGrace

	start := time.Now()
	var err error
	var failure string
	var started func() error
	if l.net != nil {
		started = func() error { return s.startUserNet(runCtx, l.net, cmd) }
	}
	if l.launcher != "" {
		failure, err = runLaunched(cmd, started)
	} else {
		err = runStarted(cmd, started)
	}
	if l.cg != nil && runCtx.Err() == nil && (strings.Contains(failure, "join cgroup") || err != nil && !errors.As(err, new(*exec.ExitError)) && !errors.Is(err, exec.ErrWaitDelay)) {
		// The cgroup could not be used (the command did not start): run
		// it again without, as every later command will be.
		cause := err
		if failure != "" {
			cause = errors.New(failure)
		}
		s.dropCgroups(cause)
		return s.run(ctx, a, timeout, callerNotes)
	}
	res := Result{ExitCode: 0, Sandbox: s.sandbox(), Limits: plan.desc}
	var exitErr *exec.ExitError
	var signaled syscall.Signal
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signaled = ws.Signal()
		}
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
	if failure != "" {
		// The launcher could not confine the command, which did not run.
		return Result{}, fmt.Errorf("command not run: %s", failure)
	}
	res.Output = out.String()
	if l.launcher != "" {
		if l.cg != nil {
			// Kill what is left now: the counters are final afterwards.
			l.cg.kill()
			res.LimitHit = l.cg.hits()
		}
		res.LimitHit = append(res.LimitHit, signalHits(s.cfg.Limits, res.ExitCode, signaled, res.Output)...)
		for _, h := range res.LimitHit {
			notes = append(notes, "the command reached its "+limitName(h)+" limit")
		}
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
		res.ExitCode = -1
		notes = append(notes, fmt.Sprintf("the command was killed after %s", timeout))
	}
	res.Note = strings.Join(notes, "; ")
	s.logger.Debug("shell command finished", "exit_code", res.ExitCode, "timed_out", res.TimedOut, "limit_hit", res.LimitHit,
		"sandbox", res.Sandbox, "duration", time.Since(start), "output_bytes", out.total)
	return res, nil
}

// runLaunched runs cmd, which starts the launcher, with the launcher's
// status pipe as descriptor statusFD, and returns the launcher's failure
// message ("" when it executed the command) and cmd's error. Only the
// launcher holds the pipe's write end (the exec closes it), so a command
// cannot fake a launcher failure.
func runLaunched(cmd *exec.Cmd, started func() error) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("launcher status pipe: %w", err)
	}
	defer r.Close()
	cmd.ExtraFiles = append([]*os.File{w}, cmd.ExtraFiles...)
	err = runStarted(cmd, func() error {
		w.Close()
		if started != nil {
			return started()
		}
		return nil
	})
	w.Close()
	// Every writer has exited by now; the deadline only bounds a surprise.
	_ = r.SetReadDeadline(time.Now().Add(killGrace))
	msg, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	return strings.TrimSpace(string(msg)), err
}

// runStarted runs cmd, calling started (when set) once it has started; an
// error of started kills cmd's process group and is returned after cmd
// ended.
func runStarted(cmd *exec.Cmd, started func() error) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if started != nil {
		if err := started(); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return err
		}
	}
	return cmd.Wait()
}

// hostEnv is the environment of a command run without bubblewrap: enough to
// work, without the secrets (API keys, tokens) of Reverie's own environment.
// HOME is the workspace, as in bubblewrap; TMPDIR is tmp, or the host's.
func hostEnv(home, tmp string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = sandboxPath
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "TERM=dumb"}
	if user := os.Getenv("USER"); user != "" {
		env = append(env, "USER="+user)
	}
	return env
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
