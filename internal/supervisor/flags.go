package supervisor

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Protocol is the version of the command line between `reverie run` and the
// lean supervisor executable (cmd/reverie-supervisor): the flags Flags.Args
// writes and ParseArgs reads, and the secrets stream of WriteSecrets. Bump
// it whenever either changes in a way an executable of another build would
// misread; a mismatch is refused with a ProtocolError.
const Protocol = 1

// Flags is everything the lean supervisor needs, as one command line: the
// serialisable part of Options plus the logging settings. Flags.Args and
// ParseArgs are the only encoder and decoder, used by both programs, so the
// two cannot drift apart.
//
// Secret values never travel on the command line (any local user can read
// /proc/PID/cmdline): SecretsFD names an inherited pipe from which the
// supervisor reads them (WriteSecrets, ReadSecrets).
type Flags struct {
	// Options carries Command, Dir, RestartFile, HealthURL, Instance and
	// the durations and counts. Env, Stdout, Stderr, Logger and Clock are
	// not encoded: the supervisor passes its own environment and output
	// on, and builds its own logger.
	Options Options
	// LogLevel and LogFormat are logging.Options' Level and Format.
	LogLevel, LogFormat string
	// SecretsFD, when above 2, is an inherited file descriptor to read the
	// secret values to redact from the logs from (ReadSecrets). 0: none.
	SecretsFD int
}

// ProtocolError is returned by ParseArgs when the command line was written
// for another Protocol: the two executables come from different builds.
type ProtocolError struct {
	// Own is this executable's Protocol, Asked the one on the command line.
	Own, Asked int
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("reverie-supervisor speaks protocol %d, reverie asked for %d: install both from the same build", e.Own, e.Asked)
}

// protocolFlag leads every command line, so that a mismatch is recognised
// before any flag that the other build may not know.
const protocolFlag = "-protocol="

// Args returns the command line of the lean supervisor for f: -protocol
// first, then one -name=value flag per field, then "--" and the agent's
// argv, verbatim (so arguments with spaces or leading dashes survive).
func (f Flags) Args() []string {
	o := f.Options
	args := []string{
		protocolFlag + strconv.Itoa(Protocol),
		"-dir=" + o.Dir,
		"-restart-file=" + o.RestartFile,
		"-health-url=" + o.HealthURL,
		"-instance=" + strconv.FormatBool(o.Instance),
		"-health-interval=" + o.HealthInterval.String(),
		"-health-failures=" + strconv.Itoa(o.HealthFailures),
		"-health-start-period=" + o.HealthStartPeriod.String(),
		"-backoff-min=" + o.BackoffMin.String(),
		"-backoff-max=" + o.BackoffMax.String(),
		"-stable-after=" + o.StableAfter.String(),
		"-crash-loop-limit=" + strconv.Itoa(o.CrashLoopLimit),
		"-crash-loop-window=" + o.CrashLoopWindow.String(),
		"-shutdown-grace=" + o.ShutdownGrace.String(),
		"-log-level=" + f.LogLevel,
		"-log-format=" + f.LogFormat,
		"-secrets-fd=" + strconv.Itoa(f.SecretsFD),
		"--",
	}
	return append(args, o.Command...)
}

// ParseArgs reads a command line written by Flags.Args. Its first argument
// must be -protocol=N with N equal to Protocol, else the error is a
// *ProtocolError. Usage and flag errors are written to usage (nil: discarded).
func ParseArgs(args []string, usage io.Writer) (Flags, error) {
	if len(args) == 0 || !strings.HasPrefix(args[0], protocolFlag) {
		return Flags{}, errors.New("the first argument must be " + protocolFlag + "N: reverie-supervisor is started by `reverie run`")
	}
	asked, err := strconv.Atoi(strings.TrimPrefix(args[0], protocolFlag))
	if err != nil {
		return Flags{}, fmt.Errorf("read %s: %w", args[0], err)
	}
	if asked != Protocol {
		return Flags{}, &ProtocolError{Own: Protocol, Asked: asked}
	}
	var f Flags
	o := &f.Options
	fs := flag.NewFlagSet("reverie-supervisor", flag.ContinueOnError)
	if usage == nil {
		usage = io.Discard
	}
	fs.SetOutput(usage)
	fs.Int("protocol", Protocol, "command-line protocol version (must be first)")
	fs.StringVar(&o.Dir, "dir", "", "the agent's working directory")
	fs.StringVar(&o.RestartFile, "restart-file", "", "file whose appearance restarts the agent")
	fs.StringVar(&o.HealthURL, "health-url", "", "the agent's /healthz URL (empty: no probes)")
	fs.BoolVar(&o.Instance, "instance", false, "give each agent an instance id and require /healthz to echo it")
	fs.DurationVar(&o.HealthInterval, "health-interval", 0, "time between health probes")
	fs.IntVar(&o.HealthFailures, "health-failures", 0, "consecutive failed probes that restart the agent")
	fs.DurationVar(&o.HealthStartPeriod, "health-start-period", 0, "time after a start when failed probes do not count")
	fs.DurationVar(&o.BackoffMin, "backoff-min", 0, "first delay before restarting a crashed agent")
	fs.DurationVar(&o.BackoffMax, "backoff-max", 0, "longest delay before restarting a crashed agent")
	fs.DurationVar(&o.StableAfter, "stable-after", 0, "uptime after which the backoff starts over")
	fs.IntVar(&o.CrashLoopLimit, "crash-loop-limit", 0, "crashes within -crash-loop-window that make the supervisor give up")
	fs.DurationVar(&o.CrashLoopWindow, "crash-loop-window", 0, "window of -crash-loop-limit")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", 0, "time the agent has to stop after SIGTERM")
	fs.StringVar(&f.LogLevel, "log-level", "", "log level (debug, info, warn, error)")
	fs.StringVar(&f.LogFormat, "log-format", "", "log format (text, json)")
	fs.IntVar(&f.SecretsFD, "secrets-fd", 0, "inherited file descriptor with the secret values to redact")
	if err := fs.Parse(args); err != nil {
		return Flags{}, fmt.Errorf("read the command line: %w", err)
	}
	o.Command = fs.Args()
	if len(o.Command) == 0 {
		return Flags{}, errors.New("read the command line: no agent command after --")
	}
	return f, nil
}

// WriteSecrets writes the secret values for ReadSecrets to w.
func WriteSecrets(w io.Writer, secrets []string) error {
	if secrets == nil {
		secrets = []string{}
	}
	if err := json.NewEncoder(w).Encode(secrets); err != nil {
		return fmt.Errorf("write the secret values: %w", err)
	}
	return nil
}

// ReadSecrets reads the secret values WriteSecrets wrote to r.
func ReadSecrets(r io.Reader) ([]string, error) {
	var secrets []string
	if err := json.NewDecoder(r).Decode(&secrets); err != nil {
		return nil, fmt.Errorf("read the secret values: %w", err)
	}
	return secrets, nil
}

// ExitCode is the exit code of a supervisor whose Run returned err: 0 for
// nil, ExitConfigError, ExitLocked, ExitDataDir or ExitEnvironment when the agent exited
// with that code, 1 otherwise (a crash loop, a killed agent, a failure to
// start it).
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrConfigInvalid):
		return ExitConfigError
	case errors.Is(err, ErrLocked):
		return ExitLocked
	case errors.Is(err, ErrDataDir):
		return ExitDataDir
	case errors.Is(err, ErrEnvironment):
		return ExitEnvironment
	}
	return 1
}
