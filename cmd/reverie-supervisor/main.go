// Command reverie-supervisor is the lean supervisor of `reverie run`.
//
// `reverie run` resolves the data dir and the configuration, then, when this
// executable sits next to it, replaces itself with it (execve: same pid, so
// signals and exit codes reach the caller exactly as before), passing what
// it resolved as flags (supervisor.Flags.Args) and secret values through an
// inherited pipe, never on the command line. This program then runs
// supervisor.Run until SIGINT or SIGTERM.
//
// Why a second executable: a Go program runs the initialisation of every
// package it links before main, and the reverie binary links the model
// SDKs, Markdown, HTML readability, Matrix and more, which leave about 4 MiB
// of private heap in every process, the supervisor included. This program
// links only the standard library and the supervisor and logging packages
// (internal/archtest keeps it that way): ~1–1.4 MiB of private memory
// (RssAnon) after start against ~4.5 MiB in process (docs/architecture.md,
// "Footprint", also on how it grows with the health probes).
//
// It is not meant to be started by hand: its command line is private to
// `reverie run` and versioned by supervisor.Protocol; a mismatch (the two
// executables from different builds) exits with supervisor.ExitConfigError
// and says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/reverie-ai/reverie/internal/logging"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/supervisor"
)

func main() {
	// Less private memory for a process that does next to nothing (RssAnon
	// under probes every second with a release every 10 s: ~1.9 against
	// ~2.2 MiB): no allocation sampling for memory profiles (nobody reads
	// them here, and the first sample allocates the profiler's tables),
	// and one P (fewer per-P caches and collector workers).
	runtime.MemProfileRate = 0
	runtime.GOMAXPROCS(1)
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run supervises the agent described by args and returns the exit code:
// supervisor.ExitCode of what supervisor.Run returned, or
// supervisor.ExitConfigError when the command line cannot be used.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	f, err := supervisor.ParseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "reverie-supervisor:", err)
		return supervisor.ExitConfigError
	}
	secrets := &redact.Secrets{}
	if f.SecretsFD > 2 {
		values, err := readSecrets(f.SecretsFD)
		if err != nil {
			fmt.Fprintln(stderr, "reverie-supervisor:", err)
			return supervisor.ExitConfigError
		}
		secrets.Add(values...)
	}
	logger, closer, err := logging.New(logging.Options{
		Level: f.LogLevel, Format: f.LogFormat, Console: stderr, Secrets: secrets,
	})
	if err != nil {
		fmt.Fprintln(stderr, "reverie-supervisor:", err)
		return supervisor.ExitConfigError
	}
	defer closer.Close()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts := f.Options
	opts.Logger = logger.With("component", "supervisor")
	// Each health probe allocates ~18 KB, and with a heap this small the
	// collector waits for its 4 MB minimum goal before the first collection
	// and keeps freed pages afterwards: RssAnon climbed by ~1 MiB a minute
	// under probes every second (~36 KB a minute at the default 30 s).
	// Collecting and returning the freed heap every releaseEvery keeps it
	// flat. (Not at start: there a forced collection made RssAnon higher,
	// 1.3–1.4 against 1.0–1.1 MiB, the collector's own structures.)
	releaseCtx, stopRelease := context.WithCancel(ctx)
	released := make(chan struct{})
	go func() {
		defer close(released)
		releaseHeap(releaseCtx, releaseEvery)
	}()
	err = supervisor.Run(ctx, opts)
	stopRelease()
	<-released
	if err != nil {
		// The user ran `reverie run`: say it as reverie would.
		fmt.Fprintln(stderr, "reverie:", err)
	}
	return supervisor.ExitCode(err)
}

// releaseEvery is how often the lean supervisor returns its freed heap to
// the operating system.
const releaseEvery = time.Minute

// releaseHeap runs a collection and returns the freed heap to the operating
// system every interval until ctx is done.
func releaseHeap(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			debug.FreeOSMemory()
		}
	}
}

// readSecrets reads the secret values from the inherited file descriptor fd
// and closes it, so that the agent does not inherit it.
func readSecrets(fd int) ([]string, error) {
	file := os.NewFile(uintptr(fd), "secrets")
	if file == nil {
		return nil, fmt.Errorf("read the secret values: file descriptor %d is not valid", fd)
	}
	defer file.Close()
	values, err := supervisor.ReadSecrets(file)
	if err != nil {
		return nil, fmt.Errorf("%w (from file descriptor %d)", err, fd)
	}
	return values, nil
}
