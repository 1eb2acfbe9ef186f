// Package logging builds Reverie's structured logger: a console handler and an
// optional size-rotated log file (gopkg.in/natefinch/lumberjack.v2), fanned out
// with slog.MultiHandler and wrapped in a handler that redacts secrets.
//
// Every record passes through the redacting handler before it reaches either
// sink, so a credential logged by mistake under a key such as "api_key",
// "Authorization" or "accessToken" is written as "[redacted]" everywhere,
// and a registered secret value (Options.Secrets) found anywhere in a record
// — a provider error echoing the API key, say — is written as "[REDACTED]".
//
// The returned *slog.Logger is safe for concurrent use, as are its handlers.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/reverie-ai/reverie/internal/redact"
)

// Log formats accepted by Options.Format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// LumberjackMillGoroutine is the top function of the goroutine lumberjack
// starts the first time a log file is opened to prune old backups. Lumberjack
// never stops it (Close does not end it), so tests that open a log file and
// check for leaked goroutines with go.uber.org/goleak should pass
// goleak.IgnoreTopFunction(logging.LumberjackMillGoroutine). It is idle while
// nothing rotates and costs one parked goroutine per process.
const LumberjackMillGoroutine = "gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"

// Options configures New.
type Options struct {
	// Level is the minimum level logged to every sink: debug, info, warn
	// (or warning), error, or slog's offset form such as "info+2".
	// Empty means info.
	Level string
	// Format is "text" (default when empty) or "json". It applies to the
	// console and to the file.
	Format string
	// File is the path of the rotating log file. Empty means no file. Its
	// directory is created (mode 0700: logs hold conversation content) when
	// missing; the file itself is created with mode 0600.
	File string
	// MaxSizeMB is the size in megabytes at which the file is rotated
	// (0 = lumberjack's default of 100 MB; the minimum is 1 MB).
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept (0 = all of them).
	MaxBackups int
	// Console receives the console stream. Nil means os.Stderr; pass
	// io.Discard to log only to the file.
	Console io.Writer
	// Secrets are the secret values replaced by redact.Marker wherever
	// they appear in a record (message, strings, errors, any value), on
	// every sink. Nil means none; values added later apply from then on.
	Secrets *redact.Secrets
}

// New builds the logger described by opts. The returned io.Closer closes the
// log file (it is a no-op when there is none) and must be called once logging
// is finished; records logged after Close reopen the file.
//
// A bad level, format or size is reported as an error naming the value, and
// the log file is opened eagerly so that an unwritable path fails here rather
// than silently at the first record.
func New(opts Options) (*slog.Logger, io.Closer, error) {
	level, err := ParseLevel(opts.Level)
	if err != nil {
		return nil, nil, err
	}
	newHandler, err := handlerFactory(opts.Format)
	if err != nil {
		return nil, nil, err
	}
	if opts.MaxSizeMB < 0 {
		return nil, nil, fmt.Errorf("invalid log max size %d MB: must be 0 (default) or positive", opts.MaxSizeMB)
	}
	if opts.MaxBackups < 0 {
		return nil, nil, fmt.Errorf("invalid log max backups %d: must be 0 (keep all) or positive", opts.MaxBackups)
	}

	console := opts.Console
	if console == nil {
		console = os.Stderr
	}
	handlerOpts := &slog.HandlerOptions{Level: level}
	handlers := []slog.Handler{newHandler(console, handlerOpts)}

	var closer io.Closer = nopCloser{}
	if opts.File != "" {
		file, err := openRotatingFile(opts.File, opts.MaxSizeMB, opts.MaxBackups)
		if err != nil {
			return nil, nil, err
		}
		handlers = append(handlers, newHandler(file, handlerOpts))
		closer = file
	}

	var h slog.Handler = handlers[0]
	if len(handlers) > 1 {
		h = slog.NewMultiHandler(handlers...)
	}
	return slog.New(NewRedactingHandler(h, opts.Secrets)), closer, nil
}

// ParseLevel parses a level name case-insensitively: debug, info, warn,
// warning, error, or slog's offset syntax ("debug-2", "info+1"). The empty
// string is info.
func ParseLevel(s string) (slog.Level, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	switch name {
	case "":
		return slog.LevelInfo, nil
	case "warning":
		return slog.LevelWarn, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("invalid log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

type handlerFunc func(io.Writer, *slog.HandlerOptions) slog.Handler

func handlerFactory(format string) (handlerFunc, error) {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", FormatText:
		return func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }, nil
	case FormatJSON:
		return func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }, nil
	default:
		return nil, fmt.Errorf("invalid log format %q: want %q or %q", format, FormatText, FormatJSON)
	}
}

func openRotatingFile(path string, maxSizeMB, maxBackups int) (*lumberjack.Logger, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	file := &lumberjack.Logger{
		Filename:   path,
		MaxSize:    maxSizeMB,
		MaxBackups: maxBackups,
	}
	// A zero-length write makes lumberjack open (or create) the file now.
	if _, err := file.Write(nil); err != nil {
		return nil, fmt.Errorf("open log file %s: %w", path, err)
	}
	return file, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
