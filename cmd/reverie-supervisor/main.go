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
// (internal/archtest keeps it that way): 1.8–1.9 MiB of private memory
// (RssAnon), held there by memoryLimit, against ~4.5 MiB in process
// (docs/architecture.md, "Footprint").
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

	"github.com/reverie-ai/reverie/internal/logging"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/supervisor"
)

func main() {
	// Less private memory for a process that does next to nothing: no
	// allocation sampling for memory profiles (nobody reads them here, and
	// the first sample allocates the profiler's tables) and one P (fewer
	// per-P caches and collector workers).
	runtime.MemProfileRate = 0
	runtime.GOMAXPROCS(1)
	limitMemory(os.Getenv("GOMEMLIMIT"))
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// memoryLimit is the lean supervisor's soft memory limit (the Go runtime's
// own accounting: heap, stacks and its metadata). The health probes
// allocate, and a heap this small otherwise waits for the collector's 4 MB
// minimum goal and keeps the freed pages: RssAnon climbed ~1 MiB a minute
// under probes every second. Under the limit the collector runs before the
// heap grows past it and the scavenger returns freed pages as it goes:
// RssAnon stayed between 1.8 and 1.95 MiB over ten minutes, with probes
// every second and every 30 s. The price is the collector's CPU, ~45 ms a
// minute at the default 30 s interval (~10-20 ms without the limit); see
// docs/architecture.md, "Footprint".
const memoryLimit = 2 << 20

// limitMemory sets memoryLimit unless the environment sets GOMEMLIMIT (the
// user's choice wins).
func limitMemory(env string) {
	if env == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
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
	err = supervisor.Run(ctx, opts)
	if err != nil {
		// The user ran `reverie run`: say it as reverie would.
		fmt.Fprintln(stderr, "reverie:", err)
	}
	return supervisor.ExitCode(err)
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
