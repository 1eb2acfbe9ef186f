// Command reverie is the Reverie personal assistant: `reverie run` (the
// default) supervises the agent process, `reverie agent` runs it in the
// foreground, `reverie init` prepares a data dir, `reverie doctor` checks an
// installation and `reverie version` prints the build.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/supervisor"

	_ "github.com/reverie-ai/reverie/extensions/standard" // the built-in extensions
)

// Exit codes (README "Exit codes"). The supervisor restarts an agent that
// exits with ExitFailure (with backoff, giving up when it crash-loops) and
// does not restart one that exits with ExitConfig, ExitLocked, ExitDataDir
// or ExitEnvironment (supervisor.NoRestartExitCodes): the same start would
// fail again.
const (
	ExitOK      = 0
	ExitFailure = 1
	// ExitConfig: invalid configuration (config.yaml, environment, an
	// extension's section, a prompt template).
	ExitConfig = supervisor.ExitConfigError
	// ExitLocked: another agent runs on the data dir.
	ExitLocked = supervisor.ExitLocked
	// ExitDataDir: the data dir cannot be used (not writable, files that
	// cannot be read, a full disk).
	ExitDataDir = supervisor.ExitDataDir
	// ExitEnvironment: something outside Reverie prevents the start (the
	// web port is used by another program).
	ExitEnvironment = supervisor.ExitEnvironment
)

func main() {
	// Only the real process entry may replace the process with the lean
	// supervisor; tests call run in their own process without it.
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ(),
		mainHooks{lean: execLeanSupervisor()}))
}

// mainHooks are what only main passes to run: what tests running commands
// in their own process must not do.
type mainHooks struct {
	// lean starts the lean supervisor in place of this process (nil:
	// `reverie run` supervises in process).
	lean leanSupervisor
}

// globalFlags are shared by every subcommand.
type globalFlags struct {
	data   string
	config string
}

func (g *globalFlags) dataDir(env []string) (string, error) {
	return datadir.Resolve(g.data, env)
}

// existingDataDir is dataDir for the commands that work on a data dir but
// do not start Reverie: every command but run, agent, init and service
// install (which starts run). A data dir named by --data or $REVERIE_HOME
// that does not exist is refused (noDataDirError), so that a mistyped
// path creates nothing; the default one (~/.local/share/reverie, also when
// named by its own path) is created on first use by any command, as by
// the first start.
func (g *globalFlags) existingDataDir(env []string) (string, error) {
	dir, err := g.dataDir(env)
	if err != nil || !g.namedDataDir(env) {
		return dir, err
	}
	return dir, checkDataDir(dir)
}

// startingDataDir is dataDir for the commands that start Reverie (run,
// agent): a named data dir that does not exist is created, and an empty
// one filled, as by the first start, but one that exists and holds other
// files and nothing of a data dir (--data ~) is refused as checkDataDir
// refuses it, and nothing is written there.
func (g *globalFlags) startingDataDir(env []string) (string, error) {
	dir, err := g.dataDir(env)
	if err != nil || !g.namedDataDir(env) {
		return dir, err
	}
	if err := checkDataDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return dir, err
	}
	return dir, nil
}

// namedDataDir reports whether the data dir was named (--data,
// $REVERIE_HOME) rather than the default. Naming the default's own path
// (as the README's MCP client configuration does) counts as the default.
func (g *globalFlags) namedDataDir(env []string) bool {
	if g.data == "" && lookupEnv(env, "REVERIE_HOME") == "" {
		return false
	}
	dir, err := g.dataDir(env)
	def, derr := datadir.Resolve("", slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "REVERIE_HOME=")
	}))
	return err != nil || derr != nil || dir != def
}

// checkDataDir refuses a data dir that does not exist (noDataDirError), is
// not a directory, or is a directory of other files: one that is not
// empty and holds none of the files a data dir always has (its config, its
// database, MEMORIES.txt, the lock). A command pointed at the home
// directory or a project by mistake would otherwise fill it with a data
// dir's files and folders. An empty directory is used (made by hand for
// Reverie).
func checkDataDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return noDataDirError{dir: dir}
	case err != nil:
		return datadir.Unusable(fmt.Errorf("data dir: %w", err))
	case !fi.IsDir():
		return datadir.Unusable(fmt.Errorf("the data dir %s is not a directory", dir))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return datadir.Unusable(fmt.Errorf("data dir: %w", err))
	}
	if len(entries) == 0 {
		return nil
	}
	for _, e := range entries {
		switch e.Name() {
		case datadir.ConfigFile, app.DatabaseFile, datadir.MemoriesFile, datadir.LockFile:
			return nil
		}
	}
	return datadir.Unusable(fmt.Errorf("%s is not a Reverie data dir: it holds other files and no %s or %s (reverie init --data %s makes it one)",
		dir, datadir.ConfigFile, app.DatabaseFile, shellQuote(dir)))
}

// noDataDirError: a command that does not create a data dir was given one
// that does not exist. It is datadir.ErrUnusable (exit code 4) and
// fs.ErrNotExist.
type noDataDirError struct{ dir string }

func (e noDataDirError) Error() string {
	return fmt.Sprintf("there is no data dir at %s (reverie init --data %s creates one)", e.dir, shellQuote(e.dir))
}

func (e noDataDirError) Unwrap() []error { return []error{datadir.ErrUnusable, fs.ErrNotExist} }

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || r == '+' || r == ',' || r == ':' || r == '@' ||
			(r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r))))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// configPath is the configuration file: --config, else config.yaml in the
// data dir.
func (g *globalFlags) configPath(env []string) (string, error) {
	if g.config != "" {
		return g.config, nil
	}
	dir, err := g.dataDir(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config.yaml"), nil
}

// run runs the reverie command line and returns the exit code. hooks, at
// most one, come from main.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env []string, hooks ...mainHooks) int {
	var h mainHooks
	if len(hooks) > 0 {
		h = hooks[0]
	}
	root := newRoot(stdin, stdout, stderr, env, h.lean)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	// The reason as a person reads it: without the API error's words in
	// front ("conflict: …"), as through a running agent's control socket.
	if msg := api.Reason(err); msg != "" {
		fmt.Fprintln(stderr, "reverie:", msg)
	}
	return exitCode(err)
}

// exitCode chooses the exit code for a command's error: the code an
// exitCoder carries, else by what the error is (see the Exit constants).
func exitCode(err error) int {
	var ec exitCoder
	var cerr *config.Error
	switch {
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, &cerr), errors.Is(err, extension.ErrInvalidConfig), errors.Is(err, app.ErrPromptFiles),
		errors.Is(err, supervisor.ErrConfigInvalid):
		return ExitConfig
	case errors.Is(err, datadir.ErrLocked), errors.Is(err, supervisor.ErrLocked):
		return ExitLocked
	case errors.Is(err, datadir.ErrUnusable), errors.Is(err, supervisor.ErrDataDir), api.IsDiskFull(err):
		return ExitDataDir
	case errors.Is(err, extension.ErrEnvironment), errors.Is(err, supervisor.ErrEnvironment):
		return ExitEnvironment
	}
	return ExitFailure
}

// exitCoder is an error that carries its own exit code.
type exitCoder interface {
	error
	ExitCode() int
}

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

func newRoot(stdin io.Reader, stdout, stderr io.Writer, env []string, lean leanSupervisor) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "reverie",
		Short: "Reverie, a self-hosted personal AI assistant",
		Long: `Reverie is a self-hosted personal AI assistant: one binary you talk to from a web page,
a terminal, Matrix or Telegram. It remembers what matters, keeps a working list, learns
procedures as skills, runs background workers and consolidates its memory at night.

With no subcommand, reverie runs the supervisor (the same as "reverie run").`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
	}
	// reverie --version prints what reverie version prints. It is our own
	// flag rather than cobra's Version field: cobra formats that through
	// SetVersionTemplate, and linking text/template makes the linker keep
	// every exported method of every type (its method lookups by name are
	// reflective), about 18 MB of the binary; TestNoReflectiveMethodLookup
	// keeps it out.
	showVersion := root.Flags().BoolP("version", "v", false, "print the version (as reverie version does)")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.data, "data", "", "data directory (default $REVERIE_HOME, else $XDG_DATA_HOME/reverie or ~/.local/share/reverie)")
	root.PersistentFlags().StringVar(&g.config, "config", "", "configuration file (default <data>/config.yaml)")

	runCmd := newRunCmd(g, env, lean)
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if *showVersion {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return nil
		}
		return runCmd.RunE(cmd, args)
	}
	root.AddCommand(runCmd, newAgentCmd(g, env), newInitCmd(g, env), newDoctorCmd(g, env), newSendCmd(g, env), newVersionCmd())
	root.AddCommand(newChatCmd(g, env), newServiceCmd(g, env), newHealthCmd(g, env))
	root.AddCommand(newMemoryCmd(g, env, newMemoryHistoryCmd(g, env), newMemoryRestoreCmd(g, env)), newEvalCmd(g, env), newDreamCmd(g, env))
	// The extensions' own commands (reverie telegram …, reverie mcp), registered by
	// the extensions the bundle links in.
	addExtensionCommands(root, commandEnv{g: g, env: env})
	return root
}
