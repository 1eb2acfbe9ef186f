package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Exit codes with a meaning to the supervisor.
const (
	// ExitRestart is the exit code with which the agent asks to be restarted
	// at once (75 is EX_TEMPFAIL in sysexits.h). It is not counted as a crash.
	ExitRestart = 75
	// ExitConfigError is the exit code of an agent whose configuration is
	// invalid. The supervisor does not restart it: it would fail again.
	ExitConfigError = 2
	// ExitLocked is the exit code of an agent that found another agent
	// running on its data dir. The supervisor does not restart it.
	ExitLocked = 3
	// ExitDataDir is the exit code of an agent that cannot use its data
	// dir: not writable, files it cannot read, a full disk. The supervisor
	// does not restart it: the same start would fail again.
	ExitDataDir = 4
	// ExitEnvironment is the exit code of an agent that the machine
	// around it prevents from starting: its web port is used by another
	// program. The supervisor does not restart it: restarting in a loop
	// does not free the port, and a service manager (systemd's
	// RestartPreventExitStatus) should not either.
	ExitEnvironment = 5
)

// NoRestartExitCodes are the agent's exit codes the supervisor never
// restarts on and passes on as its own (for systemd's
// RestartPreventExitStatus=).
var NoRestartExitCodes = []int{ExitConfigError, ExitLocked, ExitDataDir, ExitEnvironment}

// InstanceEnv is the environment variable through which each started child
// gets a fresh random instance id; the agent's /healthz echoes it as
// "instance", so that the health probe knows it reached its own child and
// not another process holding the port.
const InstanceEnv = "REVERIE_INSTANCE"

// RestartPollInterval is how often the restart file is checked.
const RestartPollInterval = time.Second

// Defaults for zero Options fields.
const (
	DefaultBackoffMin        = time.Second
	DefaultBackoffMax        = time.Minute
	DefaultStableAfter       = 2 * time.Minute
	DefaultCrashLoopLimit    = 5
	DefaultCrashLoopWindow   = 2 * time.Minute
	DefaultShutdownGrace     = 10 * time.Second
	DefaultHealthInterval    = 10 * time.Second
	DefaultHealthFailures    = 3
	DefaultHealthStartPeriod = time.Minute
	maxHealthTimeout         = 5 * time.Second
	// waitDelay bounds how long the output of an exited child is drained
	// when Stdout/Stderr are not files (a grandchild may hold the pipe).
	waitDelay = 5 * time.Second
)

// Errors returned by Run, wrapped with details; test them with errors.Is.
var (
	// ErrCrashLoop means the child crashed CrashLoopLimit times within
	// CrashLoopWindow and the supervisor gave up.
	ErrCrashLoop = errors.New("agent is crash-looping")
	// ErrConfigInvalid means the child exited with ExitConfigError.
	ErrConfigInvalid = errors.New("agent configuration is invalid")
	// ErrLocked means the child exited with ExitLocked: another agent runs
	// on the data dir.
	ErrLocked = errors.New("another agent runs on the data dir")
	// ErrDataDir means the child exited with ExitDataDir: it cannot use its
	// data dir.
	ErrDataDir = errors.New("agent cannot use its data dir")
	// ErrEnvironment means the child exited with ExitEnvironment: something
	// outside Reverie (a program holding its port) prevents the start.
	ErrEnvironment = errors.New("agent cannot start in this environment")
	// ErrKilled means the child did not exit within ShutdownGrace of SIGTERM
	// during shutdown and was killed.
	ErrKilled = errors.New("agent did not stop in time and was killed")
)

// Options configures Run. Zero durations and counts take the defaults above.
type Options struct {
	// Command is the argv of the child, e.g. {exe, "agent", "--data", dir}.
	Command []string
	// Env is the child's environment; nil inherits the supervisor's.
	Env []string
	// Dir is the child's working directory; "" inherits the supervisor's.
	Dir string
	// Stdout and Stderr receive the child's output; nil means os.Stdout and
	// os.Stderr. The child's stdin is /dev/null.
	Stdout, Stderr io.Writer

	// RestartFile, when not empty, is a path whose appearance restarts the
	// child gracefully (not counted as a crash); the file is removed. Its
	// first line, if any, is logged as the reason.
	RestartFile string

	// HealthURL, when not empty, is an http(s) URL (the agent's /healthz)
	// probed every HealthInterval; a 2xx answer is healthy. After
	// HealthFailures consecutive failures the child is restarted.
	HealthURL      string
	HealthInterval time.Duration
	HealthFailures int
	// HealthStartPeriod is how long after a start failed probes are not
	// counted, unless the child has already answered healthy.
	HealthStartPeriod time.Duration
	// Instance gives each started child a fresh random id in InstanceEnv
	// and makes the health probe require the answer's JSON "instance" to
	// be that id: a probe answered by another process (one that holds the
	// port the child could not bind) then fails instead of passing.
	Instance bool

	// BackoffMin and BackoffMax bound the delay before restarting a crashed
	// child; it doubles per consecutive crash and returns to BackoffMin when
	// the crashed child had been up at least StableAfter.
	BackoffMin, BackoffMax time.Duration
	StableAfter            time.Duration

	// CrashLoopLimit crashes within CrashLoopWindow make Run return
	// ErrCrashLoop. A negative limit never gives up.
	CrashLoopLimit  int
	CrashLoopWindow time.Duration

	// ShutdownGrace is how long the child has to exit after SIGTERM (on
	// shutdown or a restart) before its process group is SIGKILLed.
	ShutdownGrace time.Duration

	// Logger receives the supervisor's own events; nil discards them.
	Logger *slog.Logger
	// Clock is the time source; nil means the wall clock.
	Clock Clock
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return o, errors.New("supervisor options: no command to run")
	}
	for name, d := range map[string]time.Duration{
		"HealthInterval": o.HealthInterval, "HealthStartPeriod": o.HealthStartPeriod,
		"BackoffMin": o.BackoffMin, "BackoffMax": o.BackoffMax, "StableAfter": o.StableAfter,
		"CrashLoopWindow": o.CrashLoopWindow, "ShutdownGrace": o.ShutdownGrace,
	} {
		if d < 0 {
			return o, fmt.Errorf("supervisor options: %s is negative (%s)", name, d)
		}
	}
	if o.HealthFailures < 0 {
		return o, fmt.Errorf("supervisor options: HealthFailures is negative (%d)", o.HealthFailures)
	}
	if o.HealthURL != "" {
		u, err := url.Parse(o.HealthURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("supervisor options: HealthURL %q is not an absolute http(s) URL", o.HealthURL)
		}
	}
	setDefault(&o.HealthInterval, DefaultHealthInterval)
	setDefault(&o.HealthStartPeriod, DefaultHealthStartPeriod)
	setDefault(&o.BackoffMin, DefaultBackoffMin)
	setDefault(&o.BackoffMax, DefaultBackoffMax)
	setDefault(&o.StableAfter, DefaultStableAfter)
	setDefault(&o.CrashLoopWindow, DefaultCrashLoopWindow)
	setDefault(&o.ShutdownGrace, DefaultShutdownGrace)
	if o.HealthFailures == 0 {
		o.HealthFailures = DefaultHealthFailures
	}
	if o.CrashLoopLimit == 0 {
		o.CrashLoopLimit = DefaultCrashLoopLimit
	}
	if o.BackoffMax < o.BackoffMin {
		return o, fmt.Errorf("supervisor options: BackoffMax %s is below BackoffMin %s", o.BackoffMax, o.BackoffMin)
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return o, nil
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Run supervises the child described by opts until ctx is cancelled, the
// child exits 0, or the supervisor gives up (see the package documentation
// for the exit-code rules). It returns only after the child has exited.
//
// Errors: ErrConfigInvalid, ErrCrashLoop and ErrKilled (wrapped with
// details), or an error starting the child or removing the restart file.
func Run(ctx context.Context, opts Options) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	s := &supervisor{o: o, log: o.Logger, clock: o.Clock}
	if o.HealthURL != "" {
		// One kept-alive connection: a probe through it allocates a third
		// of one that dials anew (~6 against ~18 KB), which is most of
		// what an idle supervisor allocates. It is dropped when the child
		// changes (healthProbe.check), and the agent closing it is
		// retried by the transport.
		transport := &http.Transport{MaxIdleConns: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: 2 * o.HealthInterval}
		defer transport.CloseIdleConnections()
		s.probe = &healthProbe{
			url:     o.HealthURL,
			client:  &http.Client{Transport: transport},
			timeout: min(o.HealthInterval, maxHealthTimeout),
		}
	}
	return s.run(ctx)
}

type supervisor struct {
	o     Options
	log   *slog.Logger
	clock Clock
	probe *healthProbe // nil without HealthURL
}

// endKind is why a child's supervision ended.
type endKind int

const (
	endExited    endKind = iota // the child exited on its own
	endShutdown                 // ctx was cancelled and the child stopped
	endRequest                  // the restart file appeared and the child stopped
	endUnhealthy                // health probes failed and the child stopped
)

type childEnd struct {
	kind   endKind
	status exitStatus
	uptime time.Duration
	killed bool // SIGKILLed after the grace period
}

func (s *supervisor) run(ctx context.Context) error {
	if s.o.RestartFile != "" {
		if ok, reason, err := s.takeRestartRequest(); err != nil {
			return err
		} else if ok {
			s.log.Info("removed a restart request left over from before start", "file", s.o.RestartFile, "reason", reason)
		}
	}
	var crashes []time.Time // crash times within the window
	backoff := s.o.BackoffMin
	for run := 1; ; run++ {
		if ctx.Err() != nil {
			return nil
		}
		end, err := s.runChild(ctx, run)
		if err != nil {
			return err
		}
		switch end.kind {
		case endShutdown:
			return s.shutdownResult(end)
		case endRequest:
			s.log.Info("restarting agent on request", "uptime", end.uptime)
			continue
		case endExited:
			switch end.status.code {
			case 0:
				s.log.Info("agent exited cleanly; supervisor stopping", "uptime", end.uptime)
				return nil
			case ExitRestart:
				s.log.Info("agent asked to be restarted", "status", end.status, "uptime", end.uptime)
				continue
			case ExitConfigError:
				s.log.Error("agent reported an invalid configuration; not restarting", "status", end.status)
				return fmt.Errorf("%w: the agent exited with status %d; fix the configuration (see the agent's error above, or run `reverie doctor`) and start again", ErrConfigInvalid, ExitConfigError)
			case ExitLocked:
				s.log.Error("another agent runs on the data dir; not restarting", "status", end.status)
				return fmt.Errorf("%w: the agent exited with status %d; stop the other agent (see the agent's error above) or use another data dir, and start again", ErrLocked, ExitLocked)
			case ExitDataDir:
				s.log.Error("agent cannot use its data dir; not restarting", "status", end.status)
				return fmt.Errorf("%w: the agent exited with status %d; fix the data dir or free disk space (see the agent's error above, or run `reverie doctor`) and start again", ErrDataDir, ExitDataDir)
			case ExitEnvironment:
				s.log.Error("agent cannot start in this environment (a port in use?); not restarting", "status", end.status)
				return fmt.Errorf("%w: the agent exited with status %d; free what it needs (see the agent's error above: another program on its port?) or change web.listen, and start again", ErrEnvironment, ExitEnvironment)
			}
		}

		// A crash: the child died on its own or was found unhealthy.
		now := s.clock.Now()
		if end.uptime >= s.o.StableAfter {
			backoff = s.o.BackoffMin
		}
		crashes = append(pruneBefore(crashes, now.Add(-s.o.CrashLoopWindow)), now)
		if s.o.CrashLoopLimit > 0 && len(crashes) >= s.o.CrashLoopLimit {
			s.log.Error("agent is crash-looping; giving up", "crashes", len(crashes), "window", s.o.CrashLoopWindow, "status", end.status)
			return fmt.Errorf("%w: it crashed %d times within %s (last: %s); giving up", ErrCrashLoop, len(crashes), s.o.CrashLoopWindow, end.status)
		}
		why := "agent crashed"
		if end.kind == endUnhealthy {
			why = "agent was unhealthy"
		}
		s.log.Warn(why+"; restarting after backoff", "status", end.status, "uptime", end.uptime,
			"backoff", backoff, "crashes_in_window", len(crashes))
		if !s.wait(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, s.o.BackoffMax)
	}
}

// shutdownResult is Run's result after stopping the child on cancellation.
func (s *supervisor) shutdownResult(end childEnd) error {
	switch {
	case end.killed:
		return fmt.Errorf("%w (no exit within %s of SIGTERM)", ErrKilled, s.o.ShutdownGrace)
	case end.status.clean():
		s.log.Info("agent stopped", "status", end.status)
		return nil
	default:
		return fmt.Errorf("agent exited with %s while shutting down", end.status)
	}
}

// wait waits d on the clock; it reports false if ctx ended first.
func (s *supervisor) wait(ctx context.Context, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

func pruneBefore(times []time.Time, cutoff time.Time) []time.Time {
	kept := times[:0]
	for _, t := range times {
		if !t.Before(cutoff) {
			kept = append(kept, t)
		}
	}
	return kept
}

// runChild starts one child and supervises it until it exits or is stopped.
// The error is non-nil only when the child could not be started or the
// restart file could not be removed; in both cases no child is left running.
func (s *supervisor) runChild(ctx context.Context, run int) (childEnd, error) {
	cmd := exec.Command(s.o.Command[0], s.o.Command[1:]...)
	cmd.Env = s.o.Env
	instance := ""
	if s.o.Instance {
		instance = newInstanceID()
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(slices.Clip(cmd.Env), InstanceEnv+"="+instance)
	}
	cmd.Dir = s.o.Dir
	cmd.Stdout = s.o.Stdout
	cmd.Stderr = s.o.Stderr
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return childEnd{}, fmt.Errorf("start agent %q: %w", s.o.Command[0], err)
	}
	started := s.clock.Now()
	pid := cmd.Process.Pid
	log := s.log.With("pid", pid)
	log.Info("agent started", "run", run)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// finish records how the child ended; it is called only once the exit
	// has been received from the waiter, which has then returned.
	finish := func(kind endKind, waitErr error, killed bool) childEnd {
		end := childEnd{kind: kind, status: statusOf(cmd.ProcessState, waitErr), uptime: s.clock.Now().Sub(started), killed: killed}
		if err := killGroup(pid); err != nil {
			log.Warn("could not kill processes left in the agent's process group", "err", err)
		}
		log.Info("agent exited", "status", end.status, "uptime", end.uptime)
		return end
	}
	stop := func(kind endKind, why string) childEnd {
		log.Info("stopping agent", "reason", why, "grace", s.o.ShutdownGrace)
		waitErr, killed := s.stop(cmd.Process, exited, log)
		return finish(kind, waitErr, killed)
	}

	var poll, health timerSlot
	defer poll.stop()
	defer health.stop()
	if s.o.RestartFile != "" {
		poll.arm(s.clock, RestartPollInterval)
	}
	if s.probe != nil {
		health.arm(s.clock, s.o.HealthInterval)
	}
	healthy, failures := false, 0

	for {
		select {
		case err := <-exited:
			return finish(endExited, err, false), nil

		case <-ctx.Done():
			return stop(endShutdown, "shutdown"), nil

		case <-poll.c():
			ok, reason, err := s.takeRestartRequest()
			if err != nil {
				stop(endShutdown, "restart file cannot be removed")
				return childEnd{}, err
			}
			if ok {
				return stop(endRequest, "restart requested: "+reason), nil
			}
			poll.arm(s.clock, RestartPollInterval)

		case <-health.c():
			err := s.probe.check(ctx, instance)
			if ctx.Err() != nil {
				continue // shutting down: the next iteration sees ctx.Done
			}
			switch {
			case err == nil:
				if !healthy {
					log.Info("agent is healthy")
				} else if failures > 0 {
					log.Info("agent is healthy again", "after_failures", failures)
				}
				healthy, failures = true, 0
			case !healthy && s.clock.Now().Sub(started) < s.o.HealthStartPeriod:
				log.Debug("agent not healthy yet", "err", err)
			default:
				failures++
				log.Warn("health check failed", "failures", failures, "limit", s.o.HealthFailures, "err", err)
				if failures >= s.o.HealthFailures {
					return stop(endUnhealthy, fmt.Sprintf("%d consecutive failed health checks (last: %v)", failures, err)), nil
				}
			}
			health.arm(s.clock, s.o.HealthInterval)
		}
	}
}

// stop sends SIGTERM, waits ShutdownGrace for the exit, then SIGKILLs the
// process group and waits for the exit. It returns cmd.Wait's error.
func (s *supervisor) stop(p *os.Process, exited <-chan error, log *slog.Logger) (waitErr error, killed bool) {
	if err := terminate(p); err != nil && !errors.Is(err, os.ErrProcessDone) {
		log.Warn("could not send SIGTERM to the agent", "err", err)
	}
	grace := s.clock.NewTimer(s.o.ShutdownGrace)
	defer grace.Stop()
	select {
	case err := <-exited:
		return err, false
	case <-grace.C():
		log.Warn("agent did not stop within the grace period; killing it", "grace", s.o.ShutdownGrace)
		if err := killGroup(p.Pid); err != nil {
			log.Error("could not kill the agent's process group", "err", err)
		}
		return <-exited, true
	}
}

// takeRestartRequest reports whether the restart file exists and, if so,
// removes it and returns its first line as the reason.
func (s *supervisor) takeRestartRequest() (bool, string, error) {
	path := s.o.RestartFile
	if _, err := os.Stat(path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not check the restart file", "file", path, "err", err)
		}
		return false, "", nil
	}
	reason := readReason(path)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, "", fmt.Errorf("remove restart file (restarting would repeat forever): %w", err)
	}
	return true, reason, nil
}

// readReason returns the first line of the restart file, cleaned and capped
// for logging, or "unspecified".
func readReason(path string) string {
	const maxReason = 200
	f, err := os.Open(path)
	if err != nil {
		return "unspecified"
	}
	defer f.Close()
	buf := make([]byte, 4*maxReason)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	line = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.TrimSpace(line))
	if r := []rune(line); len(r) > maxReason {
		line = string(r[:maxReason]) + "…"
	}
	if line == "" {
		return "unspecified"
	}
	return line
}

// timerSlot is an optional re-armable timer; its channel is nil (never
// ready) while disarmed.
type timerSlot struct{ t Timer }

func (ts *timerSlot) arm(c Clock, d time.Duration) { ts.t = c.NewTimer(d) }

func (ts *timerSlot) c() <-chan time.Time {
	if ts.t == nil {
		return nil
	}
	return ts.t.C()
}

func (ts *timerSlot) stop() {
	if ts.t != nil {
		ts.t.Stop()
	}
}

// exitStatus describes how a child ended.
type exitStatus struct {
	code    int  // exit code; -1 when killed by a signal or unknown
	sigterm bool // died of SIGTERM
	desc    string
}

func statusOf(ps *os.ProcessState, waitErr error) exitStatus {
	if ps == nil {
		return exitStatus{code: -1, desc: fmt.Sprintf("unknown status (%v)", waitErr)}
	}
	return exitStatus{code: ps.ExitCode(), sigterm: diedOfSIGTERM(ps), desc: ps.String()}
}

// clean reports a successful stop: exit 0, or death by the SIGTERM we sent.
func (e exitStatus) clean() bool { return e.code == 0 || e.sigterm }

func (e exitStatus) String() string { return e.desc }

// LogValue renders the status in logs.
func (e exitStatus) LogValue() slog.Value { return slog.StringValue(e.desc) }

// healthProbe checks the agent's health endpoint.
type healthProbe struct {
	url     string
	client  *http.Client
	timeout time.Duration
	// instance is the child the kept-alive connection was made to.
	instance string
}

// newInstanceID returns 16 random bytes in hex.
func newInstanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// check probes the health URL once. With a non-empty instance the answer
// must be JSON whose "instance" is that id.
func (p *healthProbe) check(ctx context.Context, instance string) error {
	if instance != p.instance {
		// A new child: nothing of the previous one's connection is used.
		p.client.CloseIdleConnections()
		p.instance = instance
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return fmt.Errorf("build health request: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", p.url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("probe %s: status %s", p.url, resp.Status)
	}
	if instance == "" {
		return nil
	}
	var answer struct {
		Instance string `json:"instance"`
	}
	_ = json.Unmarshal(body, &answer)
	if answer.Instance != instance {
		return fmt.Errorf("probe %s: answered by another process, not this agent (instance %q, want %q): something else is listening on that address",
			p.url, answer.Instance, instance)
	}
	return nil
}
